// audit_sink.hpp: is anyone listening for the audit lines? syslog(3) drops a
// line silently when nothing accepts it at /dev/log (a container without a
// syslog daemon): `check` must say so rather than pass.
#pragma once

#include <string>

namespace clihost {

inline constexpr const char* kSyslogSocket = "/dev/log";

struct AuditSink {
    bool ok{false};
    std::string detail;  // the report line of `check`, either way
};

// Connects to the syslog socket at `path` as syslog(3) would (datagram, then
// stream) and closes it again; sends nothing.
AuditSink probe_audit_sink(const char* path = kSyslogSocket);

}  // namespace clihost
