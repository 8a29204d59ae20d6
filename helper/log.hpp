// log.hpp: audit lines to syslog (facility authpriv) and one concise
// "clihost-jail: ..." line on stderr for every refusal or failure.
#pragma once

#include <string>
#include <string_view>

namespace clihost::log {

// Who asked for what; filled in as main learns it, printed in every audit line.
struct AuditContext {
    std::string action{"-"};
    std::string caller{"-"};
    long caller_uid{-1};
    std::string via{"-"};
    std::string tenant{"-"};
    std::string session{"-"};
};

void init();
AuditContext& context();

// decision: "allow", "deny", "fail", "exit", "warn"
void audit(std::string_view decision, std::string_view reason);
// stderr line + audit line, for refusals and failures.
void refuse(std::string_view decision, std::string_view message);

}  // namespace clihost::log
