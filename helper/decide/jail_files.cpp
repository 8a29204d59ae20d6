// jail_files.cpp: the files a jail sees whose text its plan holds (jail_files.hpp).
#include "decide/jail_files.hpp"

#include <algorithm>

#include "decide/config.hpp"
#include "decide/tenant_output.hpp"

namespace clihost {
namespace {

// Whether PATH is inside a directory the jail binds from the host.
bool bound_from_host(const HostProbe& probe, std::string_view path) {
    return std::any_of(probe.paths.begin(), probe.paths.end(), [&](const HostPath& hp) {
        return hp.kind == HostPath::Kind::directory && path.size() > hp.path.size() &&
               path.compare(0, hp.path.size(), hp.path) == 0 && path[hp.path.size()] == '/';
    });
}

}  // namespace

// [jail] setenv in login shells: /etc/profile (Debian's) sets PATH for
// every user, then runs /etc/profile.d/*.sh. The jail's /etc/profile.d is
// the host's entries (bound one by one on a small tmpfs) and
// kProfileScript, sorted last, read-only. Inserted before the home's bind.
void plan_profile(Plan& plan, const Policy& policy, const Account& t, const HostProbe& probe) {
    const std::string dir = "/etc/profile.d";
    std::string text = profile_script(policy, t);
    if (text.empty() || !probe.profile_d_listed || !bound_from_host(probe, dir)) return;
    std::vector<Mount> m{{Mount::Kind::tmpfs, "", dir, std::uint64_t{1} << 20}};
    for (const auto& e : probe.profile_d) {
        if (e.path == kProfileScript) continue;
        if (e.kind == HostPath::Kind::symlink) m.push_back({Mount::Kind::symlink, e.target, e.path});
        else m.push_back({Mount::Kind::ro_bind, e.path, e.path});
    }
    m.push_back({Mount::Kind::data, "", std::string(kProfileScript), plan.data.size()});
    m.push_back({Mount::Kind::remount_ro, "", dir});
    plan.data.push_back({std::string(kProfileScript), std::move(text)});
    plan.mounts.insert(plan.mounts.end() - 1, m.begin(), m.end());
}

std::string profile_script(const Policy& policy, const Account& tenant) {
    std::string out;
    std::string path;
    for (const auto& e : policy.setenv) {
        if (!parse_setenv(e.name + "=" + e.value)) continue;  // as build_environment
        const std::string value = shell_quote(expand_home(e.value, tenant.home));
        if (e.name == "PATH") path = value;
        else out += e.name + "=" + value + "; export " + e.name + "\n";
    }
    if (!path.empty()) {
        // The operator's PATH first, then what other profile scripts added
        // (split on ':' by parameter expansion: no IFS, no globbing).
        out += "__clihost_jail_rest=\"$PATH:\"\nPATH=" + path +
               "\n"
               "while [ -n \"$__clihost_jail_rest\" ]; do\n"
               "    __clihost_jail_dir=${__clihost_jail_rest%%:*}\n"
               "    __clihost_jail_rest=${__clihost_jail_rest#*:}\n"
               "    case \":$PATH:\" in\n"
               "        *\":$__clihost_jail_dir:\"*) ;;\n"
               "        *) if [ -n \"$__clihost_jail_dir\" ]; then PATH=\"$PATH:$__clihost_jail_dir\"; fi ;;\n"
               "    esac\n"
               "done\n"
               "export PATH\nunset __clihost_jail_rest __clihost_jail_dir\n";
    }
    if (out.empty()) return out;
    return "# Made by clihost-jail for this jail: the operator's [jail] setenv, applied\n"
           "# again after /etc/profile set PATH. ~/.profile runs after this one.\n" + out;
}

std::string jail_view_dir(uid_t uid) { return std::string(kJailViewRoot) + "/" + std::to_string(uid); }

void plan_jail_info(Plan& plan, const Account& t) {
    plan.mounts.insert(plan.mounts.end() - 1, Mount{Mount::Kind::ro_bind, jail_view_dir(t.uid), std::string(kJailInfoDir)});
}

namespace {

const std::string* setting(const JailSettings& s, std::string_view key) {
    for (const auto& [k, v] : s)
        if (k == key) return &v;
    return nullptr;
}

// "KEY": VALUE, each on its own line after two blanks; the last without a comma.
void add_member(std::string& out, std::string_view key, const std::string& json, bool last = false) {
    out.append("  ").append(json_string(key)).append(": ").append(json).append(last ? "\n" : ",\n");
}

std::string json_object(const JailSettings& s, std::string_view prefix) {
    std::string out;
    for (const auto& [k, v] : s) {
        if (k.compare(0, prefix.size(), prefix) != 0) continue;
        out.append(out.empty() ? "{" : ", ").append(json_string(k.substr(prefix.size()))).append(": ");
        out.append(json_string(v));
    }
    return out.empty() ? "{}" : out + "}";
}

}  // namespace

std::string jail_info_json(const JailSettings& started, long long started_at, const SettingsDrift& drift,
                           long long checked_at) {
    const std::string* nested = setting(started, "nested_sandbox");
    const std::string* network = setting(started, "network");
    const std::string* tmpfs_size = setting(started, "tmpfs_size");
    auto str = [](const std::string* v) { return v == nullptr ? std::string("null") : json_string(*v); };
    std::string out = "{\n";
    add_member(out, "format", "1");
    add_member(out, "started", json_string(iso_time(started_at)));
    add_member(out, "nested_sandbox", nested == nullptr ? "null" : *nested == "true" ? "true" : "false");
    add_member(out, "network", str(network));
    add_member(out, "tmpfs_size", str(tmpfs_size));
    add_member(out, "limits", json_object(started, "limits."));
    add_member(out, "settings", json_object(started, ""));
    add_member(out, "checked", json_string(iso_time(checked_at)));
    std::string changed = "null";
    if (drift.recorded) {
        changed = "[";
        for (std::size_t i = 0; i < drift.changes.size(); ++i)
            changed.append(i > 0 ? ", " : "").append(json_string(drift.changes[i].key));
        changed += "]";
    }
    add_member(out, "changed", changed);
    add_member(out, "apply", json_string("settings in \"changed\" apply once the operator stops this jail "
                                         "(clihost-jail stop): it ends everything in it, and the next "
                                         "connection starts a jail with the config file's settings"));
    std::string notes = "[]";
    if (nested != nullptr && *nested != "true") {
        // Appended, not "[" + ...: GCC 12 at -O3 warns (-Wrestrict) on the
        // operator+ of a literal and a temporary (packaging.release_build).
        notes = "[";
        notes.append(json_string("nested_sandbox is false: no user namespace can be made in this jail, so a "
                                 "tool's own sandbox fails as it starts; bubblewrap (Claude Code's "
                                 "sandbox-runtime, Codex CLI) says \"bwrap: Creating new namespace failed: "
                                 "No space left on device\" (ENOSPC). Only the operator can turn it on."));
        notes += "]";
    }
    add_member(out, "notes", notes, true);
    return out + "}\n";
}

std::string render_data_files(const Plan& plan) {
    std::string out;
    for (std::size_t i = 0; i < plan.data.size(); ++i) {
        out.append("# ").append(plan.data[i].dest).append(" in the jail (fd ");
        out.append(std::to_string(kDataFd + static_cast<int>(i))).append("):\n");
        const std::string& text = plan.data[i].text;
        for (std::size_t at = 0; at < text.size();) {
            const auto nl = std::min(text.find('\n', at), text.size());
            out.append("#   ").append(text, at, nl - at).append("\n");
            at = nl + 1;
        }
    }
    return out;
}

}  // namespace clihost
