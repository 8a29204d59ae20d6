// The plan: environment and the full bwrap argv, asserted whole per proc mode.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan.hpp"

using namespace clihost;

namespace {

Tenant alice() { return Tenant{Account{"alice", 1001, 1001, "/home/alice", "/bin/bash"}, {1001, 2000}}; }

HostProbe full_probe() {
    HostProbe p;
    p.user_namespaces = true;
    p.fresh_proc = true;
    p.paths = {{"/usr", HostPath::Kind::directory, {}},
               {"/bin", HostPath::Kind::symlink, "usr/bin"},
               {"/lib32", HostPath::Kind::absent, {}},
               {"/etc", HostPath::Kind::directory, {}}};
    return p;
}

const std::vector<std::string> kEnvArgs{
    "--setenv", "HOME", "/home/alice", "--setenv", "USER", "alice", "--setenv", "LOGNAME", "alice",
    "--setenv", "SHELL", "/bin/bash", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
    "--setenv", "TERM", "xterm-256color", "--setenv", "TTYD_SANDBOX", "true"};

std::vector<std::string> expected_argv(const std::vector<std::string>& proc_args) {
    std::vector<std::string> a{"/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc",
                               "--disable-userns", "--die-with-parent", "--seccomp", "3", "--clearenv"};
    a.insert(a.end(), kEnvArgs.begin(), kEnvArgs.end());
    a.insert(a.end(), {"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc",
                       "--dev", "/dev"});
    a.insert(a.end(), proc_args.begin(), proc_args.end());
    a.insert(a.end(), {"--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run", "--bind", "/home/alice",
                       "/home/alice", "--chdir", "/home/alice", "--", "/usr/bin/tmux", "-S",
                       "/home/alice/.cache/tmux/clihost.sock", "new-session", "-A", "-s", "main"});
    return a;
}

Result<Plan> plan_with(const Policy& policy, const HostProbe& probe, Request req = {Verb::run, "main", {}}) {
    return build_plan(policy, alice(), req, probe, {{"TERM", "xterm-256color"}}, {});
}

}  // namespace

TEST(Plan, PrivateProcArgvIsExact) {
    auto p = plan_with(Policy{}, full_probe());
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().argv, expected_argv({"--proc", "/proc"}));
    EXPECT_EQ(p.value().bwrap, "/usr/bin/bwrap");
    EXPECT_EQ(p.value().proc_source, "private");
    EXPECT_TRUE(p.value().warnings.empty());
}

TEST(Plan, PrivateProcWithADeferredTrialIsProvenInTheChild) {
    HostProbe probe = full_probe();
    probe.user_namespaces = probe.fresh_proc = false;
    probe.trial_deferred = true;
    auto p = plan_with(Policy{}, probe);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_TRUE(p.value().trial_in_child);
    EXPECT_EQ(p.value().argv, expected_argv({"--proc", "/proc"}));
    EXPECT_FALSE(plan_with(Policy{}, full_probe()).value().trial_in_child);
}

TEST(Plan, OnlyPrivateModeMayDeferTheTrial) {
    HostProbe probe = full_probe();
    probe.trial_deferred = true;
    for (ProcMode mode : {ProcMode::private_or_hidepid, ProcMode::inherit}) {
        Policy pol;
        pol.proc = mode;
        auto p = plan_with(pol, probe);
        ASSERT_FALSE(p.ok());
        EXPECT_EQ(p.error().code, Exit::internal);
    }
}

TEST(Plan, PrivateProcIsRefusedWhenTheProbeCannotMountIt) {
    auto probe = full_probe();
    probe.fresh_proc = false;
    probe.host_proc_hidepid = true;  // irrelevant for proc = private
    auto p = plan_with(Policy{}, probe);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, Exit::host);
}

TEST(Plan, PrivateOrHidepidPrefersAFreshProc) {
    Policy pol;
    pol.proc = ProcMode::private_or_hidepid;
    auto p = plan_with(pol, full_probe());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.value().argv, expected_argv({"--proc", "/proc"}));
}

TEST(Plan, PrivateOrHidepidFallsBackToHostProcOnlyWithHidepid) {
    Policy pol;
    pol.proc = ProcMode::private_or_hidepid;
    auto probe = full_probe();
    probe.fresh_proc = false;
    probe.host_proc_hidepid = true;
    auto p = plan_with(pol, probe);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.value().argv, expected_argv({"--ro-bind", "/proc", "/proc"}));
    EXPECT_EQ(p.value().proc_source, "host");
    probe.host_proc_hidepid = false;
    auto refused = plan_with(pol, probe);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Exit::host);
}

TEST(Plan, InheritBindsHostProcWithAWarning) {
    Policy pol;
    pol.proc = ProcMode::inherit;
    auto p = plan_with(pol, full_probe());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p.value().argv, expected_argv({"--ro-bind", "/proc", "/proc"}));
    ASSERT_EQ(p.value().warnings.size(), 1u);
}

TEST(Plan, NoUserNamespacesIsAHostFailure) {
    auto probe = full_probe();
    probe.user_namespaces = false;
    auto p = plan_with(Policy{}, probe);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, Exit::host);
}

TEST(Plan, CallerCommandNeedsAllowCallerCommand) {
    const Request req{Verb::run, "main", {"/bin/sh", "-c", "id"}};
    auto refused = plan_with(Policy{}, full_probe(), req);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Exit::refused);
    Policy pol;
    pol.allow_caller_command = true;
    auto p = plan_with(pol, full_probe(), req);
    ASSERT_TRUE(p.ok());
    const auto& a = p.value().argv;
    EXPECT_EQ(std::vector<std::string>(a.end() - 4, a.end()), (std::vector<std::string>{"--", "/bin/sh", "-c", "id"}));
}

TEST(Plan, KillTargetsTheExactSessionOnTheTenantSocket) {
    auto p = plan_with(Policy{}, full_probe(), Request{Verb::kill, "dev.1", {}});
    ASSERT_TRUE(p.ok());
    const auto& a = p.value().argv;
    EXPECT_EQ(std::vector<std::string>(a.end() - 6, a.end()),
              (std::vector<std::string>{"/usr/bin/tmux", "-S", "/home/alice/.cache/tmux/clihost.sock", "kill-session",
                                        "-t", "=dev_1"}));
}

TEST(Plan, SandboxFlagIsForcedOnTheBwrapCommandLineAfterClearenv) {
    auto p = plan_with(Policy{}, full_probe());
    ASSERT_TRUE(p.ok());
    const auto& a = p.value().argv;
    auto clear = std::find(a.begin(), a.end(), "--clearenv");
    auto flag = std::search(a.begin(), a.end(), kEnvArgs.end() - 3, kEnvArgs.end());
    ASSERT_NE(clear, a.end());
    ASSERT_NE(flag, a.end());
    EXPECT_LT(clear, flag);
    EXPECT_EQ(p.value().env.back(), "TTYD_SANDBOX=true");
}

TEST(Environment, CallerSecretsAndDangerousVariablesNeverPass) {
    Policy pol;
    // A policy the parser would refuse (TTYD_PASSWORD is reserved): the
    // builder drops it anyway, it does not trust its Policy to be parsed.
    pol.extra_env = {"TERM", "LANG", "TTYD_PASSWORD", "PASSWORD_SECRET_KEY"};
    const CallerEnv caller{{"TERM", "xterm"}, {"LANG", "../../tmp/evil"}, {"TTYD_PASSWORD", "hunter2"},
                           {"PASSWORD_SECRET_KEY", "s3cret"}, {"LD_PRELOAD", "/tmp/x.so"},
                           {"TTYD_SANDBOX", "false"}, {"PATH", "/tmp"}};
    auto env = build_environment(pol, alice().account, caller, {});
    EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/bash",
                                             "PATH=/usr/local/bin:/usr/bin:/bin", "TERM=xterm",
                                             "TTYD_SANDBOX=true"}));
}

TEST(Environment, DefaultPolicyDropsPasswords) {
    const CallerEnv caller{{"TTYD_PASSWORD", "hunter2"}, {"PASSWORD_SECRET", "x"}, {"LANG", "C.UTF-8"}};
    auto env = build_environment(Policy{}, alice().account, caller, {});
    for (const auto& e : env) {
        EXPECT_EQ(e.find("PASSWORD"), std::string::npos) << e;
    }
    EXPECT_NE(std::find(env.begin(), env.end(), "LANG=C.UTF-8"), env.end());
}

TEST(Environment, PamVariablesAddButNeverOverride) {
    auto env = build_environment(Policy{}, alice().account, {},
                                 {"LANG=de_DE.UTF-8", "HOME=/root", "LD_PRELOAD=/x.so", "TTYD_SANDBOX=false",
                                  "MAIL=/var/mail/alice", "bad-name=1", "NOEQUALS"});
    EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/bash",
                                             "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=de_DE.UTF-8",
                                             "MAIL=/var/mail/alice", "TTYD_SANDBOX=true"}));
}

TEST(Environment, ValueWellFormedness) {
    for (const char* ok : {"xterm-256color", "en_US.UTF-8", "truecolor", "C", "de_DE@euro"})
        EXPECT_TRUE(is_well_formed_env_value(ok)) << ok;
    for (const char* bad : {"", "a b", "../x", "/usr/share", "x\ny", "$(id)", "a;b", "a`b`"})
        EXPECT_FALSE(is_well_formed_env_value(bad)) << bad;
    EXPECT_FALSE(is_well_formed_env_value(std::string(129, 'a')));
}

TEST(Environment, EmptyShellFallsBackToBinSh) {
    Account a{"alice", 1001, 1001, "/home/alice", ""};
    auto env = build_environment(Policy{}, a, {}, {});
    EXPECT_NE(std::find(env.begin(), env.end(), "SHELL=/bin/sh"), env.end());
}

TEST(Plan, OverlongHomeCannotHoldATmuxSocket) {
    Tenant t = alice();
    t.account.home = "/home/" + std::string(100, 'a');
    auto p = build_plan(Policy{}, t, Request{Verb::run, "s", {}}, full_probe(), {}, {});
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, Exit::refused);
}
