// routes.hpp: routes around the jail. A tenant is a real Linux account with a
// home it writes from inside its jail; every host service that runs code AS
// that account, or on its behalf from files in that home, is a way out of the
// jail unless it is closed: sshd (a key in ~/.ssh/authorized_keys), the login
// shell (sshd, su, login), cron and at, logind's per-user service manager
// (pam_systemd, lingering), an MTA running ~/.forward pipes.
//
// Two parts: pure evaluation functions over gathered facts (table-tested in
// tests/unit/routes_test.cpp), and one read-only gatherer. The gatherer runs
// exactly one program, `sshd -T`, as root with a fixed argv whose only
// variable is the validated account name; it never reads a tenant's file
// (lstat of ~/.forward only, without following symlinks).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decide/config.hpp"
#include "decide/identity.hpp"
#include "base/result.hpp"

namespace clihost::routes {

struct Finding {
    std::string route;   // "sshd", "login shell", "cron", "at", "linger", "pam_systemd", "forward"
    bool open{false};
    std::string detail;  // why it is closed, or what is open
    std::string fix;     // the exact fix, when open
};

// --- sshd ---------------------------------------------------------------------
struct SshdFacts {
    bool installed{false};
    bool queried{false};              // `sshd -T` exited 0
    std::string error;                // its first output line when it did not
    std::vector<std::string> config;  // `sshd -T` lines ("denygroups x", ...)
};

// sshd's match_pattern: '*' and '?' wildcards, whole-string match.
bool sshd_pattern_match(std::string_view pattern, std::string_view name);

// sshd's allowed_user() over its effective DenyUsers/AllowUsers/DenyGroups/
// AllowGroups, counted as closed only when the user is refused from every
// address: a USER@HOST entry in DenyUsers refuses only from HOST.
Finding evaluate_sshd(const SshdFacts& facts, const std::string& user, const std::vector<std::string>& groups,
                      const std::string& tenant_group);

// --- login shell --------------------------------------------------------------
// Closed only by a refusing login shell (nologin/false): sshd, su, login and
// whatever else honours login shells run it outside the jail, and no list of
// such services is complete.
Finding evaluate_login_shell(const std::string& user, const std::string& login_shell, const Policy& policy);

// --- cron and at --------------------------------------------------------------
struct ListFile {
    bool exists{false};
    bool lists_user{false};
    std::string error;  // could not be read or trusted
};

// One name per line, as crontab(1) and at(1) read them; blank lines and
// '#' comments ignored, surrounding blanks trimmed.
bool list_file_names(std::string_view text, std::string_view user);

// crontab(1) of Debian 12's cron (3.0pl1-162): with cron.allow only listed
// users may; else users in cron.deny may not; with neither, "for standard
// Debian systems, all users may". The files govern the crontab command: a
// crontab already in the spool is counted as open whatever they say now.
Finding evaluate_cron(const std::string& user, const ListFile& allow, const ListFile& deny, bool crontab_exists);

// at.allow(5) of Debian 12's at (3.2.5): with at.allow only listed users
// may; else users in at.deny may not (an empty at.deny lets everyone); with
// neither, only root may. The package ships an at.deny of system accounts.
Finding evaluate_at(const std::string& user, const ListFile& allow, const ListFile& deny);

// --- logind -------------------------------------------------------------------
Finding evaluate_linger(const std::string& user, bool linger_file_exists);

// What the PAM stack of the helper's service loads. `read` returns a file's
// text by path, or nullopt with `error` set.
struct PamScan {
    bool loads_systemd{false};
    std::string where;  // file that loads it
    std::string error;  // a file could not be read, or includes nest too deep
};
using PamReader = std::function<std::optional<std::string>(const std::string& path, std::string& error)>;
// Follows @include and include/substack (session lines, or any line of an
// @include) up to kMaxPamDepth files deep.
inline constexpr int kMaxPamDepth = 4;
PamScan scan_pam_stack(const std::string& service, const PamReader& read);
Finding evaluate_pam(const Policy& policy, const PamScan& scan);

// --- mail ---------------------------------------------------------------------
struct ForwardFacts {
    std::string mta;       // "/usr/sbin/sendmail" when present, else empty
    bool forward_exists{false};
    std::string path;      // HOME/.forward
    std::string error;     // the home could not be looked into
};
Finding evaluate_forward(const std::string& user, const ForwardFacts& facts);

// --- all of them --------------------------------------------------------------
struct Facts {
    Account account;
    std::vector<std::string> group_names;
    SshdFacts sshd;
    ListFile cron_allow, cron_deny, at_allow, at_deny;
    bool crontab_exists{false};
    bool linger{false};
    PamScan pam;
    ForwardFacts forward;
};

std::vector<Finding> evaluate(const Policy& policy, const Facts& facts);

// The gatherer (read-only; see the top of this file).
Facts gather(const Policy& policy, const Account& account);

// The accounts `check` without --user reports on: members of the tenant
// group (listed, or by primary group).
std::vector<Account> tenant_group_members(const Policy& policy, const AccountDb& db);

// `route NAME (USER): ok (...)` or `route NAME (USER): FAIL: ... (fix: ...)`
// lines for each account; returns the names of the open routes (each
// once), empty when every route is closed.
std::vector<std::string> report(const Policy& policy, const std::vector<Account>& accounts, std::string& out);

// What `check` prints after its own lines: the [jail] shell, then the routes
// of `tenant` (or, when null, of every member of the tenant group) and a
// summary line. Returns what is open: "jail shell" when the shell is not
// usable, then each open route's name; empty when all is closed.
std::vector<std::string> report_for_check(const Policy& policy, const Account* tenant, std::string& out);

// [jail] shell is exec'd by tmux as the tenant: like bwrap, only root may
// have been able to put it there, and it must be executable.
Status check_jail_shell(const Policy& policy);

}  // namespace clihost::routes
