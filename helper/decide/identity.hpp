// identity.hpp: who is calling, who the tenant is, and whether the caller may
// act for the tenant. Decisions are pure functions over looked-up values; the
// lookups sit behind AccountDb so tests can use fakes.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decide/config.hpp"
#include "base/result.hpp"
#include "base/start_state.hpp"  // Credentials

namespace clihost {

struct Account {
    std::string name;
    uid_t uid{};
    gid_t gid{};
    std::string home;
    std::string shell;
};

class AccountDb {
public:
    virtual ~AccountDb() = default;
    virtual std::optional<Account> user_by_name(const std::string& name) const = 0;
    virtual std::optional<Account> user_by_uid(uid_t uid) const = 0;
    virtual std::optional<gid_t> group_by_name(const std::string& name) const = 0;
    // Primary group first, then supplementary groups (getgrouplist).
    virtual std::vector<gid_t> groups_of(const Account& account) const = 0;
};

enum class Invocation {
    root,        // real and effective uid 0, no SUDO_UID
    sudo,        // real and effective uid 0, SUDO_UID names the proxy user
    setuid,      // real uid is the caller, effective uid 0 from the setuid bit
    unprivileged // effective uid is not 0: can only print/check
};

std::string_view invocation_name(Invocation inv);

struct Caller {
    Invocation invocation{Invocation::unprivileged};
    uid_t uid{};             // who to blame in the audit log
    std::string name;        // their name, or "#uid"
    std::vector<gid_t> gids; // the groups that count for [callers] groups
};

// SUDO_UID is believed only when the real uid is already 0: then sudo (which
// root configured) set it, and it only changes what the audit log names.
Caller identify_caller(const Credentials& creds, const AccountDb& db);

// root and sudo always may; a setuid or unprivileged caller must be listed by
// name in [callers] users or hold a group from [callers] groups.
Status authorize_caller(const Policy& policy, const Caller& caller, const AccountDb& db);

// What lstat() said of the tenant's home, so that the decision stays pure.
struct HomeInfo {
    bool exists{false};
    bool is_symlink{false};
    bool is_dir{false};
    uid_t owner{};
    mode_t mode{};
};

using HomeInspector = std::function<HomeInfo(const std::string&)>;

struct Tenant {
    Account account;
    std::vector<gid_t> groups;  // what setgroups() will install
};

// Who a process becomes: exactly what drop_privileges installs.
struct TenantCreds {
    uid_t uid{};
    gid_t gid{};
    std::vector<gid_t> groups;
};

inline TenantCreds creds_of(const Tenant& tenant) { return {tenant.account.uid, tenant.account.gid, tenant.groups}; }

// Tenant rules (SECURITY.md, guarantee 3): never uid 0, in [tenants] group, uid in range,
// home a clean absolute path to a real directory owned by them and not
// group/world-writable, and not inside a directory the jail binds read-only.
Result<Tenant> validate_tenant(const Policy& policy, const std::string& name, const AccountDb& db,
                               const HomeInspector& inspect);

// A tenant validated earlier, checked again as the database says now
// (validate_tenant), and still the same uid: what a front checked, checked
// again where it is acted on (a front can be stopped in between).
Status tenant_unchanged(const Policy& policy, const Tenant& tenant, const AccountDb& db, const HomeInspector& inspect);

}  // namespace clihost
