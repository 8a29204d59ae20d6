// check.hpp: what every verb has once its inputs are validated (Prepared),
// and `check`, the report of what the host, the policy and the tenant allow.
#pragma once

#include <optional>

#include "host/config_file.hpp"
#include "decide/identity.hpp"
#include "proc/probe.hpp"
#include "base/start_state.hpp"

namespace clihost {

// Who runs probes and `check`'s trials when no tenant is named.
inline TenantCreds nobody_creds() { return {65534, 65534, {65534}}; }

// Everything a verb needs, validated in order; no side effects yet.
struct Prepared {
    LoadedPolicy loaded;
    Caller caller;
    std::optional<Tenant> tenant;
    HostProbe probe;
    const Policy& policy() const { return loaded.policy; }
    TenantCreds probe_creds() const { return tenant ? creds_of(*tenant) : nobody_creds(); }
};

// Prints the report; exit 0 only if a jail can start, every route around
// the jail is closed and audit lines reach a syslog daemon, 3 otherwise.
int do_check(const Prepared& p, const StartState& start);

}  // namespace clihost
