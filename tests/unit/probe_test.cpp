// Host probe: mountinfo parsing (pure) and the path inspection.
#include <gtest/gtest.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "child_process.hpp"
#include "proc/probe.hpp"

using namespace clihost;

TEST(Probe, HostProcWithHidepidInvisible) {
    EXPECT_TRUE(mountinfo_proc_hidepid(
        "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw,hidepid=invisible\n"));
    EXPECT_TRUE(mountinfo_proc_hidepid("22 1 0:21 / /proc rw,relatime - proc proc rw,hidepid=2\n"));
}

TEST(Probe, HostProcWithoutHidepid) {
    EXPECT_FALSE(mountinfo_proc_hidepid("22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw\n"));
    EXPECT_FALSE(mountinfo_proc_hidepid("22 1 0:21 / /proc rw,relatime - proc proc rw,hidepid=1\n"));
    EXPECT_FALSE(mountinfo_proc_hidepid("22 1 0:21 / /proc rw,relatime - proc proc rw,hidepid=noaccess\n"));
    EXPECT_FALSE(mountinfo_proc_hidepid(""));
}

TEST(Probe, TopmostProcMountDecides) {
    const char* hidden_then_plain =
        "22 1 0:21 / /proc rw - proc proc rw,hidepid=invisible\n"
        "40 22 0:40 / /proc rw - proc proc rw\n";
    EXPECT_FALSE(mountinfo_proc_hidepid(hidden_then_plain));
    const char* plain_then_hidden =
        "22 1 0:21 / /proc rw - proc proc rw\n"
        "40 22 0:40 / /proc rw - proc proc rw,hidepid=invisible\n";
    EXPECT_TRUE(mountinfo_proc_hidepid(plain_then_hidden));
}

TEST(Probe, UnreadableTopmostProcLineCountsAsNotHiding) {
    // An empty mount source prints as nothing: one field short. Found by
    // fuzz_mountinfo (an out-of-bounds read before the fix).
    EXPECT_FALSE(mountinfo_proc_hidepid(
        "22 26 0:21 / /proc rw shared:12 - proc proc rw,hidepid=invisible\n"
        "88 22 0:51 / /proc rw shared:40 - proc  rw\n"));
}

TEST(Probe, OtherMountPointsAndFsTypesDoNotCount) {
    EXPECT_FALSE(mountinfo_proc_hidepid("30 1 0:30 / /proc2 rw - proc proc rw,hidepid=invisible\n"));
    EXPECT_FALSE(mountinfo_proc_hidepid("30 1 0:30 / /proc rw - tmpfs tmpfs rw,hidepid=invisible\n"));
    EXPECT_FALSE(mountinfo_proc_hidepid("garbage\n\n - - -\n"));
}

TEST(Probe, InspectHostPathsReportsKinds) {
    auto got = inspect_host_paths({"/", "/definitely/not/here", "/proc/self"});
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].kind, HostPath::Kind::directory);
    EXPECT_EQ(got[1].kind, HostPath::Kind::absent);
    EXPECT_EQ(got[2].kind, HostPath::Kind::symlink);
    EXPECT_FALSE(got[2].target.empty());
}

// The deferred trial (the jail's own process, right before bwrap): it
// answers as the full trial does, leaves its child to finish exiting, and
// reap_trial() leaves no child behind. In a child that is the tenant
// (nobody here): the trial must not succeed only because it ran as root.
TEST(Probe, DeferredTrialAnswersAndReapTrialLeavesNoChild) {
    const auto r = clihost::testing::run_in_child([](int fd) {
        auto say = [fd](const char* s) { (void)!::write(fd, s, std::strlen(s)); };
        if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                                 ::setresuid(65534, 65534, 65534) != 0)) {
            say("cannot drop");
            return;
        }
        const auto trial = trial_namespaces_deferred();
        say(trial.user_namespaces && trial.fresh_proc ? "fresh-proc " : trial.detail.c_str());
        // The trial's child is ours until reaped (a zombie or still exiting).
        siginfo_t info{};
        const bool pending = ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
        say(pending ? "pending " : "none ");
        reap_trial();
        reap_trial();  // a second call has nothing to wait for
        const bool none_left = ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
        say(none_left ? "reaped" : "left");
    });
    ASSERT_TRUE(r.exited_zero()) << r.output;
    EXPECT_EQ(r.output, "fresh-proc pending reaped");
}
