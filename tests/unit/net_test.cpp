// net_test.cpp: the watcher's side of an isolated jail's network
// (proc/net.hpp: send_namespaces) when the jail's child is already gone.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "base/fd_pass.hpp"
#include "proc/net.hpp"
#include "socket_pair.hpp"

using namespace clihost;

namespace {

// a: the watcher's end of the network channel, b: its root parent's.
using Channel = clihost::testing::SocketPair;

// Waits until `pid` (our child, not reaped) is a zombie.
bool zombie(pid_t pid) {
    for (int i = 0; i < 2000; ++i) {
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
            return true;
        ::usleep(1000);
    }
    return false;
}

TEST(Net, AJailChildGoneBeforeItsNamespacesAreSentIsTheJailEndingEarly) {
    // bwrap failed during its setup: its sandbox child ended before the
    // watcher opened its namespaces. That is the jail ending early (bwrap's
    // status says why), not an internal error that nobody reports.
    Channel c;
    ASSERT_TRUE(c.a.valid());
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    ASSERT_TRUE(zombie(child));
    Status st = send_namespaces(c.a.get(), child, 1, -1);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().message, kJailEndedEarly);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    // Reaped: no such process at all.
    st = send_namespaces(c.a.get(), child, 1, -1);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().message, kJailEndedEarly);
    // Nothing went to the parent.
    EXPECT_EQ(receive_with_fds(c.b.get(), 16, MSG_DONTWAIT).error, EAGAIN);
}

TEST(Net, ALiveJailChildsNamespacesAreSent) {
    // The control: a live child's network and user namespaces go to the
    // parent; with no go-ahead (0 s) the network did not start.
    Channel c;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::pause();
        ::_exit(0);
    }
    const Status st = send_namespaces(c.a.get(), child, 0, -1);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().message, "the jail's network did not start");
    Received got = receive_with_fds(c.b.get(), 16, MSG_DONTWAIT);
    EXPECT_EQ(got.data, "n");
    EXPECT_EQ(got.fds.size(), 2U);
}

}  // namespace
