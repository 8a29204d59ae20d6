// capture.hpp: `check`'s dropped command's first line (bwrap --version as
// the tenant): the verb's child, reaped before the verb returns. Jails are
// started only by jail_start.hpp's start_jail.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "decide/identity.hpp"
#include "decide/plan.hpp"

namespace clihost {

// Runs argv as the tenant (or as `creds` for check without a tenant) after
// the full drop; returns the first line of its stdout ("" on failure).
std::string dropped_output(const TenantCreds& creds, const std::vector<std::string>& argv);

}  // namespace clihost
