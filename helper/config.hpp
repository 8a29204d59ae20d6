// config.hpp: the Policy value and its pure parser. Parsing only validates and
// fills the struct; nothing here touches the system (fuzzable, unit-tested).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "result.hpp"
#include "validate.hpp"  // the shared validators, for the code that included them from here

namespace clihost {

enum class ProcMode { private_only, private_or_hidepid, inherit };

std::string_view proc_mode_name(ProcMode mode);

struct Policy {
    // [callers]
    std::vector<std::string> caller_users{"clihost"};
    std::vector<std::string> caller_groups{"clihost"};
    // [tenants]
    std::string tenant_group{"clihost-tenants"};
    uid_t min_uid{1000};
    uid_t max_uid{60000};
    // [jail]
    std::string bwrap{"/usr/bin/bwrap"};
    ProcMode proc{ProcMode::private_only};
    std::vector<std::string> ro_bind{"/usr", "/bin", "/sbin", "/lib", "/lib32",
                                     "/lib64", "/etc", "/opt", "/var/lib"};
    std::vector<std::string> tmpfs{"/tmp", "/var/tmp", "/run"};
    bool allow_caller_command{false};
    std::vector<std::string> extra_env{"TERM", "LANG", "LC_ALL", "COLORTERM"};
    // [pam]
    std::string pam_service{"clihost-jail"};
    bool pam_session{true};
};

// Larger files are refused, by the reader and by the parser.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{64} * 1024;

// Parse a whole config file. Unknown sections/keys, duplicates and malformed
// lines are errors (exit 3): a typo must not silently weaken the jail.
Result<Policy> parse_config(std::string_view text);

}  // namespace clihost
