// fuzz_config.cpp: parse_config over arbitrary bytes. jail.conf is root's
// file, but a parser that crashes, loops or accepts a value the validators
// reject would turn an operator's typo into a weaker jail.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "decide/config.hpp"
#include "decide/jail_settings.hpp"

using namespace clihost;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

template <class List, class Pred>
bool all(const List& list, Pred pred) {
    for (const auto& item : list)
        if (!pred(item)) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto parsed = parse_config(text);
    if (!parsed) {
        // Every config problem is "this host cannot run a safe jail" (exit 3).
        check(parsed.error().code == Exit::host && !parsed.error().message.empty());
        return 0;
    }
    // Whatever was accepted satisfies the same validators the rest of the
    // program relies on: the plan and launch never re-check these.
    const Policy& p = parsed.value();
    check(p.min_uid >= 1 && p.min_uid <= p.max_uid && p.max_uid != static_cast<uid_t>(-1));
    check(is_clean_absolute_path(p.bwrap));
    const auto bindable = [](const std::string& path) { return is_clean_absolute_path(path) && path != "/"; };
    check(all(p.ro_bind, bindable) && all(p.tmpfs, bindable));
    check(all(p.caller_users, is_valid_account_name) && all(p.caller_groups, is_valid_account_name));
    check(is_valid_account_name(p.tenant_group) && is_valid_account_name(p.pam_service));
    check(all(p.extra_env, [](const std::string& n) { return is_valid_env_name(n) && !is_reserved_env_name(n); }));
    check(p.ro_bind.size() <= 64 && p.tmpfs.size() <= 64 && p.extra_env.size() <= 64);
    check(proc_mode_name(p.proc) != "?");
    // Never 0 (tmpfs: no limit), never past the bound the plan renders.
    check(p.tmpfs_size >= kMinTmpfsSize && p.tmpfs_size <= kMaxTmpfsSize);
    if (p.tmpfs_size != kDefaultTmpfsSize) check(text.find("tmpfs_size") != std::string_view::npos);
    // Limits: within their bounds, the parent a clean relative path, and a
    // value other than the default only where the file named the key.
    const Limits& l = p.limits;
    check(is_valid_cgroup_parent(l.cgroup_parent));
    check(l.tasks_max == 0 || (l.tasks_max >= kMinTasksMax && l.tasks_max <= kMaxTasksMax));
    check(l.cpu_weight >= 1 && l.cpu_weight <= 10000);
    for (const auto* m : {&l.memory_max, &l.memory_high})
        check(m->kind != MemoryAmount::Kind::percent || (m->value >= 1 && m->value <= 100));
    for (const auto* m : {&l.memory_max, &l.memory_high})
        check(m->kind != MemoryAmount::Kind::bytes || (m->value >= kMinMemoryLimit && m->value <= kMaxMemoryLimit));
    check(l.memory_swap_max.kind != MemoryAmount::Kind::percent);
    if (l.tasks_explicit || l.tasks_max != Limits{}.tasks_max) check(text.find("tasks_max") != std::string_view::npos);
    if (l.cpu_explicit || l.cpu_weight != Limits{}.cpu_weight) check(text.find("cpu_weight") != std::string_view::npos);
    if (l.memory_explicit) check(text.find("memory_") != std::string_view::npos);
    // Whatever was accepted resolves without overflow, at any memory size.
    for (std::uint64_t avail : {std::uint64_t{0}, std::uint64_t{1} << 30, ~std::uint64_t{0}}) {
        const auto r = resolve_limits(l, avail);
        if (r.memory_max) check(*r.memory_max >= kMinMemoryLimit);
    }
    // setenv: bounded; no identity, loader or sandbox variable; PATH keeps
    // the default's entries; values without blanks, quotes or control bytes
    // and with no variable but $HOME; each item accepted on its own again.
    check(p.setenv.size() <= kMaxSetenvItems);
    if (!p.setenv.empty()) check(text.find("setenv") != std::string_view::npos);
    for (const auto& e : p.setenv) {
        check(is_valid_env_name(e.name) && e.value.size() <= kMaxSetenvValue);
        check(e.name != "TTYD_SANDBOX" && e.name != "HOME" && e.name != "USER" && e.name != "LOGNAME" &&
              e.name != "SHELL");
        check(e.name == "PATH" || !is_reserved_env_name(e.name));
        for (char c : e.value) check(static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f);
        check(parse_setenv(e.name + "=" + e.value).ok());
        if (e.name == "PATH") check(e.value.find(kDefaultJailPath) != std::string::npos);
        const std::string expanded = expand_home(e.value, "/home/t");
        check(expanded.find('$') == std::string::npos);
        for (const auto& n : p.extra_env) check(n != e.name);
    }
    // What a supervisor records of this policy reads back as itself.
    const auto settings = jail_settings(p);
    const auto back = parse_settings(format_settings(settings));
    check(back.ok() && back.value() == settings && setting_changes(settings, back.value()).empty());
    return 0;
}
