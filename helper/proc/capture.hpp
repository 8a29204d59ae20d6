// capture.hpp: short tenant processes whose output the verb reads: client
// jails exec'd without a watcher (list, kill, check's trial jail), and a
// dropped command's first line (check). Each is the verb's child, killed and
// reaped before the verb returns.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "decide/identity.hpp"
#include "decide/plan.hpp"

namespace clihost {

// This process becomes the tenant and execs the jail (client jails: list,
// kill; check's trial jail). It dies with `expected_parent` (the caller,
// read before any fork). Never returns: a failure is logged and exits.
[[noreturn]] void exec_jail(const Plan& plan, pid_t expected_parent) noexcept;

// Runs client jails (list, kill), all at once, each with its stdout and
// stderr captured (up to `max` bytes each; more is read and dropped). Each
// gets until `deadline_ms` from now (-1: no deadline) to end; one that has
// not is SIGKILLed and reaped (timed_out). A jail that could not start has
// status -1.
struct Captured {
    int status{-1};
    bool timed_out{false};
    std::string out;
    std::string err;
};
std::vector<Captured> capture_jails(const std::vector<const Plan*>& plans, std::size_t max, int deadline_ms);
Captured capture_jail(const Plan& plan, std::size_t max, int deadline_ms = -1);

// Every query of a tenant's tmux (list, kill) ends within this: a tenant's
// hook that sleeps delays nobody past it.
inline constexpr int kTenantQueryDeadlineMs = 2000;

// Runs argv as the tenant (or as `creds` for check without a tenant) after
// the full drop; returns the first line of its stdout ("" on failure).
std::string dropped_output(const TenantCreds& creds, const std::vector<std::string>& argv);

}  // namespace clihost
