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

// Caller-controlled text made safe for a log line and a terminal: every byte
// outside 0x20-0x7e, and '"' and '\\', becomes \xNN (lowercase hex), so no
// control character, no 8-bit C1 control (0x9b is CSI, 0x85 NEL) and no
// UTF-8 sequence (U+2028 LINE SEPARATOR) reaches syslog or the caller's
// terminal raw, and the escaping itself cannot be forged. At most the first
// 512 input bytes are kept.
std::string escape(std::string_view s);

// decision: "allow", "deny", "fail", "exit", "warn", or "note" (a step
// that decides nothing: a front's handover; what came of it is the
// supervisor's line). A request's refusal or failure is one line.
void audit(std::string_view decision, std::string_view reason);
// The stderr line only, for a refusal another process has audited (the
// supervisor's, of a request a front handed over).
void say(std::string_view message);
// stderr line + audit line, for refusals and failures.
void refuse(std::string_view decision, std::string_view message);

}  // namespace clihost::log
