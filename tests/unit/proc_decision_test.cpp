// The /proc decision, owned by one function: what each mode mounts, when it
// refuses, and that the deferred trial is judged with the same words.
#include <gtest/gtest.h>

#include "decide/proc_decision.hpp"

using namespace clihost;

namespace {

HostProbe probe(bool userns, bool fresh, bool hidepid, bool deferred = false) {
    HostProbe p;
    p.user_namespaces = userns;
    p.fresh_proc = fresh;
    p.host_proc_hidepid = hidepid;
    p.trial_deferred = deferred;
    p.trial_detail = "a fresh procfs cannot be mounted";
    return p;
}

}  // namespace

TEST(ProcDecision, PrivateMountsAFreshProcOrRefuses) {
    auto d = decide_proc(ProcMode::private_only, probe(true, true, false));
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d.value().private_proc);
    EXPECT_FALSE(d.value().prove_before_exec);
    auto refused = decide_proc(ProcMode::private_only, probe(true, false, true));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Exit::host);
    EXPECT_EQ(refused.error().message,
              "cannot mount a private /proc here (a fresh procfs cannot be mounted); refusing (proc = private)");
}

TEST(ProcDecision, PrivateMayDeferTheTrialToTheJail) {
    EXPECT_FALSE(proc_needs_host_trial(ProcMode::private_only));
    auto d = decide_proc(ProcMode::private_only, probe(false, false, false, true));
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d.value().private_proc && d.value().prove_before_exec);
}

TEST(ProcDecision, OtherModesNeedTheTrialFirst) {
    for (ProcMode mode : {ProcMode::private_or_hidepid, ProcMode::inherit}) {
        EXPECT_TRUE(proc_needs_host_trial(mode));
        auto d = decide_proc(mode, probe(true, true, true, true));
        ASSERT_FALSE(d.ok());
        EXPECT_EQ(d.error().code, Exit::internal);
        EXPECT_EQ(d.error().message, "the namespace trial was deferred for a mode that needs it");
    }
}

TEST(ProcDecision, HidepidFallbackOnlyWithHidepid) {
    auto d = decide_proc(ProcMode::private_or_hidepid, probe(true, false, true));
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d.value().private_proc);
    EXPECT_EQ(d.value().source(), "host");
    auto refused = decide_proc(ProcMode::private_or_hidepid, probe(true, false, false));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().message,
              "cannot mount a private /proc (a fresh procfs cannot be mounted) and host /proc lacks hidepid=invisible; "
              "refusing");
}

TEST(ProcDecision, InheritWarns) {
    auto d = decide_proc(ProcMode::inherit, probe(true, true, false));
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(d.value().private_proc);
    EXPECT_EQ(d.value().warnings, std::vector<std::string>{"proc = inherit: the jail sees the host /proc"});
}

TEST(ProcDecision, NoUserNamespacesRefusesEveryMode) {
    for (ProcMode mode : {ProcMode::private_only, ProcMode::private_or_hidepid, ProcMode::inherit}) {
        HostProbe p = probe(false, false, true);
        p.trial_detail = "unprivileged user namespaces are not available";
        auto d = decide_proc(mode, p);
        ASSERT_FALSE(d.ok());
        EXPECT_EQ(d.error().message, "user namespaces are unavailable: unprivileged user namespaces are not available");
    }
}

TEST(ProcDecision, TheDeferredTrialIsJudgedWithTheSameWords) {
    TrialResult no_proc{true, false, false, "a fresh procfs cannot be mounted"};
    EXPECT_EQ(judge_trial(no_proc).error().message,
              decide_proc(ProcMode::private_only, probe(true, false, false)).error().message);
    TrialResult no_userns{false, false, false, "unprivileged user namespaces are not available"};
    HostProbe p = probe(false, false, false);
    p.trial_detail = no_userns.detail;
    EXPECT_EQ(judge_trial(no_userns).error().message, decide_proc(ProcMode::private_only, p).error().message);
    TrialResult limit{false, false, true, "the tenant's process limit (RLIMIT_NPROC) leaves no room"};
    EXPECT_EQ(judge_trial(limit).error().message,
              "cannot start the jail: the tenant's process limit (RLIMIT_NPROC) leaves no room");
    EXPECT_TRUE(judge_trial(TrialResult{true, true, false, ""}).ok());
}
