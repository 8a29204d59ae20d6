// log.cpp: spdlog sinks. Syslog via the libc syslog(3) socket; stderr plain.
#include "base/log.hpp"

#include <syslog.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace clihost::log {
namespace {

bool& audit_open() {
    static bool open = false;
    return open;
}

// escape() into a caller's buffer, without allocating (an audit line must
// go out also when the caller's RLIMIT_AS leaves no heap): at most 512
// input bytes, each at most 4 output bytes, NUL-terminated.
constexpr std::size_t kEscapedMax = 512 * 4 + 1;
void escape_into(std::string_view s, char (&out)[kEscapedMax]) {
    static constexpr char kHex[] = "0123456789abcdef";
    s = s.substr(0, 512);
    std::size_t n = 0;
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
            out[n++] = ch;
        } else {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = kHex[c >> 4];
            out[n++] = kHex[c & 0x0f];
        }
    }
    out[n] = '\0';
}
std::shared_ptr<spdlog::logger>& stderr_logger() {
    static std::shared_ptr<spdlog::logger> l;
    return l;
}

}  // namespace

// Caller-controlled text (names are validated, but reasons may quote input)
// must not forge extra log lines or fields, nor drive the terminal that
// shows stderr or the log: a log viewer or terminal that honours C1 controls
// or Unicode line separators would otherwise see a forged line.
std::string escape(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    s = s.substr(0, 512);
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') {
            out += ch;
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0x0f];
        }
    }
    return out;
}

AuditContext& context() {
    static AuditContext ctx;
    return ctx;
}

void init() {
    // Audit lines through syslog(3) itself, formatted on the stack (audit()).
    ::openlog("clihost-jail", LOG_PID, LOG_AUTHPRIV);
    audit_open() = true;
    auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    stderr_logger() = std::make_shared<spdlog::logger>("stderr", err);
    stderr_logger()->set_pattern("clihost-jail: %v");
}

void audit(std::string_view decision, std::string_view reason) {
    if (!audit_open()) return;
    const auto& c = context();
    // No heap: the fields escaped into stack buffers, one syslog(3) call.
    static char action[kEscapedMax], caller[kEscapedMax], via[kEscapedMax], tenant[kEscapedMax],
        session[kEscapedMax], dec[kEscapedMax], why[kEscapedMax];
    escape_into(c.action, action);
    escape_into(c.caller, caller);
    escape_into(c.via, via);
    escape_into(c.tenant, tenant);
    escape_into(c.session, session);
    escape_into(decision, dec);
    escape_into(reason, why);
    const bool bad = decision == "deny" || decision == "fail";
    ::syslog(bad ? LOG_WARNING : LOG_INFO,
             "action=%s caller=%s caller_uid=%ld via=%s tenant=%s session=%s decision=%s reason=\"%s\"", action, caller,
             c.caller_uid, via, tenant, session, dec, why);
}

void say(std::string_view message) {
    if (stderr_logger()) {
        stderr_logger()->error(escape(message));
        stderr_logger()->flush();
    }
}

void refuse(std::string_view decision, std::string_view message) {
    say(message);
    audit(decision, message);  // escaped in audit(), once (twice would turn \x9b into \x5cx9b)
}

}  // namespace clihost::log
