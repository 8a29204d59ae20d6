// check.hpp: what every verb has once its inputs are validated (Prepared),
// and `check`, the report of what the host, the policy and the tenant allow.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// check's verdict: its exit status and its last line, which says the same:
// "result: a jail can start" (0), or "result: refused: " and why (3): the
// keys of the FAIL lines ("a jail cannot start (bwrap, pam)") and the open
// routes ("a route around the jail is open (sshd)").
struct CheckVerdict {
    int exit;
    std::string line;
};
CheckVerdict check_verdict(const std::vector<std::string>& problems, const std::vector<std::string>& open_routes);

// The last line of a check refused before its report (bad tenant, config):
// "result: refused: " and the refusal's message (its exit status is the
// refusal's).
inline std::string check_refusal_line(const Error& e) { return "result: refused: " + e.message; }

// Prints the report; exit 0 only if a jail can start, every route around
// the jail is closed and audit lines reach a syslog daemon, 3 otherwise.
int do_check(const Prepared& p, const StartState& start);

}  // namespace clihost
