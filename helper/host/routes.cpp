// routes.cpp: evaluation of the routes around the jail, and their gatherer.
// Size: six routes (sshd, the login shell, cron and at, lingering, pam_systemd,
// ~/.forward) share one gatherer and one wording; each evaluation is short.
#include "host/routes.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "host/trusted_path.hpp"
#include "host/accounts.hpp"

namespace clihost::routes {
namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr const char* kSendmail = "/usr/sbin/sendmail";
constexpr const char* kLingerDir = "/var/lib/systemd/linger/";
constexpr const char* kCrontabDir = "/var/spool/cron/crontabs/";
constexpr std::size_t kMaxRead = std::size_t{1} << 20;

std::string_view trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return {};
    return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        out.push_back(text.substr(pos, nl - pos));
        pos = nl + 1;
    }
    return out;
}

Finding closed(std::string route, std::string detail) { return {std::move(route), false, std::move(detail), {}}; }
Finding open_route(std::string route, std::string detail, std::string fix) {
    return {std::move(route), true, std::move(detail), std::move(fix)};
}

// Words of a PAM line; "[...]" control fields may hold blanks.
std::vector<std::string> pam_words(std::string_view line) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        if (i >= line.size()) break;
        std::size_t j = i;
        if (line[i] == '[') {
            j = line.find(']', i);
            j = j == std::string_view::npos ? line.size() : j + 1;
        } else {
            while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
        }
        out.emplace_back(line.substr(i, j - i));
        i = j;
    }
    return out;
}

std::string pam_path(const std::string& name) { return name.front() == '/' ? name : "/etc/pam.d/" + name; }

bool is_pam_systemd(std::string_view module) {
    const auto slash = module.rfind('/');
    return (slash == std::string_view::npos ? module : module.substr(slash + 1)) == "pam_systemd.so";
}

// Only session lines matter: pam_systemd is a session module, and a
// `session include X` brings X's session lines only.
void scan_file(const std::string& path, int depth, const PamReader& read, PamScan& scan) {
    if (scan.loads_systemd || !scan.error.empty()) return;
    if (depth > kMaxPamDepth) {
        scan.error = path + ": includes nested deeper than " + std::to_string(kMaxPamDepth);
        return;
    }
    std::string error;
    const auto text = read(path, error);
    if (!text) {
        scan.error = path + ": " + error;
        return;
    }
    std::string joined;
    for (auto raw : lines_of(*text)) {
        // A trailing backslash continues the line (Linux-PAM's reader).
        if (!raw.empty() && raw.back() == '\\') {
            joined.append(raw.substr(0, raw.size() - 1)).push_back(' ');
            continue;
        }
        joined.append(raw);
        std::string line = std::move(joined);
        joined.clear();
        if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        const auto w = pam_words(line);
        if (w.empty()) continue;
        if (w[0] == "@include") {
            if (w.size() >= 2) scan_file(pam_path(w[1]), depth + 1, read, scan);
            continue;
        }
        // "-session" loads the module if present; types are case-insensitive.
        std::string type = w[0];
        if (!type.empty() && type.front() == '-') type.erase(0, 1);
        std::transform(type.begin(), type.end(), type.begin(),
                       [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
        if (type != "session" || w.size() < 3) continue;
        if (w[1] == "include" || w[1] == "substack") {
            scan_file(pam_path(w[2]), depth + 1, read, scan);
        } else if (is_pam_systemd(w[2])) {
            scan.loads_systemd = true;
            scan.where = path;
        }
        if (scan.loads_systemd || !scan.error.empty()) return;
    }
}

}  // namespace

// --- sshd ---------------------------------------------------------------------

bool sshd_pattern_match(std::string_view pattern, std::string_view name) {
    // Iterative glob with backtracking over the last '*'.
    std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
    while (n < name.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
            ++p;
            ++n;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = n;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            n = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

Finding evaluate_sshd(const SshdFacts& facts, const std::string& user, const std::vector<std::string>& groups,
                      const std::string& tenant_group) {
    const std::string fix = "install /etc/ssh/sshd_config.d/clihost-jail.conf with `DenyGroups " + tenant_group +
                            "` and reload sshd";
    if (!facts.installed) return closed("sshd", std::string("no sshd installed (") + kSshd + " absent)");
    if (!facts.queried)
        return open_route("sshd",
                          "sshd is installed but its policy for " + user + " is unknown: `sshd -T` failed (" +
                              facts.error + ")",
                          fix + "; make `sshd -T` work (host keys: ssh-keygen -A; privilege separation "
                                "directory: mkdir -p /run/sshd) so that check can read it");
    std::vector<std::string> deny_users, allow_users, deny_groups, allow_groups;
    for (const auto& l : facts.config) {
        const auto sp = l.find(' ');
        if (sp == std::string::npos) continue;
        const auto key = l.substr(0, sp);
        std::vector<std::string>* into = key == "denyusers"    ? &deny_users
                                         : key == "allowusers"  ? &allow_users
                                         : key == "denygroups"  ? &deny_groups
                                         : key == "allowgroups" ? &allow_groups
                                                                : nullptr;
        if (into == nullptr) continue;
        // sshd -T prints one entry a line; split anyway, as sshd_config does.
        std::string_view rest = std::string_view(l).substr(sp + 1);
        while (!(rest = trim(rest)).empty()) {
            const auto end = rest.find_first_of(" \t");
            into->emplace_back(rest.substr(0, end));
            rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
        }
    }
    // sshd's order: DenyUsers, AllowUsers, DenyGroups, AllowGroups.
    for (const auto& pat : deny_users) {
        const auto at = pat.find('@');
        // USER@HOST refuses only from HOST: not closed for every address.
        if (at != std::string::npos && pat.substr(at + 1) != "*") continue;
        if (sshd_pattern_match(pat.substr(0, at), user)) return closed("sshd", "refused by DenyUsers " + pat);
    }
    if (!allow_users.empty() && std::none_of(allow_users.begin(), allow_users.end(), [&](const std::string& pat) {
            return sshd_pattern_match(pat.substr(0, pat.find('@')), user);
        }))
        return closed("sshd", "not in AllowUsers");
    for (const auto& pat : deny_groups)
        for (const auto& g : groups)
            if (sshd_pattern_match(pat, g)) return closed("sshd", "refused by DenyGroups " + pat);
    if (!allow_groups.empty() &&
        std::none_of(groups.begin(), groups.end(), [&](const std::string& g) {
            return std::any_of(allow_groups.begin(), allow_groups.end(),
                               [&](const std::string& pat) { return sshd_pattern_match(pat, g); });
        }))
        return closed("sshd", "in no group of AllowGroups");
    return open_route("sshd",
                      "sshd lets " + user + " log in (its effective policy for a connection from 127.0.0.1): "
                      "a key the tenant writes to ~/.ssh/authorized_keys from its jail gives an unjailed shell",
                      fix);
}

// --- login shell --------------------------------------------------------------

Finding evaluate_login_shell(const std::string& user, const std::string& login_shell, const Policy& policy) {
    const std::string shown = login_shell.empty() ? "empty (/bin/sh)" : login_shell;
    if (is_refusing_shell(login_shell))
        return closed("login shell", login_shell + (policy.shell.empty() ? "" : "; tmux starts " + policy.shell));
    std::string fix = "usermod -s /usr/sbin/nologin " + user;
    if (policy.shell.empty()) fix = "set [jail] shell (e.g. /usr/bin/bash) in jail.conf, then " + fix;
    return open_route("login shell",
                      shown + ": sshd, su, login and any other service that honours login shells run it "
                              "outside the jail",
                      fix);
}

// --- cron and at --------------------------------------------------------------

bool list_file_names(std::string_view text, std::string_view user) {
    const auto lines = lines_of(text);
    return std::any_of(lines.begin(), lines.end(), [&](std::string_view l) {
        const auto t = trim(l);
        return !t.empty() && t.front() != '#' && t == user;
    });
}

namespace {
Finding evaluate_allow_deny(const std::string& route, const std::string& user, const ListFile& allow,
                            const ListFile& deny, const std::string& allow_path, const std::string& deny_path,
                            bool neither_allows) {
    if (!allow.error.empty() || !deny.error.empty())
        return open_route(route, "cannot tell: " + (allow.error.empty() ? deny.error : allow.error),
                          "make " + allow_path + " and " + deny_path + " root-owned and not group/world-writable");
    if (allow.exists) {
        if (!allow.lists_user) return closed(route, user + " is not in " + allow_path);
        return open_route(route, user + " is listed in " + allow_path, "remove " + user + " from " + allow_path);
    }
    if (deny.exists) {
        if (deny.lists_user) return closed(route, user + " is in " + deny_path);
        return open_route(route, user + " is not in " + deny_path, "echo " + user + " >> " + deny_path);
    }
    if (!neither_allows) return closed(route, "neither " + allow_path + " nor " + deny_path + ": only root may");
    return open_route(route, "neither " + allow_path + " nor " + deny_path + " exists: every user may",
                      "echo " + user + " >> " + deny_path);
}
}  // namespace

Finding evaluate_cron(const std::string& user, const ListFile& allow, const ListFile& deny, bool crontab_exists) {
    if (crontab_exists)
        return open_route("cron", std::string(kCrontabDir) + user + " exists: cron runs it outside the jail",
                          "crontab -r -u " + user + ", and keep " + user + " out of crontab (/etc/cron.deny)");
    return evaluate_allow_deny("cron", user, allow, deny, "/etc/cron.allow", "/etc/cron.deny", true);
}

Finding evaluate_at(const std::string& user, const ListFile& allow, const ListFile& deny) {
    return evaluate_allow_deny("at", user, allow, deny, "/etc/at.allow", "/etc/at.deny", false);
}

// --- logind -------------------------------------------------------------------

Finding evaluate_linger(const std::string& user, bool linger_file_exists) {
    const std::string path = std::string(kLingerDir) + user;
    if (!linger_file_exists) return closed("linger", "no " + path);
    return open_route("linger",
                      path + " exists: logind keeps a user@ service manager running for " + user +
                          " outside any jail, with units from ~/.config/systemd/user",
                      "loginctl disable-linger " + user + " (or rm " + path + " where logind does not run)");
}

PamScan scan_pam_stack(const std::string& service, const PamReader& read) {
    PamScan scan;
    scan_file(pam_path(service), 1, read, scan);
    return scan;
}

Finding evaluate_pam(const Policy& policy, const PamScan& scan) {
    if (!policy.pam_session) return closed("pam_systemd", "no PAM session ([pam] session = false)");
    const std::string service = "/etc/pam.d/" + policy.pam_service;
    if (!scan.error.empty())
        return open_route("pam_systemd", "cannot tell: " + scan.error, "make " + service + " readable and root-owned");
    if (!scan.loads_systemd) return closed("pam_systemd", service + " loads no pam_systemd.so");
    return open_route("pam_systemd",
                      scan.where + " loads pam_systemd.so: logind would start an unjailed user@ service manager "
                                   "for the tenant",
                      "remove the pam_systemd.so line from " + scan.where +
                          (scan.where == service ? "" : " or stop " + service + " including it"));
}

// --- mail ---------------------------------------------------------------------

Finding evaluate_forward(const std::string& user, const ForwardFacts& facts) {
    if (facts.mta.empty()) return closed("forward", std::string("no MTA (") + kSendmail + " absent)");
    if (!facts.error.empty())
        return open_route("forward", "an MTA is installed (" + facts.mta + ") and " + facts.path +
                                         " cannot be looked at: " + facts.error,
                          "make the home a real directory root can look into, or forbid .forward pipes in the MTA");
    if (facts.forward_exists)
        return open_route("forward",
                          facts.path + " exists and an MTA is installed (" + facts.mta + "): it runs the file's "
                          "| pipes as " + user + " outside the jail",
                          "rm " + facts.path + ", and forbid .forward pipes in the MTA (exim4: forbid_pipe in the "
                                               "userforward router; postfix: allow_mail_to_commands = alias)");
    return closed("forward", "no " + facts.path + " now, but an MTA is installed (" + facts.mta +
                                 "): one the tenant writes later would be honoured unless the MTA forbids "
                                 ".forward pipes (SECURITY.md)");
}

// --- all of them --------------------------------------------------------------

std::vector<Finding> evaluate(const Policy& policy, const Facts& f) {
    const auto& u = f.account.name;
    return {evaluate_sshd(f.sshd, u, f.group_names, policy.tenant_group),
            evaluate_login_shell(u, f.account.shell, policy),
            evaluate_cron(u, f.cron_allow, f.cron_deny, f.crontab_exists),
            evaluate_at(u, f.at_allow, f.at_deny),
            evaluate_linger(u, f.linger),
            evaluate_pam(policy, f.pam),
            evaluate_forward(u, f.forward)};
}

// --- the gatherer -------------------------------------------------------------
namespace {

Result<std::string> read_trusted(const std::string& path, bool& exists) {
    auto f = open_trusted(path, Trust::missing_ok);
    if (!f) return f.error();
    exists = f.value().fd.valid();
    std::string text;
    if (!exists) return text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(f.value().fd.get(), buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(Exit::host, "cannot read " + path + ": " + std::strerror(errno));
        }
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxRead) return fail(Exit::host, path + " is too large");
    }
    return text;
}

ListFile list_file(const std::string& path, const std::string& user) {
    ListFile lf;
    auto text = read_trusted(path, lf.exists);
    if (!text) lf.error = text.error().message;
    else lf.lists_user = list_file_names(text.value(), user);
    return lf;
}

bool path_exists(const char* path) {
    struct stat st {};
    return ::lstat(path, &st) == 0;
}

// `sshd -T` as root, fixed argv, empty environment, stdin /dev/null; stdout
// and stderr both captured. The user name was validated by the caller.
SshdFacts query_sshd(const std::string& user) {
    SshdFacts s;
    auto bin = open_trusted(kSshd, Trust::missing_ok);
    if (bin && !bin.value().fd.valid()) return s;  // not installed
    s.installed = true;
    if (!bin) {
        s.error = bin.error().message;
        return s;
    }
    if (::geteuid() != 0) {
        s.error = "not running as root";
        return s;
    }
    if (!is_valid_account_name(user)) {
        s.error = "invalid user name";
        return s;
    }
    const std::string spec = "user=" + user + ",host=localhost,addr=127.0.0.1";
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        s.error = std::string("pipe: ") + std::strerror(errno);
        return s;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        s.error = std::string("fork: ") + std::strerror(errno);
        ::close(fds[0]);
        ::close(fds[1]);
        return s;
    }
    if (pid == 0) {
        // Fully root (the setuid caller's real ids would otherwise linger),
        // no supplementary groups of the caller.
        const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || ::dup2(null, 0) != 0 || ::dup2(fds[1], 1) != 1 || ::dup2(fds[1], 2) != 2) ::_exit(127);
        if (::setgroups(0, nullptr) != 0 || ::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0) ::_exit(127);
        const char* argv[] = {kSshd, "-T", "-C", spec.c_str(), nullptr};
        char* no_env[] = {nullptr};
        ::execve(kSshd, const_cast<char* const*>(argv), no_env);
        ::_exit(127);
    }
    ::close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (out.size() < kMaxRead) out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    for (auto l : lines_of(out)) {
        const auto t = trim(l);
        if (t.empty()) continue;
        if (ok) s.config.emplace_back(t);
        else if (s.error.empty()) s.error = std::string(t);
    }
    s.queried = ok;
    if (!ok && s.error.empty())
        s.error = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "killed by a signal";
    return s;
}

std::vector<std::string> group_names_of(const Account& a) {
    std::vector<gid_t> gids(64);
    int n = static_cast<int>(gids.size());
    if (::getgrouplist(a.name.c_str(), a.gid, gids.data(), &n) < 0) {
        gids.resize(static_cast<std::size_t>(n));
        if (::getgrouplist(a.name.c_str(), a.gid, gids.data(), &n) < 0) n = 0;
    }
    gids.resize(static_cast<std::size_t>(std::max(n, 0)));
    std::vector<std::string> names;
    for (gid_t g : gids) {
        struct group gr {};
        struct group* res = nullptr;
        std::vector<char> buf(16384);
        if (::getgrgid_r(g, &gr, buf.data(), buf.size(), &res) == 0 && res != nullptr) names.emplace_back(gr.gr_name);
    }
    return names;
}

// lstat of HOME/.forward relative to an O_NOFOLLOW descriptor of the home:
// the file is never opened or read, whatever it is. Unknown is an error,
// not "absent".
void look_for_forward(const std::string& home, ForwardFacts& f) {
    UniqueFd dir(::open(home.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) {
        f.error = std::string("cannot open the home: ") + std::strerror(errno);
        return;
    }
    struct stat st {};
    if (::fstatat(dir.get(), ".forward", &st, AT_SYMLINK_NOFOLLOW) == 0) f.forward_exists = true;
    else if (errno != ENOENT) f.error = std::strerror(errno);
}

PamScan scan_installed_pam(const std::string& service) {
    return scan_pam_stack(service, [](const std::string& path, std::string& error) -> std::optional<std::string> {
        bool exists = false;
        auto text = read_trusted(path, exists);
        if (!text) {
            error = text.error().message;
            return std::nullopt;
        }
        if (!exists) {
            error = "missing";
            return std::nullopt;
        }
        return std::move(text).value();
    });
}

}  // namespace

Facts gather(const Policy& policy, const Account& account) {
    Facts f;
    f.account = account;
    f.group_names = group_names_of(account);
    f.sshd = query_sshd(account.name);
    f.cron_allow = list_file("/etc/cron.allow", account.name);
    f.cron_deny = list_file("/etc/cron.deny", account.name);
    f.at_allow = list_file("/etc/at.allow", account.name);
    f.at_deny = list_file("/etc/at.deny", account.name);
    f.crontab_exists = is_valid_account_name(account.name) &&
                       path_exists((std::string(kCrontabDir) + account.name).c_str());
    f.linger = is_valid_account_name(account.name) && path_exists((std::string(kLingerDir) + account.name).c_str());
    if (policy.pam_session) f.pam = scan_installed_pam(policy.pam_service);
    if (path_exists(kSendmail)) f.forward.mta = kSendmail;
    f.forward.path = account.home + "/.forward";
    look_for_forward(account.home, f.forward);
    return f;
}

std::vector<Account> tenant_group_members(const Policy& policy, const AccountDb& db) {
    std::set<std::string> names;
    gid_t gid = 0;
    {
        struct group gr {};
        struct group* res = nullptr;
        std::vector<char> buf(65536);
        if (::getgrnam_r(policy.tenant_group.c_str(), &gr, buf.data(), buf.size(), &res) != 0 || res == nullptr)
            return {};
        gid = gr.gr_gid;
        for (char** m = gr.gr_mem; m != nullptr && *m != nullptr; ++m) names.insert(*m);
    }
    ::setpwent();
    while (const struct passwd* pw = ::getpwent())
        if (pw->pw_gid == gid) names.insert(pw->pw_name);
    ::endpwent();
    std::vector<Account> out;
    for (const auto& n : names)
        if (is_valid_account_name(n))
            if (auto a = db.user_by_name(n)) out.push_back(std::move(*a));
    return out;
}

std::vector<std::string> report(const Policy& policy, const std::vector<Account>& accounts, std::string& out) {
    std::vector<std::string> open;
    for (const auto& a : accounts) {
        for (const auto& r : evaluate(policy, gather(policy, a))) {
            out += "route " + r.route + " (" + a.name + "): ";
            if (r.open) {
                out += "FAIL: " + r.detail + " (fix: " + r.fix + ")\n";
                if (std::find(open.begin(), open.end(), r.route) == open.end()) open.push_back(r.route);
            } else {
                out += "ok (" + r.detail + ")\n";
            }
        }
    }
    return open;
}

std::vector<std::string> report_for_check(const Policy& policy, const Account* tenant, std::string& out) {
    std::vector<std::string> open;
    if (policy.shell.empty()) {
        out += "jail shell: the tenant's login shell ([jail] shell is not set)\n";
    } else if (auto st = check_jail_shell(policy); !st) {
        out += "jail shell: FAIL: " + st.error().message + "\n";
        open.emplace_back("jail shell");
    } else {
        out += "jail shell: " + policy.shell + ": ok (root-owned, not writable by group/others)\n";
    }
    SystemAccountDb db;
    const auto accounts = tenant != nullptr ? std::vector<Account>{*tenant} : tenant_group_members(policy, db);
    if (accounts.empty()) out += "routes around the jail: no members of group " + policy.tenant_group + "\n";
    const auto routes = report(policy, accounts, out);
    if (!accounts.empty())
        out += std::string("routes around the jail: ") +
               (routes.empty() ? "all closed"
                               : "FAIL: open (a tenant can run code outside its jail; see the route lines)") +
               "\n";
    open.insert(open.end(), routes.begin(), routes.end());
    return open;
}

}  // namespace clihost::routes
