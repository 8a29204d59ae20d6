// privdrop.hpp: become the tenant for good, then prove it.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "decide/identity.hpp"
#include "base/result.hpp"

namespace clihost {

// Irreversibly drop to uid/gid with exactly `groups` as supplementary groups,
// clear every capability set (effective, permitted, inheritable, bounding,
// ambient), set no_new_privs, and never be dumpable with the tenant's ids;
// then verify by reading the state back.
// Any failure is fatal for the caller (it must not exec anything).
Status drop_privileges(uid_t uid, gid_t gid, const std::vector<gid_t>& groups);

// Read-back of the current state; exposed so tests can assert on it.
Status verify_dropped(uid_t uid, gid_t gid, const std::vector<gid_t>& groups);

// Logs a failure of a process that is becoming (or became) the tenant.
void report_tenant_failure(const Error& e) noexcept;


// Becoming the tenant, in this process: drop_privileges (which verifies,
// and leaves the process not dumpable: it still holds the helper's memory,
// the caller's environment, PAM's data), then the parent-death signal (the
// drop cleared it), then the
// parent must still be `expected_parent` (read before any fork: had it died
// already, getppid() would name init or a subreaper, and the signal would
// never come). Used only through run_as_tenant.
Status enter_tenant(const TenantCreds& who, pid_t expected_parent, int deathsig);

// The one way any process becomes the tenant (the session jail's watcher,
// the one-off jail's watcher, the exec'd client jails, the probe's trial,
// check's children): enter_tenant, then `body`, then _exit with what body
// returned (4 if anything threw; a refusal is logged first). Never returns
// and never unwinds: a forked child must not run its parent's destructors
// or code (a bad_alloc here once could have reached pam_close_session).
// `refused` is also told why enter_tenant failed (a jail started before its
// connection has no front's stderr yet: its watcher tells its supervisor).
template <class Body, class Refused>
[[noreturn]] void run_as_tenant(const TenantCreds& who, pid_t expected_parent, int deathsig, Body&& body,
                                Refused&& refused) noexcept {
    int code = 4;
    try {
        if (auto st = enter_tenant(who, expected_parent, deathsig); !st) {
            report_tenant_failure(st.error());
            refused(st.error());
            code = static_cast<int>(st.error().code);
        } else {
            code = body();
        }
    } catch (...) {
        code = 4;
    }
    ::_exit(code);
}

template <class Body>
[[noreturn]] void run_as_tenant(const TenantCreds& who, pid_t expected_parent, int deathsig, Body&& body) noexcept {
    run_as_tenant(who, expected_parent, deathsig, std::forward<Body>(body), [](const Error&) noexcept {});
}


}  // namespace clihost
