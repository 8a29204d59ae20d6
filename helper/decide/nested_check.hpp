// nested_check.hpp: what `check` says about [jail] nested_sandbox, and the
// inner sandbox it starts inside a real jail to prove the setting works.
// Pure: check runs the command through its ordinary jail trial.
#pragma once

#include <string>
#include <vector>

#include "decide/config.hpp"

namespace clihost {

// "allowed (...)" or "not allowed (...)": the report line's value.
std::string nested_sandbox_summary(const Policy& policy);

// The command run in the jail: the policy's bwrap, as a tenant's AI agent
// would start it, with its own user, pid, net, ipc, uts and mount namespaces,
// a fresh /proc and /dev, "/" read-only, running /bin/true.
std::vector<std::string> nested_trial_command(const Policy& policy);

}  // namespace clihost
