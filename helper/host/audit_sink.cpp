// audit_sink.cpp: the syslog socket probe of `check`.
#include "host/audit_sink.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.hpp"

namespace clihost {

AuditSink probe_audit_sink(const char* path) {
    const std::string where = std::string("no syslog socket at ") + path;
    const std::string lost = ": audit lines would be lost (refusals still print their stderr line); "
                             "run a syslog daemon (rsyslog, or journald's socket) before running jails";
    struct stat st {};
    if (::stat(path, &st) != 0) return {false, where + " (" + std::strerror(errno) + ")" + lost};
    if (!S_ISSOCK(st.st_mode)) return {false, where + " (it is not a socket)" + lost};
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (std::strlen(path) >= sizeof addr.sun_path) return {false, where + " (path too long)" + lost};
    std::memcpy(addr.sun_path, path, std::strlen(path) + 1);
    // A socket file whose daemon has died is still there: only a connection
    // shows that someone reads what we send. glibc's syslog tries datagram
    // first, then stream; so do we.
    int last_errno = 0;
    for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
        const UniqueFd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
        if (!fd.valid()) return {false, std::string("cannot create a socket to probe ") + path + ": " + std::strerror(errno)};
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0)
            return {true, std::string("ok (syslog at ") + path + ", facility authpriv)"};
        last_errno = errno;
    }
    return {false, where + " accepting connections (" + std::strerror(last_errno) + ")" + lost};
}

}  // namespace clihost
