// commands.hpp: the verbs, each a straight line of validate-then-act over
// the pieces in the other files. main only sanitises and dispatches.
#pragma once

#include <string>
#include <vector>

#include "decide/cli.hpp"
#include "priv/sanitize.hpp"
#include "verbs/check.hpp"

namespace clihost {

// The admin program's verbs (check, print: verbs/check.cpp, verbs/print.cpp),
// linked into clihost-jail-admin only, never into the setuid front.
struct AdminVerbs {
    int (*check)(const Prepared& p, const StartState& start);
    int (*print)(const Prepared& p, const CommandLine& cl, const StartState& start);
};

// The admin program, as installed (CMake CLIHOST_JAIL_ADMIN).
inline constexpr const char* kAdminPath = CLIHOST_JAIL_ADMIN_PATH;

// The setuid front: run, kill, stop, list; check and print exec the admin
// program for root (hand_to_admin) and are refused to anyone else.
// Returns the process exit status.
int dispatch(const StartState& start, const std::vector<std::string>& args);
// The admin program: check and print only, with the same preparation.
int dispatch_admin(const StartState& start, const std::vector<std::string>& args, const AdminVerbs& verbs);

}  // namespace clihost
