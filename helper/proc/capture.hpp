// capture.hpp: `check`'s short tenant processes: its trial jail, exec'd
// without a watcher, and a dropped command's first line. Each is the verb's
// child, reaped before the verb returns.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "decide/identity.hpp"
#include "decide/plan.hpp"

namespace clihost {

// This process becomes the tenant and execs the jail (check's trial jail). It dies with `expected_parent` (the caller,
// read before any fork). Never returns: a failure is logged and exits.
[[noreturn]] void exec_jail(const Plan& plan, pid_t expected_parent) noexcept;

// `check`'s jail trial (a tenant process outside the owner, ended before
// `check` returns): a one-off jail of `plan` (network none or host) exec'd
// by a child of ours, its stdio on /dev/null, waited for. Returns its exit
// status (-1: it could not start).
int trial_jail_status(const Plan& plan);

// Runs argv as the tenant (or as `creds` for check without a tenant) after
// the full drop; returns the first line of its stdout ("" on failure).
std::string dropped_output(const TenantCreds& creds, const std::vector<std::string>& argv);

}  // namespace clihost
