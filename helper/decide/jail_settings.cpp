// jail_settings.cpp: see jail_settings.hpp.
#include "decide/jail_settings.hpp"

#include <algorithm>
#include <cstdint>

namespace clihost {
namespace {

constexpr std::size_t kMaxSettings = 64;
// setenv may hold 64 values of 1 KiB; the rest is small.
constexpr std::size_t kMaxSettingsText = kMaxConfigBytes + 4096;

std::string join(const std::vector<std::string>& list) {
    std::string out;
    for (const auto& item : list) out.append(out.empty() ? "" : " ").append(item);
    return out;
}

// jail.conf's spelling of a byte count: the largest binary suffix that divides it.
std::string size_text(std::uint64_t n) {
    for (const auto& [unit, suffix] : {std::pair{std::uint64_t{1} << 30, "G"}, std::pair{std::uint64_t{1} << 20, "M"},
                                       std::pair{std::uint64_t{1} << 10, "K"}})
        if (n % unit == 0) return std::to_string(n / unit) + suffix;
    return std::to_string(n);
}

bool is_key(std::string_view k) {
    return !k.empty() && k.size() <= 32 &&
           std::all_of(k.begin(), k.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_' || c == '.'; });
}

}  // namespace

JailSettings jail_settings(const Policy& p) {
    std::vector<std::string> env;
    for (const auto& e : p.setenv) env.push_back(e.name + "=" + e.value);
    return {
        {"bwrap", p.bwrap},
        {"proc", std::string(proc_mode_name(p.proc))},
        {"ro_bind", join(p.ro_bind)},
        {"tmpfs", join(p.tmpfs)},
        {"tmpfs_size", size_text(p.tmpfs_size)},
        {"network", std::string(network_mode_name(p.network))},
        {"nested_sandbox", p.nested_sandbox ? "true" : "false"},
        {"extra_env", join(p.extra_env)},
        {"setenv", join(env)},
        {"shell", p.shell},
        {"pam.service", p.pam_service},
        {"pam.session", p.pam_session ? "true" : "false"},
        // [limits]: read when the supervisor starts, as the rest.
        {"limits.cgroup_parent", p.limits.cgroup_parent},
        {"limits.memory_max", memory_amount_text(p.limits.memory_max)},
        {"limits.memory_high", memory_amount_text(p.limits.memory_high)},
        {"limits.memory_swap_max", memory_amount_text(p.limits.memory_swap_max)},
        {"limits.tasks_max", p.limits.tasks_max == 0 ? "max" : std::to_string(p.limits.tasks_max)},
        {"limits.cpu_weight", std::to_string(p.limits.cpu_weight)},
    };
}

std::vector<SettingChange> setting_changes(const JailSettings& started, const JailSettings& now) {
    auto find = [](const JailSettings& s, const std::string& key) -> const std::string* {
        for (const auto& [k, v] : s)
            if (k == key) return &v;
        return nullptr;
    };
    std::vector<SettingChange> out;
    for (const auto& [key, value] : now) {
        const std::string* was = find(started, key);
        if (was == nullptr || *was != value) out.push_back({key, was == nullptr ? "" : *was, value});
    }
    // A key the jail started with that this version no longer has.
    for (const auto& [key, value] : started)
        if (find(now, key) == nullptr) out.push_back({key, value, ""});
    return out;
}

std::string format_settings(const JailSettings& s) {
    std::string out;
    for (const auto& [k, v] : s) out.append(k).append(" ").append(v).append("\n");
    return out;
}

Result<JailSettings> parse_settings(std::string_view text) {
    auto bad = [] { return fail(Exit::internal, "malformed settings record"); };
    if (text.size() > kMaxSettingsText || (!text.empty() && text.back() != '\n')) return bad();
    JailSettings out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto nl = text.find('\n', pos);
        const auto line = text.substr(pos, nl - pos);
        pos = nl + 1;
        const auto sp = line.find(' ');
        if (sp == std::string_view::npos || out.size() >= kMaxSettings) return bad();
        const auto key = line.substr(0, sp);
        const auto value = line.substr(sp + 1);
        if (!is_key(key)) return bad();
        // No control byte below 0x20 (a newline would end the line); a path
        // of the policy may hold any other byte (is_clean_absolute_path's rule).
        for (char c : value)
            if (static_cast<unsigned char>(c) < 0x20) return bad();
        for (const auto& [k, v] : out)
            if (k == key) return bad();
        out.emplace_back(std::string(key), std::string(value));
    }
    return out;
}

SettingsDrift settings_drift(const std::optional<JailSettings>& started, const Policy& now) {
    if (!started) return {};
    return {true, setting_changes(*started, jail_settings(now))};
}

std::string changed_field(const SettingsDrift& drift) {
    if (!drift.recorded) return "unknown";
    std::string out;
    for (const auto& c : drift.changes) out.append(out.empty() ? "" : ",").append(c.key);
    return out.empty() ? "-" : out;
}

std::string attach_notice(const SettingsDrift& drift) {
    if (!drift.recorded || drift.changes.empty()) return "";
    constexpr std::size_t kShown = 3;  // tmux cuts a message at the terminal's width
    std::string keys;
    for (std::size_t i = 0; i < drift.changes.size() && i < kShown; ++i)
        keys.append(i > 0 ? ", " : "").append(drift.changes[i].key);
    if (drift.changes.size() > kShown) keys.append(", +").append(std::to_string(drift.changes.size() - kShown)).append(" more");
    return "clihost-jail: settings changed (" + keys + "); the operator's stop applies them";
}

std::string apply_changes_hint(std::string_view tenant) {
    return "to apply the file's settings: clihost-jail stop --user " + std::string(tenant) +
           " (ends everything the tenant runs), then its next connection starts a jail with them";
}

std::string describe_changes(const std::vector<SettingChange>& changes) {
    auto shown = [](const std::string& v) { return v.empty() ? std::string("(none)") : v; };
    std::string out;
    for (const auto& c : changes)
        out.append(out.empty() ? "" : ", ")
            .append(c.key)
            .append(" (started ")
            .append(shown(c.started))
            .append(", now ")
            .append(shown(c.now))
            .append(")");
    return out;
}

}  // namespace clihost
