// fault.hpp: fault injection for tests of the fail-closed paths. Only a build
// with CLIHOST_JAIL_FAULT_INJECTION=ON reads CLIHOST_JAIL_FAULT (captured
// before the environment is cleared, and only when the real uid is 0); in
// every other build fail() is a constant false the compiler removes.
#pragma once

#include <string>
#include <string_view>

namespace clihost::fault {

#ifdef CLIHOST_JAIL_FAULT_INJECTION
void arm(std::string steps);      // comma-separated step names
bool fail(std::string_view step); // sets errno to EPERM when it fires
std::string armed();              // the steps armed, as given to arm() (passed on to the supervisor)
#else
inline void arm(const std::string&) {}
inline std::string armed() { return {}; }
constexpr bool fail(std::string_view) { return false; }
#endif

}  // namespace clihost::fault
