// commands.hpp: the four verbs, each a straight line of validate-then-act
// over the pieces in the other files. main only sanitises and dispatches.
#pragma once

#include <string>
#include <vector>

#include "priv/sanitize.hpp"

namespace clihost {

// Returns the process exit status.
int dispatch(const StartState& start, const std::vector<std::string>& args);

}  // namespace clihost
