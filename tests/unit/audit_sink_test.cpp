// probe_audit_sink: only a socket someone accepts connections on counts as
// an audit trail.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "host/audit_sink.hpp"

using namespace clihost;

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/ctj-audit-sink-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() {
        for (const char* f : {"/log", "/file", "/stale"}) ::unlink((path + f).c_str());
        ::rmdir(path.c_str());
    }
};

int bound_socket(const std::string& path, int type) {
    const int fd = ::socket(AF_UNIX, type, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
    if (type == SOCK_STREAM && ::listen(fd, 1) != 0) return -1;
    return fd;
}

}  // namespace

TEST(AuditSink, ADatagramListenerIsOk) {
    TempDir d;
    const int fd = bound_socket(d.path + "/log", SOCK_DGRAM);
    ASSERT_GE(fd, 0);
    const auto s = probe_audit_sink((d.path + "/log").c_str());
    EXPECT_TRUE(s.ok) << s.detail;
    EXPECT_EQ(s.detail, "ok (syslog at " + d.path + "/log, facility authpriv)");
    ::close(fd);
}

TEST(AuditSink, AStreamListenerIsOk) {
    TempDir d;
    const int fd = bound_socket(d.path + "/log", SOCK_STREAM);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(probe_audit_sink((d.path + "/log").c_str()).ok);
    ::close(fd);
}

TEST(AuditSink, AbsentSocketFails) {
    TempDir d;
    const auto s = probe_audit_sink((d.path + "/log").c_str());
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.detail.rfind("no syslog socket at " + d.path + "/log (No such file or directory): audit lines would be lost", 0),
              0u) << s.detail;
}

TEST(AuditSink, ARegularFileFails) {
    TempDir d;
    const int fd = ::open((d.path + "/file").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const auto s = probe_audit_sink((d.path + "/file").c_str());
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.detail.find("(it is not a socket)"), std::string::npos) << s.detail;
}

TEST(AuditSink, ASocketNobodyListensOnFails) {
    // The daemon died and left its socket file behind.
    TempDir d;
    const int fd = bound_socket(d.path + "/stale", SOCK_DGRAM);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const auto s = probe_audit_sink((d.path + "/stale").c_str());
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.detail.find("accepting connections (Connection refused)"), std::string::npos) << s.detail;
}
