// config.cpp: strict INI-style parser for jail.conf (jail.conf(5)).
#include "decide/config.hpp"

#include <algorithm>
#include <set>

namespace clihost {
namespace {

constexpr std::size_t kMaxListItems = 64;

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t\r");
    return s.substr(first, last - first + 1);
}

std::vector<std::string> split(std::string_view s, std::string_view seps) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < s.size()) {
        const auto start = s.find_first_not_of(seps, pos);
        if (start == std::string_view::npos) break;
        auto end = s.find_first_of(seps, start);
        if (end == std::string_view::npos) end = s.size();
        out.emplace_back(s.substr(start, end - start));
        pos = end;
    }
    return out;
}

Error bad(std::size_t line, const std::string& what) {
    return fail(Exit::host, "config line " + std::to_string(line) + ": " + what);
}

Result<bool> parse_bool(std::string_view v) {
    if (v == "true") return true;
    if (v == "false") return false;
    return fail(Exit::host, "expected true or false");
}

Result<uid_t> parse_uid(std::string_view v) {
    // parse_id refuses (uid_t)-1, the "no change" sentinel of set*id: never a valid bound.
    const auto id = parse_id(v);
    if (!id) return fail(Exit::host, "expected a uid number");
    return *id;
}

}  // namespace

Result<std::uint64_t> parse_tmpfs_size(std::string_view v) {
    // Never 0 ("no limit" to tmpfs), never past what bwrap's parser takes.
    const auto n = parse_byte_count(v, kMinTmpfsSize, kMaxTmpfsSize);
    if (!n) return fail(Exit::host, "tmpfs_size must be a byte count like 256M, 1G or 65536, between 64K and 1024G");
    return *n;
}

namespace {

Result<std::vector<std::string>> parse_names(std::string_view v) {
    auto names = split(v, ", \t");
    if (names.size() > kMaxListItems) return fail(Exit::host, "too many names");
    for (const auto& n : names)
        if (!is_valid_account_name(n)) return fail(Exit::host, "invalid name '" + n + "'");
    return names;
}

Result<std::vector<std::string>> parse_paths(std::string_view v) {
    auto paths = split(v, " \t");
    if (paths.size() > kMaxListItems) return fail(Exit::host, "too many paths");
    for (const auto& p : paths) {
        if (!is_clean_absolute_path(p)) return fail(Exit::host, "not a clean absolute path '" + p + "'");
        // Binding "/" would put every other tenant's home and /root inside;
        // /proc and /dev are the jail's own (--proc, --dev) and must not be
        // replaced by the host's or hidden under a tmpfs.
        if (p == "/") return fail(Exit::host, "'/' may not be bound or hidden");
        for (std::string_view own : {"/proc", "/dev"})
            if (p == own || (p.size() > own.size() && p.compare(0, own.size(), own) == 0 && p[own.size()] == '/'))
                return fail(Exit::host, "'" + p + "' belongs to the jail itself");
    }
    return paths;
}

Result<std::vector<std::string>> parse_env_names(std::string_view v) {
    auto names = split(v, " \t");
    if (names.size() > kMaxListItems) return fail(Exit::host, "too many names");
    for (const auto& n : names) {
        if (!is_valid_env_name(n)) return fail(Exit::host, "invalid variable name '" + n + "'");
        if (is_reserved_env_name(n)) return fail(Exit::host, "variable '" + n + "' may not be passed through");
    }
    return names;
}

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

constexpr std::string_view kHomeVar = "$HOME";

// Every '$' starts "$HOME" and ends the name there ("$HOMEDIR" is another
// variable, which nothing here would expand).
bool only_home_expands(std::string_view v) {
    for (std::size_t at = v.find('$'); at != std::string_view::npos; at = v.find('$', at + 1)) {
        if (v.compare(at, kHomeVar.size(), kHomeVar) != 0) return false;
        const auto after = at + kHomeVar.size();
        if (after < v.size() && is_name_char(v[after])) return false;
    }
    return true;
}

// PATH's entries: each a clean absolute path once "$HOME" is put for the
// home (checked with a stand-in home), and the default's entries kept.
bool is_jail_path(std::string_view v) {
    const std::string expanded = expand_home(v, "/home/h");
    const std::string padded = ":" + expanded + ":";
    if (padded.find(":" + std::string(kDefaultJailPath) + ":") == std::string::npos) return false;
    std::size_t start = 0;
    while (start <= expanded.size()) {
        auto end = expanded.find(':', start);
        if (end == std::string::npos) end = expanded.size();
        const auto entry = std::string_view(expanded).substr(start, end - start);
        if (!is_clean_absolute_path(entry)) return false;
        start = end + 1;
    }
    return true;
}

}  // namespace

std::string expand_home(std::string_view value, std::string_view home) {
    std::string out;
    std::size_t pos = 0;
    for (std::size_t at = value.find(kHomeVar); at != std::string_view::npos; at = value.find(kHomeVar, pos)) {
        out.append(value.substr(pos, at - pos)).append(home);
        pos = at + kHomeVar.size();
    }
    return out.append(value.substr(pos));
}

Result<std::vector<SetEnv>> parse_setenv(std::string_view v) {
    const auto items = split(v, " \t");
    if (items.size() > kMaxSetenvItems)
        return fail(Exit::host, "setenv: more than " + std::to_string(kMaxSetenvItems) + " variables");
    std::vector<SetEnv> out;
    for (const auto& item : items) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) return fail(Exit::host, "setenv: '" + item + "' is not NAME=VALUE");
        const std::string name = item.substr(0, eq);
        const std::string value = item.substr(eq + 1);
        if (!is_valid_env_name(name)) return fail(Exit::host, "setenv: invalid variable name '" + name + "'");
        // The jail's identity: what the helper sets from the tenant's
        // account, and the flag the jailed tools trust to know they are
        // sandboxed. An operator's value would lie to every tenant.
        if (name == "HOME" || name == "USER" || name == "LOGNAME" || name == "SHELL")
            return fail(Exit::host, "setenv may not set " + name + ": the helper sets it from the tenant's account");
        if (name == "TTYD_SANDBOX")
            return fail(Exit::host, "setenv may not set TTYD_SANDBOX: the helper forces it to true");
        if (name != "PATH" && is_reserved_env_name(name))
            return fail(Exit::host, "setenv may not set " + name +
                                        ": it changes how programs load code or find tmux, or is the proxy's secret");
        for (const auto& seen : out)
            if (seen.name == name) return fail(Exit::host, "setenv: " + name + " is set twice");
        if (value.size() > kMaxSetenvValue)
            return fail(Exit::host, "setenv: the value of " + name + " is longer than " +
                                        std::to_string(kMaxSetenvValue) + " bytes");
        // Blanks separate the items, so none is in a value; a quote or a
        // backslash would be taken literally where the operator meant shell
        // syntax; control bytes and non-ASCII have no place in a fixed value.
        for (char c : value)
            if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f || c == '"' ||
                c == '\'' || c == '\\' || c == '`')
                return fail(Exit::host, "setenv: the value of " + name +
                                            " has a character that is not allowed (printable ASCII only; no quotes, "
                                            "backslashes or blanks)");
        if (!only_home_expands(value))
            return fail(Exit::host, "setenv: the value of " + name + " names a variable other than $HOME");
        if (name == "PATH" && !is_jail_path(value))
            return fail(Exit::host, "setenv: PATH must be clean absolute directories separated by ':' that keep " +
                                        std::string(kDefaultJailPath) + " together (entries may come before and after)");
        out.push_back({name, value});
    }
    return out;
}

namespace {

// Applies one key; returns an error message (empty on success).
Result<Unit> apply(Policy& p, std::string_view section, std::string_view key, std::string_view v) {
    auto set_list = [](auto parsed, std::vector<std::string>& into) -> Status {
        if (!parsed) return parsed.error();
        into = std::move(parsed).value();
        return ok_status();
    };
    auto set_bool = [&](bool& into) -> Status {
        auto b = parse_bool(v);
        if (!b) return b.error();
        into = b.value();
        return ok_status();
    };
    if (section == "callers") {
        if (key == "users") return set_list(parse_names(v), p.caller_users);
        if (key == "groups") return set_list(parse_names(v), p.caller_groups);
    } else if (section == "tenants") {
        if (key == "group") {
            if (!is_valid_account_name(v)) return fail(Exit::host, "invalid group name");
            p.tenant_group = std::string(v);
            return ok_status();
        }
        if (key == "min_uid" || key == "max_uid") {
            auto u = parse_uid(v);
            if (!u) return u.error();
            (key == "min_uid" ? p.min_uid : p.max_uid) = u.value();
            return ok_status();
        }
        if (key == "refusal_delay_max") {
            auto n = parse_id(v);
            if (!n || n.value() > kMaxRefusalDelay)
                return fail(Exit::host, "refusal_delay_max must be a number of seconds from 0 to 300");
            p.refusal_delay_max = n.value();
            return ok_status();
        }
    } else if (section == "jail") {
        if (key == "bwrap") {
            if (!is_clean_absolute_path(v)) return fail(Exit::host, "bwrap must be a clean absolute path");
            p.bwrap = std::string(v);
            return ok_status();
        }
        if (key == "proc") {
            if (v == "private") p.proc = ProcMode::private_only;
            else if (v == "private-or-hidepid") p.proc = ProcMode::private_or_hidepid;
            else if (v == "inherit") p.proc = ProcMode::inherit;
            else return fail(Exit::host, "proc must be private, private-or-hidepid or inherit");
            return ok_status();
        }
        if (key == "ro_bind") return set_list(parse_paths(v), p.ro_bind);
        if (key == "tmpfs") return set_list(parse_paths(v), p.tmpfs);
        if (key == "shell") {
            if (!is_clean_absolute_path(v) || v == "/") return fail(Exit::host, "shell must be a clean absolute path");
            // tmux would start it, fail, and leave the tenant with nothing.
            if (is_refusing_shell(v)) return fail(Exit::host, "shell may not be a nologin/false shell");
            p.shell = std::string(v);
            return ok_status();
        }
        if (key == "tmpfs_size") {
            auto n = parse_tmpfs_size(v);
            if (!n) return n.error();
            p.tmpfs_size = n.value();
            return ok_status();
        }
        if (key == "allow_caller_command") return set_bool(p.allow_caller_command);
        if (key == "nested_sandbox") return set_bool(p.nested_sandbox);
        if (key == "network") {
            if (v == "isolated") p.network = NetworkMode::isolated;
            else if (v == "host") p.network = NetworkMode::host;
            else return fail(Exit::host, "network must be isolated or host");
            return ok_status();
        }
        if (key == "extra_env") return set_list(parse_env_names(v), p.extra_env);
        if (key == "setenv") {
            auto items = parse_setenv(v);
            if (!items) return items.error();
            p.setenv = std::move(items).value();
            return ok_status();
        }
    } else if (section == "limits") {
        auto known = apply_limit(p.limits, key, v);
        if (!known) return known.error();
        if (known.value()) return ok_status();
    } else if (section == "pam") {
        if (key == "service") {
            // The service name becomes a file name under /etc/pam.d.
            if (!is_valid_account_name(v)) return fail(Exit::host, "invalid PAM service name");
            p.pam_service = std::string(v);
            return ok_status();
        }
        if (key == "session") return set_bool(p.pam_session);
    }
    return fail(Exit::host, "unknown key '" + std::string(key) + "' in [" + std::string(section) + "]");
}

}  // namespace

std::string_view network_mode_name(NetworkMode mode) {
    return mode == NetworkMode::isolated ? "isolated" : "host";
}

std::string_view proc_mode_name(ProcMode mode) {
    switch (mode) {
        case ProcMode::private_only: return "private";
        case ProcMode::private_or_hidepid: return "private-or-hidepid";
        case ProcMode::inherit: return "inherit";
    }
    return "?";
}

bool is_refusing_shell(std::string_view shell) {
    const auto slash = shell.rfind('/');
    const auto base = slash == std::string_view::npos ? shell : shell.substr(slash + 1);
    return base == "nologin" || base == "false";
}

namespace {
bool is_under(std::string_view path, std::string_view dir) {
    return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/';
}
}  // namespace

Result<Policy> parse_config(std::string_view text) {
    if (text.size() > kMaxConfigBytes) return fail(Exit::host, "config file too large");
    Policy p;
    std::string section;
    std::set<std::string> seen;
    std::size_t line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        if (line.find('\0') != std::string_view::npos) return bad(line_no, "NUL byte");
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        line = trim(line);
        if (line.empty()) continue;
        if (line.front() == '[') {
            if (line.back() != ']') return bad(line_no, "malformed section header");
            section = std::string(trim(line.substr(1, line.size() - 2)));
            if (section != "callers" && section != "tenants" && section != "jail" && section != "limits" &&
                section != "pam")
                return bad(line_no, "unknown section [" + section + "]");
            if (!seen.insert("[" + section + "]").second) return bad(line_no, "duplicate section");
            continue;
        }
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) return bad(line_no, "expected key = value");
        const auto key = trim(line.substr(0, eq));
        const auto value = trim(line.substr(eq + 1));
        if (section.empty()) return bad(line_no, "key outside a section");
        if (!seen.insert(section + "." + std::string(key)).second)
            return bad(line_no, "duplicate key '" + std::string(key) + "'");
        if (auto st = apply(p, section, key, value); !st) return bad(line_no, st.error().message);
    }
    // uid 0 is never a tenant, whatever the range says.
    if (p.min_uid == 0) return fail(Exit::host, "config: min_uid must be at least 1");
    if (p.min_uid > p.max_uid) return fail(Exit::host, "config: min_uid is above max_uid");
    // A variable fixed by the operator and passed through from the caller:
    // which one wins would be a guess.
    for (const auto& e : p.setenv)
        if (std::find(p.extra_env.begin(), p.extra_env.end(), e.name) != p.extra_env.end())
            return fail(Exit::host, "config: " + e.name + " is in both extra_env and setenv (remove it from one)");
    // The shell is exec'd inside the jail: it must be in a directory the jail
    // binds from the host, and not under a tmpfs that would hide it.
    if (!p.shell.empty()) {
        const auto in = [&](const std::vector<std::string>& dirs) {
            return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return is_under(p.shell, d); });
        };
        if (!in(p.ro_bind)) return fail(Exit::host, "config: shell " + p.shell + " is not under a ro_bind directory");
        if (in(p.tmpfs)) return fail(Exit::host, "config: shell " + p.shell + " is hidden by a tmpfs");
    }
    return p;
}

}  // namespace clihost
