// identity.cpp: caller detection, caller authorisation, tenant validation.
#include "decide/identity.hpp"

#include <sys/stat.h>  // S_IWGRP, S_IWOTH: mode bits only

#include <algorithm>
#include <cerrno>

namespace clihost {
namespace {


bool path_is_under(std::string_view path, std::string_view dir) {
    return path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/';
}

}  // namespace

std::string_view invocation_name(Invocation inv) {
    switch (inv) {
        case Invocation::root: return "root";
        case Invocation::sudo: return "sudo";
        case Invocation::setuid: return "setuid";
        case Invocation::unprivileged: return "unprivileged";
    }
    return "?";
}

Caller identify_caller(const Credentials& creds, const AccountDb& db) {
    Caller c;
    if (creds.euid != 0) c.invocation = Invocation::unprivileged;
    else if (creds.ruid != 0) c.invocation = Invocation::setuid;
    else c.invocation = Invocation::root;
    c.uid = creds.ruid;
    if (c.invocation == Invocation::root && creds.sudo_uid) {
        if (auto id = parse_id(*creds.sudo_uid)) {
            c.invocation = Invocation::sudo;
            c.uid = *id;
        }
    }
    c.gids = creds.groups;
    c.gids.push_back(creds.rgid);
    auto acct = db.user_by_uid(c.uid);
    // "#" appended, not `"#" + std::to_string(...)`: GCC 12 -O3 false -Wrestrict (bug 105329).
    c.name = acct ? acct->name : std::string("#").append(std::to_string(c.uid));
    return c;
}

Status authorize_caller(const Policy& policy, const Caller& caller, const AccountDb& db) {
    if (caller.invocation == Invocation::root || caller.invocation == Invocation::sudo) return ok_status();
    // A user whose uid has no passwd entry ("#1234") can never match a name.
    if (!caller.name.empty() && caller.name.front() != '#' &&
        std::find(policy.caller_users.begin(), policy.caller_users.end(), caller.name) != policy.caller_users.end())
        return ok_status();
    for (const auto& g : policy.caller_groups) {
        auto gid = db.group_by_name(g);
        if (gid && std::find(caller.gids.begin(), caller.gids.end(), *gid) != caller.gids.end()) return ok_status();
    }
    return fail(Exit::refused, "caller " + caller.name + " is not allowed to use clihost-jail");
}

Result<Tenant> validate_tenant(const Policy& policy, const std::string& name, const AccountDb& db,
                               const HomeInspector& inspect) {
    auto refuse = [&](const std::string& why) { return fail(Exit::refused, "tenant " + name + " refused: " + why); };
    if (!is_valid_account_name(name)) return refuse("invalid name");
    auto acct = db.user_by_name(name);
    if (!acct) return refuse("no such user");
    const Account& a = *acct;
    // Root (or an alias with uid 0) would turn the jail into a root shell.
    if (a.uid == 0 || a.name == "root") return refuse("uid 0 is never a tenant");
    if (a.uid < policy.min_uid || a.uid > policy.max_uid)
        return refuse("uid " + std::to_string(a.uid) + " outside " + std::to_string(policy.min_uid) + ".." +
                      std::to_string(policy.max_uid));
    auto tenant_gid = db.group_by_name(policy.tenant_group);
    if (!tenant_gid) return refuse("tenant group " + policy.tenant_group + " does not exist");
    auto groups = db.groups_of(a);
    if (std::find(groups.begin(), groups.end(), *tenant_gid) == groups.end())
        return refuse("not a member of " + policy.tenant_group);
    // A group-0 member would get root's group rights inside the jail.
    if (a.gid == 0 || std::find(groups.begin(), groups.end(), gid_t{0}) != groups.end())
        return refuse("member of group 0");
    if (!is_clean_absolute_path(a.home) || a.home == "/") return refuse("home is not a clean absolute path");
    const HomeInfo home = inspect(a.home);
    if (!home.exists) return refuse("home " + a.home + " does not exist");
    // A symlinked home could point the read-write bind at someone else's files.
    if (home.is_symlink) return refuse("home " + a.home + " is a symlink");
    if (!home.is_dir) return refuse("home " + a.home + " is not a directory");
    if (home.owner != a.uid) return refuse("home " + a.home + " is not owned by the tenant");
    if ((home.mode & (S_IWGRP | S_IWOTH)) != 0) return refuse("home " + a.home + " is group/world-writable");
    // A home under a read-only bound dir would bring its neighbours (other
    // tenants' homes) into the jail with it.
    for (const auto& dir : policy.ro_bind)
        if (path_is_under(a.home, dir)) return refuse("home " + a.home + " lies under ro_bind " + dir);
    if (!a.shell.empty() && !is_clean_absolute_path(a.shell)) return refuse("login shell is not an absolute path");
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    return Tenant{a, groups};
}

Status tenant_unchanged(const Policy& policy, const Tenant& tenant, const AccountDb& db, const HomeInspector& inspect) {
    auto again = validate_tenant(policy, tenant.account.name, db, inspect);
    if (!again) return again.error();
    if (again.value().account.uid != tenant.account.uid)
        return fail(Exit::refused, "tenant " + tenant.account.name + " refused: its uid changed");
    return ok_status();
}

}  // namespace clihost
