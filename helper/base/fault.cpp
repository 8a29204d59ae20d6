// fault.cpp: the armed fault list of a fault-injection test build.
#include "base/fault.hpp"

#ifdef CLIHOST_JAIL_FAULT_INJECTION
#include <cerrno>

namespace clihost::fault {
namespace {
std::string& armed() {
    static std::string steps;
    return steps;
}
}  // namespace

void arm(std::string steps) { armed() = "," + std::move(steps) + ","; }

bool fail(std::string_view step) {
    if (armed().find("," + std::string(step) + ",") == std::string::npos) return false;
    errno = EPERM;
    return true;
}

}  // namespace clihost::fault
#endif
