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

// Caller-controlled text (names are validated, but reasons may quote input)
// must not forge extra log lines or fields.
std::string sanitize(std::string_view s) {
    std::string out;
    out.reserve(std::min<std::size_t>(s.size(), 512));
    for (char c : s.substr(0, 512)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '"') ? '?' : c;
    return out;
}

}  // namespace

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
                                  c.action, c.caller, c.caller_uid, c.via, c.tenant, c.session, decision,
                                  sanitize(reason));
    if (!audit_logger()) return;
    const bool bad = decision == "deny" || decision == "fail";
    audit_logger()->log(bad ? spdlog::level::warn : spdlog::level::info, line);
    audit_logger()->flush();
}

void refuse(std::string_view decision, std::string_view message) {
    const auto clean = sanitize(message);
    if (stderr_logger()) {
        stderr_logger()->error(clean);
        stderr_logger()->flush();
    }
    audit(decision, clean);
}

}  // namespace clihost::log
