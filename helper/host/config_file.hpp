// config_file.hpp: read jail.conf from a trusted path into a Policy.
#pragma once

#include <string>

#include "decide/config.hpp"
#include "base/result.hpp"

namespace clihost {

struct LoadedPolicy {
    Policy policy;
    std::string path;
    bool from_file{false};  // false: the file is absent and built-in defaults apply
    // The file's bytes, hashed (FNV-1a, 16 hex digits; "absent"): the
    // supervisor program, which reads the file again, compares it with the
    // front's, so that a change while a request waited is refused.
    std::string digest{"absent"};
};

// explicit_path: the path came from CLIHOST_JAIL_CONFIG; then it must exist.
Result<LoadedPolicy> load_policy(const std::string& path, bool explicit_path);

}  // namespace clihost
