// log.cpp: spdlog sinks. Syslog via the libc syslog(3) socket; stderr plain.
#include "log.hpp"

#include <syslog.h>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>
#include <spdlog/spdlog.h>

namespace clihost::log {
namespace {

std::shared_ptr<spdlog::logger>& audit_logger() {
    static std::shared_ptr<spdlog::logger> l;
    return l;
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
    auto sys = std::make_shared<spdlog::sinks::syslog_sink_mt>("clihost-jail", LOG_PID, LOG_AUTHPRIV, false);
    audit_logger() = std::make_shared<spdlog::logger>("audit", sys);
    audit_logger()->set_pattern("%v");
    auto err = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    stderr_logger() = std::make_shared<spdlog::logger>("stderr", err);
    stderr_logger()->set_pattern("clihost-jail: %v");
}

void audit(std::string_view decision, std::string_view reason) {
    const auto& c = context();
    const auto line = fmt::format("action={} caller={} caller_uid={} via={} tenant={} session={} decision={} reason=\"{}\"",
                                  escape(c.action), escape(c.caller), c.caller_uid, escape(c.via), escape(c.tenant),
                                  escape(c.session), escape(decision), escape(reason));
    if (!audit_logger()) return;
    const bool bad = decision == "deny" || decision == "fail";
    audit_logger()->log(bad ? spdlog::level::warn : spdlog::level::info, line);
    audit_logger()->flush();
}

void refuse(std::string_view decision, std::string_view message) {
    if (stderr_logger()) {
        stderr_logger()->error(escape(message));
        stderr_logger()->flush();
    }
    audit(decision, message);  // escaped in audit(), once (twice would turn \x9b into \x5cx9b)
}

}  // namespace clihost::log
