// print.hpp: `print`, the plan of a request shell-quoted, no side effects
// (the admin program's, never the setuid front's).
#pragma once

#include "decide/cli.hpp"
#include "verbs/check.hpp"

namespace clihost {

int do_print(const Prepared& p, const CommandLine& cl, const StartState& start);

}  // namespace clihost
