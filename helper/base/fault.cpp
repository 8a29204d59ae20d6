// fault.cpp: the armed fault list of a fault-injection test build.
#include "base/fault.hpp"

#ifdef CLIHOST_JAIL_FAULT_INJECTION
#include <cerrno>

namespace clihost::fault {
namespace {
std::string& steps() {
    static std::string armed_steps;
    return armed_steps;
}
}  // namespace

void arm(std::string list) { steps() = "," + std::move(list) + ","; }

std::string armed() {
    const std::string& s = steps();
    return s.size() > 2 ? s.substr(1, s.size() - 2) : std::string();
}

bool fail(std::string_view step) {
    if (steps().find("," + std::string(step) + ",") == std::string::npos) return false;
    errno = EPERM;
    return true;
}

}  // namespace clihost::fault
#endif
