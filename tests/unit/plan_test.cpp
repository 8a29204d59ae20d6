// The plan: environment and the full bwrap argv, asserted whole per proc mode.
#include <gtest/gtest.h>

#include <type_traits>

#include <algorithm>
#include <cstdio>

#include "base/handed.hpp"
#include "decide/jail_files.hpp"
#include "decide/plan.hpp"
#include "proc/net.hpp"

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

const std::string kSocket = "/home/alice/.cache/tmux/clihost.sock";

// The tmux client of an attach to session "main": the attach jail's
// handed command (its bwrap command is the attach stub).
const std::vector<std::string> kAttachMain{"/usr/bin/tmux", "-N", "-S", kSocket, "set-option", "-s", "exit-empty",
                                           "on", ";", "new-session", "-A", "-s", "main"};

// The attach jail (the default request; its argv names the stub and no
// variable: both go to the stub with the terminal), or another action's
// jail with its own head flags and command.
// expected_argv's command for a one-off jail: the stub, handed the command.
const std::vector<std::string> kHanded{"(handed to the stub)"};

std::vector<std::string> expected_argv(const std::vector<std::string>& proc_args,
                                       const std::vector<std::string>& head = {"--unshare-net",
                                                                               "--disable-userns", "--die-with-parent"},
                                       const std::vector<std::string>& command = kAttachMain,
                                       const std::vector<std::string>& before_home = {}) {
    // An attach's client and a one-off's command are handed to the stub:
    // bwrap runs the stub, with no environment of its own.
    const bool attach = command == kAttachMain || command == kHanded;
    std::vector<std::string> a{"/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc"};
    a.insert(a.end(), head.begin(), head.end());
    a.insert(a.end(), {"--seccomp", "3", "--clearenv"});
    // The tmux server alone preloads the OOM fork handler (plan.cpp), before
    // the environment, which ends with TTYD_SANDBOX=true.
    if (command.size() == 4 && command.back() == "-D") a.insert(a.end(), {"--setenv", "LD_PRELOAD", std::string(kOomPreload)});
    if (!attach) a.insert(a.end(), kEnvArgs.begin(), kEnvArgs.end());
    a.insert(a.end(), {"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc",
                       "--dev", "/dev", "--remount-ro", "/dev", "--size", "268435456", "--tmpfs", "/dev/shm"});
    a.insert(a.end(), proc_args.begin(), proc_args.end());
    a.insert(a.end(), {"--size", "268435456", "--tmpfs", "/tmp", "--size", "268435456", "--tmpfs", "/var/tmp",
                       "--size", "268435456", "--tmpfs", "/run"});
    a.insert(a.end(), before_home.begin(), before_home.end());
    a.insert(a.end(), {"--bind", "/home/alice", "/home/alice", "--chdir", "/home/alice", "--"});
    if (attach) a.emplace_back(kAttachStub);
    else a.insert(a.end(), command.begin(), command.end());
    return a;
}

Result<Plan> plan_with(const Policy& policy, const HostProbe& probe, Request req = {JailAction::attach, "main", {}}) {
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

// nested_sandbox = true removes exactly --disable-userns: the seccomp
// program, the pid/ipc/user namespaces and every bind stay as they are.
TEST(Plan, NestedSandboxDropsOnlyDisableUserns) {
    Policy pol;
    pol.nested_sandbox = true;
    const Request serve{JailAction::serve, "", {}};
    auto p = plan_with(pol, full_probe(), serve);
    ASSERT_TRUE(p.ok()) << p.error().message;
    auto want = plan_with(Policy{}, full_probe(), serve).value().argv;
    want.erase(std::find(want.begin(), want.end(), "--disable-userns"));
    EXPECT_EQ(p.value().argv, want);
    EXPECT_EQ(std::count(p.value().argv.begin(), p.value().argv.end(), "--disable-userns"), 0);
    // A one-off jail is where a caller's command (an agent) runs: same rule.
    pol.allow_caller_command = true;
    auto cmd = plan_with(pol, full_probe(), Request{JailAction::command, "main", {"/bin/true"}});
    ASSERT_TRUE(cmd.ok()) << cmd.error().message;
    EXPECT_EQ(std::count(cmd.value().argv.begin(), cmd.value().argv.end(), "--disable-userns"), 0);
    // Client jails run only a tmux client: never any nested namespace.
    for (JailAction a : {JailAction::attach, JailAction::kill_session, JailAction::list_sessions}) {
        auto c = plan_with(pol, full_probe(), Request{a, "main", {}});
        ASSERT_TRUE(c.ok()) << c.error().message;
        EXPECT_EQ(std::count(c.value().argv.begin(), c.value().argv.end(), "--disable-userns"), 1)
            << jail_action_name(a);
    }
}

// Over a read-only host /proc an inner bwrap cannot write its uid_map: the
// operator is told on every launch instead of finding out from a tenant.
TEST(Plan, NestedSandboxOverTheHostProcWarns) {
    Policy pol;
    pol.nested_sandbox = true;
    pol.proc = ProcMode::inherit;
    const Request serve{JailAction::serve, "", {}};
    auto p = plan_with(pol, full_probe(), serve);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().warnings,
              (std::vector<std::string>{"proc = inherit: the jail sees the host /proc",
                                        "nested_sandbox = true but /proc is the host's (read-only): inner "
                                        "sandboxes cannot start"}));
    pol.proc = ProcMode::private_only;
    EXPECT_TRUE(plan_with(pol, full_probe(), serve).value().warnings.empty());
}

TEST(Plan, EveryTmpfsAndDevShmGetTheConfiguredSize) {
    Policy pol;
    pol.tmpfs = {"/tmp", "/scratch"};
    pol.tmpfs_size = std::uint64_t{1} << 30;
    auto p = plan_with(pol, full_probe());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const auto& a = p.value().argv;
    std::vector<std::string> mounts;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i] != "--tmpfs") continue;
        mounts.push_back(a[i + 1]);
        // Each --tmpfs is directly preceded by its --size (bwrap applies
        // --size to the next --tmpfs only).
        ASSERT_GE(i, 2u);
        EXPECT_EQ(a[i - 2], "--size") << a[i + 1];
        EXPECT_EQ(a[i - 1], "1073741824") << a[i + 1];
    }
    EXPECT_EQ(mounts, (std::vector<std::string>{"/dev/shm", "/tmp", "/scratch"}));
    // The unsized tmpfs of --dev is read-only before /dev/shm goes on top.
    const auto dev = std::find(a.begin(), a.end(), "--dev");
    ASSERT_NE(dev, a.end());
    EXPECT_EQ(std::vector<std::string>(dev, dev + 4), (std::vector<std::string>{"--dev", "/dev", "--remount-ro", "/dev"}));
    EXPECT_EQ(std::count(a.begin(), a.end(), "--size"), 3);
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
    const Request req{JailAction::command, "main", {"/bin/sh", "-c", "id"}};
    auto refused = plan_with(Policy{}, full_probe(), req);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Exit::refused);
    Policy pol;
    pol.allow_caller_command = true;
    pol.network = NetworkMode::host;
    auto p = plan_with(pol, full_probe(), req);
    ASSERT_TRUE(p.ok());
    const auto& a = p.value().argv;
    EXPECT_EQ(a, expected_argv({"--proc", "/proc"}, {"--disable-userns", "--die-with-parent", "--json-status-fd", "4"},
                               kHanded));
    // The command and its environment go to the stub with the caller's stdio.
    EXPECT_EQ(p.value().handed_command, (std::vector<std::string>{"/bin/sh", "-c", "id"}));
    EXPECT_TRUE(p.value().env.empty());
    EXPECT_NE(std::find(p.value().handed_env.begin(), p.value().handed_env.end(), "TTYD_SANDBOX=true"),
              p.value().handed_env.end());
    EXPECT_NE(std::find(p.value().handed_env.begin(), p.value().handed_env.end(), "TERM=xterm-256color"),
              p.value().handed_env.end());
}

// validate_request, which the commands run before anything acts, refuses
// exactly what build_plan refuses for the policy, tenant, request and probe.
TEST(Plan, ValidateRequestRefusesWhatBuildPlanRefusesWithTheSameReason) {
    Policy nologin_pol;
    Tenant nologin = alice();
    nologin.account.shell = "/usr/sbin/nologin";
    Tenant deep = alice();
    deep.account.home = "/home/" + std::string(100, 'd');
    auto no_userns = full_probe();
    no_userns.user_namespaces = false;
    const Request cmd{JailAction::command, "main", {"/bin/sh", "-c", "id"}};
    const Request attach{JailAction::attach, "main", {}};
    const Request serve_joining{JailAction::serve, "", {}, true};
    struct Case {
        Tenant tenant;
        Request req;
        HostProbe probe;
    };
    for (const Case& c : {Case{alice(), cmd, full_probe()}, Case{nologin, attach, full_probe()},
                          Case{nologin, Request{JailAction::serve, "", {}}, full_probe()},
                          Case{deep, attach, full_probe()}, Case{alice(), serve_joining, full_probe()},
                          Case{alice(), Request{JailAction::attach, "bad name", {}}, full_probe()},
                          Case{alice(), attach, no_userns}}) {
        const auto st = validate_request(nologin_pol, c.tenant.account, c.req, c.probe);
        const auto plan = build_plan(nologin_pol, c.tenant, c.req, c.probe, {}, {});
        ASSERT_FALSE(st.ok());
        ASSERT_FALSE(plan.ok());
        EXPECT_EQ(st.error().code, plan.error().code);
        EXPECT_EQ(st.error().message, plan.error().message);
    }
    // Control: what build_plan accepts, validate_request accepts.
    EXPECT_TRUE(validate_request(nologin_pol, alice().account, attach, full_probe()).ok());
    EXPECT_TRUE(plan_with(nologin_pol, full_probe(), attach).ok());
}

// The stages are typed: only validate_request makes a ValidRequest, and the
// plan of one is the plan build_plan makes of its request (which validates).
static_assert(!std::is_constructible_v<ValidRequest, Request>);
static_assert(!std::is_default_constructible_v<ValidRequest>);
TEST(Plan, AValidatedRequestPlansAsItsRequestDoes) {
    const Policy pol;
    const Request attach{JailAction::attach, "main", {}};
    const auto valid = validate_request(pol, alice().account, attach, full_probe());
    ASSERT_TRUE(valid.ok());
    EXPECT_EQ(valid.value().request().session, "main");
    const auto once = build_plan(pol, alice(), valid.value(), full_probe(), {}, {});
    const auto twice = build_plan(pol, alice(), attach, full_probe(), {}, {});
    ASSERT_TRUE(once.ok());
    ASSERT_TRUE(twice.ok());
    EXPECT_EQ(once.value().argv, twice.value().argv);
    EXPECT_EQ(once.value().env, twice.value().env);
}

TEST(Plan, AnIsolatedOneOffJailWaitsForItsNetworkAndGetsItsOwnResolvConf) {
    Policy pol;
    pol.allow_caller_command = true;
    auto p = plan_with(pol, full_probe(), Request{JailAction::command, "main", {"/bin/sh", "-c", "id"}});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().net, JailNet::isolated);
    EXPECT_EQ(p.value().argv,
              expected_argv({"--proc", "/proc"},
                            {"--unshare-net", "--info-fd", "5", "--block-fd", "6", "--disable-userns", "--die-with-parent",
                             "--json-status-fd", "4"},
                            kHanded, {"--ro-bind-data", "7", "/etc/resolv.conf"}));
    EXPECT_EQ(p.value().handed_command, (std::vector<std::string>{"/bin/sh", "-c", "id"}));
    EXPECT_EQ(p.value().resolv_conf, std::string(kJailResolvConf));
    EXPECT_EQ(p.value().net_argv, user_net_argv());
    EXPECT_TRUE(p.value().warnings.empty());
}

TEST(Plan, UserModeNetworkArgvIsExact) {
    // Loopback of the host unreachable (--disable-host-loopback), its
    // lifetime tied to the supervisor (--exit-fd), readiness reported.
    EXPECT_EQ(user_net_argv(),
              (std::vector<std::string>{"/usr/bin/slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback",
                                        "--enable-ipv6", "--enable-seccomp", "--ready-fd=5", "--exit-fd=6",
                                        "--userns-path=/proc/self/fd/3", "--netns-type=path", "/proc/self/fd/4",
                                        "tap0"}));
}

TEST(Plan, HostNetworkIsSharedWithAWarningAndClientJailsStayOffline) {
    Policy pol;
    pol.network = NetworkMode::host;
    auto serve = plan_with(pol, full_probe(), Request{JailAction::serve, "", {}});
    ASSERT_TRUE(serve.ok()) << serve.error().message;
    EXPECT_EQ(serve.value().net, JailNet::host);
    const auto& a = serve.value().argv;
    EXPECT_EQ(std::find(a.begin(), a.end(), "--unshare-net"), a.end());
    EXPECT_TRUE(serve.value().net_argv.empty());
    ASSERT_EQ(serve.value().warnings.size(), 1u);
    EXPECT_EQ(serve.value().warnings[0],
              "network = host: the jail shares the host's network (services on its loopback and addresses, other "
              "tenants' listeners, abstract sockets)");
    auto attach = plan_with(pol, full_probe());
    ASSERT_TRUE(attach.ok());
    EXPECT_EQ(attach.value().net, JailNet::none);
    EXPECT_TRUE(attach.value().warnings.empty());
}

TEST(Plan, TheAllowLineCarriesEveryWarningOfThePlan) {
    Policy pol;
    pol.network = NetworkMode::host;
    pol.proc = ProcMode::inherit;
    auto serve = plan_with(pol, full_probe(), Request{JailAction::serve, "", {}});
    ASSERT_TRUE(serve.ok()) << serve.error().message;
    ASSERT_EQ(serve.value().warnings.size(), 2u);
    EXPECT_EQ(audit_reason("session jail started", serve.value()),
              "session jail started; warning: " + serve.value().warnings[0] + "; warning: " +
                  serve.value().warnings[1]);
    // A plan without warnings: the reason alone.
    auto attach = plan_with(Policy{}, full_probe());
    ASSERT_TRUE(attach.ok());
    ASSERT_TRUE(attach.value().warnings.empty());
    EXPECT_EQ(audit_reason("attach", attach.value()), "attach");
}

TEST(Plan, SessionJailRunsTheTmuxServerInTheForegroundInASessionOfItsOwn) {
    auto p = plan_with(Policy{}, full_probe(), Request{JailAction::serve, "", {}});
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p.value().argv, expected_argv({"--proc", "/proc"},
                                            {"--unshare-net", "--info-fd", "5", "--block-fd", "6", "--disable-userns",
                                             "--die-with-parent", "--new-session"},
                                            {"/usr/bin/tmux", "-S", kSocket, "-D"},
                                            {"--ro-bind-data", "7", "/etc/resolv.conf", "--ro-bind",
                                             std::string(kJailViewRoot) + "/1001", std::string(kJailInfoDir)}));
    EXPECT_EQ(p.value().net, JailNet::isolated);
    EXPECT_EQ(p.value().action, JailAction::serve);
    EXPECT_EQ(p.value().socket_dir, "/home/alice/.cache/tmux");
}

TEST(Plan, OnlyTheTmuxServerPreloadsTheOomForkHandler) {
    for (JailAction a : {JailAction::attach, JailAction::kill_session, JailAction::list_sessions, JailAction::serve}) {
        auto p = plan_with(Policy{}, full_probe(), Request{a, a == JailAction::serve ? "" : "main", {}});
        ASSERT_TRUE(p.ok()) << p.error().message;
        const auto& argv = p.value().argv;
        const auto at = std::find(argv.begin(), argv.end(), "LD_PRELOAD");
        EXPECT_EQ(at != argv.end(), a == JailAction::serve) << jail_action_name(a);
        if (at != argv.end()) {
            EXPECT_EQ(*(at + 1), kOomPreload);
            // TTYD_SANDBOX=true is still the jail's last variable.
            const auto last = std::find(argv.rbegin(), argv.rend(), "--setenv");
            ASSERT_NE(last, argv.rend());
            EXPECT_EQ(*(last - 1), "TTYD_SANDBOX");
        }
        // bwrap's own environment never has it: ld.so would load it into bwrap.
        for (const auto& kv : p.value().env) EXPECT_NE(kv.rfind("LD_", 0), 0U) << kv;
    }
}

TEST(Plan, ClientJailsNeverStartAServerAndHaveNoNetwork) {
    for (JailAction a : {JailAction::attach, JailAction::kill_session, JailAction::list_sessions}) {
        auto p = plan_with(Policy{}, full_probe(), Request{a, "main", {}});
        ASSERT_TRUE(p.ok()) << p.error().message;
        const auto& argv = p.value().argv;
        EXPECT_NE(std::find(argv.begin(), argv.end(), "--unshare-net"), argv.end()) << jail_action_name(a);
        EXPECT_EQ(std::find(argv.begin(), argv.end(), "--new-session"), argv.end()) << jail_action_name(a);
        // The client's words: an attach's are handed to its stub.
        const auto& client = a == JailAction::attach ? p.value().handed_command
                                                     : std::vector<std::string>(std::find(argv.begin(), argv.end(), "--") + 1, argv.end());
        ASSERT_GE(client.size(), 2U);
        EXPECT_EQ(client[1], "-N") << jail_action_name(a);
    }
    auto list = plan_with(Policy{}, full_probe(), Request{JailAction::list_sessions, "", {}});
    ASSERT_TRUE(list.ok()) << list.error().message;
    const auto& a = list.value().argv;
    EXPECT_EQ(std::vector<std::string>(a.end() - 7, a.end()),
              (std::vector<std::string>{"/usr/bin/tmux", "-N", "-S", kSocket, "list-sessions", "-F", "#{session_name}"}));
}

TEST(Plan, NoJailWithoutANetworkWaitsOnABlockFd) {
    // An attach's PAM account check is made by its front before the
    // terminal is handed to the supervisor: nothing waits in bwrap for it.
    Policy pol;
    pol.allow_caller_command = true;
    pol.network = NetworkMode::host;
    for (const Request& r : {Request{JailAction::attach, "main", {}}, Request{JailAction::kill_session, "main", {}},
                             Request{JailAction::list_sessions, "", {}}, Request{JailAction::serve, "", {}},
                             Request{JailAction::command, "", {"/bin/true"}}}) {
        auto p = plan_with(pol, full_probe(), r);
        ASSERT_TRUE(p.ok()) << p.error().message;
        EXPECT_EQ(std::count(p.value().argv.begin(), p.value().argv.end(), "--block-fd"), 0)
            << jail_action_name(r.action);
    }
}

TEST(Plan, AnAttachJailJoiningTheTenantsEmptyNamespaceMakesNoneOfItsOwn) {
    for (NetworkMode mode : {NetworkMode::isolated, NetworkMode::host}) {
        Policy pol;
        pol.network = mode;
        auto own = plan_with(pol, full_probe(), Request{JailAction::attach, "main", {}});
        auto joined = plan_with(pol, full_probe(), Request{JailAction::attach, "main", {}, true});
        ASSERT_TRUE(own.ok() && joined.ok());
        EXPECT_EQ(own.value().net, JailNet::none);
        EXPECT_EQ(joined.value().net, JailNet::tenant_empty);
        EXPECT_EQ(jail_net_name(joined.value().net), "none (the tenant's empty namespace)");
        // The same jail, less --unshare-net: no other network flag, no
        // warning, nothing of an isolated jail's start-up.
        auto without = own.value().argv;
        without.erase(std::find(without.begin(), without.end(), "--unshare-net"));
        EXPECT_EQ(joined.value().argv, without);
        EXPECT_TRUE(joined.value().warnings.empty());
        EXPECT_TRUE(joined.value().net_argv.empty());
        EXPECT_TRUE(joined.value().resolv_conf.empty());
    }
    // Only an attach jail joins it: a session or one-off jail has a network
    // of its own (or the host's), and kill/list start without one at hand.
    for (JailAction a : {JailAction::serve, JailAction::command, JailAction::kill_session, JailAction::list_sessions}) {
        Policy pol;
        pol.allow_caller_command = true;
        Request r{a, a == JailAction::kill_session ? "main" : "", {}, true};
        if (a == JailAction::command) r.command = {"/bin/true"};
        auto p = plan_with(pol, full_probe(), r);
        ASSERT_FALSE(p.ok()) << jail_action_name(a);
        EXPECT_EQ(p.error().message, "only an attach jail joins the tenant's empty network namespace");
    }
}

TEST(Plan, ACommandBelongsToACommandJailOnly) {
    Policy pol;
    pol.allow_caller_command = true;
    auto attach_with_command = plan_with(pol, full_probe(), Request{JailAction::attach, "main", {"/bin/true"}});
    ASSERT_FALSE(attach_with_command.ok());
    EXPECT_EQ(attach_with_command.error().code, Exit::usage);
    auto command_without = plan_with(pol, full_probe(), Request{JailAction::command, "main", {}});
    ASSERT_FALSE(command_without.ok());
    EXPECT_EQ(command_without.error().code, Exit::usage);
}

TEST(Plan, KillTargetsTheExactSessionOnTheTenantSocket) {
    auto p = plan_with(Policy{}, full_probe(), Request{JailAction::kill_session, "dev.1", {}});
    ASSERT_TRUE(p.ok());
    const auto& a = p.value().argv;
    EXPECT_EQ(std::vector<std::string>(a.end() - 11, a.end()),
              (std::vector<std::string>{"/usr/bin/tmux", "-N", "-S", "/home/alice/.cache/tmux/clihost.sock",
                                        "kill-session", "-t", "=dev+1", ";", "list-sessions", "-F",
                                        "#{session_name}"}));
}

TEST(Plan, AnAttachJailsArgvIsTheSameForEveryConnection) {
    // Whatever the session and the caller's variables, the same bwrap argv
    // (so its jail can start before the connection): the stub's.
    auto main = plan_with(Policy{}, full_probe());
    auto other = build_plan(Policy{}, alice(), Request{JailAction::attach, "dev.2", {}}, full_probe(),
                            {{"TERM", "vt100"}, {"LANG", "C.UTF-8"}}, {"XDG_RUNTIME_DIR=/run/user/1001"});
    ASSERT_TRUE(main.ok());
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(main.value().argv, other.value().argv);
    EXPECT_EQ(main.value().argv.back(), std::string(kAttachStub));
    EXPECT_TRUE(main.value().env.empty());
    // What differs goes to the stub: the client's words and environment.
    EXPECT_EQ(main.value().handed_command, kAttachMain);
    EXPECT_EQ(other.value().handed_command.back(), "dev+2");
    EXPECT_EQ(main.value().handed_env.back(), "TTYD_SANDBOX=true");
    EXPECT_NE(std::find(other.value().handed_env.begin(), other.value().handed_env.end(), "TERM=vt100"),
              other.value().handed_env.end());
    // As the stub reads them (base/handed.hpp), whole.
    const HandedWords back = decode_handed(handed_words(main.value()));
    EXPECT_EQ(back.wrong, nullptr);
    EXPECT_EQ(back.argv, main.value().handed_command);
    EXPECT_EQ(back.env, main.value().handed_env);
    // Nothing that would not survive the trip: a NUL, or too much.
    Plan bad = main.value();
    bad.handed_command.emplace_back(std::string("a\0b", 3));
    EXPECT_EQ(handed_words(bad), "");
    bad = main.value();
    bad.handed_env.emplace_back("X=" + std::string(kMaxHandedBytes, 'x'));
    EXPECT_EQ(handed_words(bad), "");
    // Other jails hand nothing.
    auto list = plan_with(Policy{}, full_probe(), Request{JailAction::list_sessions, "", {}});
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(handed_words(list.value()), "");
}

TEST(Plan, AQueryAskedOfAWaitingJailIsTheQueryPlansCommandAfterTheWordQuery) {
    // The query's own tmux client and environment, as the stub reads them
    // (helper/stub: "query", then the words as handed_words lays them out).
    auto kill = plan_with(Policy{}, full_probe(), Request{JailAction::kill_session, "dev.1", {}});
    ASSERT_TRUE(kill.ok());
    const std::string words = query_words(kill.value());
    ASSERT_EQ(words.substr(0, kQueryWord.size()), kQueryWord);
    const HandedWords back = decode_handed(std::string_view(words).substr(kQueryWord.size()));
    EXPECT_EQ(back.wrong, nullptr);
    EXPECT_EQ(back.argv, kill.value().command);
    EXPECT_EQ(back.env, kill.value().env);
    EXPECT_EQ(kill.value().command.front(), "/usr/bin/tmux");
    EXPECT_EQ(kill.value().env.back(), "TTYD_SANDBOX=true");
    // Only a query: an attach, a session jail, a caller's command, never.
    auto attach = plan_with(Policy{}, full_probe());
    ASSERT_TRUE(attach.ok());
    EXPECT_EQ(query_words(attach.value()), "");
    auto serve = plan_with(Policy{}, full_probe(), Request{JailAction::serve, "", {}});
    ASSERT_TRUE(serve.ok());
    EXPECT_EQ(query_words(serve.value()), "");
    // Nor one that would not survive the trip.
    Plan bad = kill.value();
    bad.env.emplace_back("X=" + std::string(kMaxHandedBytes, 'x'));
    EXPECT_EQ(query_words(bad), "");
}

TEST(Plan, SandboxFlagIsForcedOnTheBwrapCommandLineAfterClearenv) {
    auto p = plan_with(Policy{}, full_probe(), Request{JailAction::list_sessions, "", {}});
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

TEST(Environment, JailShellIsShellWhateverTheLoginShell) {
    Policy pol;
    pol.shell = "/usr/bin/bash";
    Account a{"alice", 1001, 1001, "/home/alice", "/usr/sbin/nologin"};
    auto env = build_environment(pol, a, {}, {});
    EXPECT_EQ(env[3], "SHELL=/usr/bin/bash");
}

TEST(Plan, NologinTenantWithoutJailShellIsRefusedForTmux) {
    Tenant t = alice();
    t.account.shell = "/usr/sbin/nologin";
    for (JailAction a : {JailAction::serve, JailAction::attach}) {
        auto p = build_plan(Policy{}, t, Request{a, "s", {}}, full_probe(), {}, {});
        ASSERT_FALSE(p.ok());
        EXPECT_EQ(p.error().code, Exit::refused);
        EXPECT_EQ(p.error().message,
                  "the login shell of alice is /usr/sbin/nologin and [jail] shell is not set: tmux would start it "
                  "(set [jail] shell)");
    }
    // kill and list start no shell: a nologin tenant's sessions can still be ended.
    EXPECT_TRUE(build_plan(Policy{}, t, Request{JailAction::kill_session, "s", {}}, full_probe(), {}, {}).ok());
    EXPECT_TRUE(build_plan(Policy{}, t, Request{JailAction::list_sessions, "", {}}, full_probe(), {}, {}).ok());
    // Control: with [jail] shell the same tenant gets tmux, with that SHELL.
    Policy pol;
    pol.shell = "/usr/bin/bash";
    auto q = build_plan(pol, t, Request{JailAction::attach, "s", {}}, full_probe(), {}, {});
    ASSERT_TRUE(q.ok()) << q.error().message;
    const auto& env = q.value().handed_env;
    EXPECT_NE(std::find(env.begin(), env.end(), "SHELL=/usr/bin/bash"), env.end());
    EXPECT_EQ(q.value().handed_command.back(), "s");
}

TEST(Plan, OverlongHomeCannotHoldATmuxSocket) {
    Tenant t = alice();
    t.account.home = "/home/" + std::string(100, 'a');
    auto p = build_plan(Policy{}, t, Request{JailAction::attach, "s", {}}, full_probe(), {}, {});
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, Exit::refused);
}

TEST(Environment, SetenvValuesComeAfterTheIdentityWithHomeExpanded) {
    Policy pol;
    pol.extra_env = {"TERM"};
    pol.setenv = {{"NPM_CONFIG_PREFIX", "$HOME/.npm-global"},
                  {"PATH", "$HOME/.local/bin:/usr/local/bin:/usr/bin:/bin"},
                  {"NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/ca-certificates.crt"}};
    const CallerEnv caller{{"TERM", "xterm"}, {"NPM_CONFIG_PREFIX", "/tmp/caller"}};
    // PAM's environment never overrides an operator's value.
    auto env = build_environment(pol, alice().account, caller, {"NODE_EXTRA_CA_CERTS=/tmp/pam", "MAIL=/var/mail/a"});
    EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/bash",
                                             "PATH=/home/alice/.local/bin:/usr/local/bin:/usr/bin:/bin",
                                             "NPM_CONFIG_PREFIX=/home/alice/.npm-global",
                                             "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt", "TERM=xterm",
                                             "MAIL=/var/mail/a", "TTYD_SANDBOX=true"}));
}

TEST(Environment, SetenvItemsTheParserWouldRefuseAreDropped) {
    // A Policy not made by the parser: the builder does not trust it.
    Policy pol;
    pol.setenv = {{"TTYD_SANDBOX", "false"}, {"HOME", "/tmp"}, {"LD_PRELOAD", "/x.so"}, {"PATH", "/tmp"},
                  {"A", "x y"}, {"B", "ok"}};
    auto env = build_environment(pol, alice().account, {}, {});
    EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/alice", "USER=alice", "LOGNAME=alice", "SHELL=/bin/bash",
                                             "PATH=/usr/local/bin:/usr/bin:/bin", "B=ok", "TTYD_SANDBOX=true"}));
}

// Issue 41, item 1: [jail] setenv in login shells. /etc/profile sets PATH
// for every user; the session jail's and a one-off's /etc/profile.d is the
// host's entries and a script of the helper's, last, that applies setenv
// again (PATH first as the operator set it, then what other scripts added).
TEST(Plan, SetenvIsAppliedAgainAfterEtcProfileInTheJailsThatRunShells) {
    Policy pol;
    pol.allow_caller_command = true;  // the one-off below
    pol.setenv = {{"NPM_CONFIG_PREFIX", "$HOME/.npm-global"},
                  {"PATH", "$HOME/.npm-global/bin:/usr/local/bin:/usr/bin:/bin"}};
    HostProbe probe = full_probe();
    probe.profile_d_listed = true;
    probe.profile_d = {{"/etc/profile.d/a.sh", HostPath::Kind::other, {}},
                       {"/etc/profile.d/b.sh", HostPath::Kind::symlink, "/opt/b.sh"}};
    const auto serve = plan_with(pol, probe, {JailAction::serve, "", {}}).value();
    const std::vector<std::string> want{"--size", "1048576", "--tmpfs", "/etc/profile.d",
                                        "--ro-bind", "/etc/profile.d/a.sh", "/etc/profile.d/a.sh",
                                        "--symlink", "/opt/b.sh", "/etc/profile.d/b.sh",
                                        "--perms", "0444", "--ro-bind-data", "9", std::string(kProfileScript),
                                        "--remount-ro", "/etc/profile.d",
                                        "--bind", "/home/alice", "/home/alice"};
    EXPECT_NE(std::search(serve.argv.begin(), serve.argv.end(), want.begin(), want.end()), serve.argv.end());
    ASSERT_EQ(serve.data.size(), 1u);
    EXPECT_EQ(serve.data[0].dest, kProfileScript);
    const std::string& text = serve.data[0].text;
    EXPECT_NE(text.find("NPM_CONFIG_PREFIX=/home/alice/.npm-global; export NPM_CONFIG_PREFIX\n"), std::string::npos);
    EXPECT_NE(text.find("PATH=/home/alice/.npm-global/bin:/usr/local/bin:/usr/bin:/bin\n"), std::string::npos);
    EXPECT_EQ(profile_script(pol, alice().account), text);
    const auto oneoff = plan_with(pol, probe, {JailAction::command, "main", {"/bin/true"}}).value();
    EXPECT_EQ(oneoff.data.size(), 1u);
    // The client jails run no shell; without setenv, or without a listing
    // of the host's /etc/profile.d, nothing changes.
    for (auto a : {JailAction::attach, JailAction::list_sessions})
        EXPECT_TRUE(plan_with(pol, probe, {a, "main", {}}).value().data.empty());
    EXPECT_TRUE(plan_with(Policy{}, probe, {JailAction::serve, "", {}}).value().data.empty());
    EXPECT_TRUE(plan_with(pol, full_probe(), {JailAction::serve, "", {}}).value().data.empty());
    EXPECT_EQ(profile_script(Policy{}, alice().account), "");
}

// The script, run by a real POSIX shell after a PATH like /etc/profile's:
// the operator's PATH first, the entries others added kept after it, once.
TEST(Plan, TheProfileScriptPutsTheOperatorsPathFirstInARealShell) {
    Policy pol;
    pol.setenv = {{"PATH", "$HOME/bin:/usr/local/bin:/usr/bin:/bin"}, {"CTJ_X", "a.b"}};
    const std::string script = profile_script(pol, alice().account);
    const std::string cmd = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/games:/opt/x/bin; " + script +
                            "\nprintf '%s|%s' \"$PATH\" \"$CTJ_X\"";
    std::string out;
    FILE* f = ::popen(("/bin/sh -c " + shell_quote(cmd)).c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[512];
    while (std::fgets(buf, sizeof buf, f) != nullptr) out += buf;
    ASSERT_EQ(::pclose(f), 0) << script;
    EXPECT_EQ(out, "/home/alice/bin:/usr/local/bin:/usr/bin:/bin:/usr/games:/opt/x/bin|a.b");
}

// Issue 41, item 2: the session jail binds its supervisor's jail.json
// directory read-only (after /run's tmpfs, before the home); no other jail
// does. An attach's notice is shown by its client after it attached, and
// a notice tmux would expand ('#'), or one for another jail, is refused.
TEST(Plan, TheSessionJailBindsItsJailJsonReadOnly) {
    const auto serve = plan_with(Policy{}, full_probe(), {JailAction::serve, "", {}}).value();
    const std::vector<std::string> want{"--ro-bind", std::string(kJailViewRoot) + "/1001", std::string(kJailInfoDir),
                                        "--bind", "/home/alice", "/home/alice"};
    const auto at = std::search(serve.argv.begin(), serve.argv.end(), want.begin(), want.end());
    const auto run = std::find(serve.argv.begin(), serve.argv.end(), "/run");  // its tmpfs
    EXPECT_NE(at, serve.argv.end());
    EXPECT_LT(run, at);
    EXPECT_EQ(jail_view_dir(1001), std::string(CLIHOST_JAIL_RUNTIME_DIR) + "-view/1001");
    Policy pol;
    pol.allow_caller_command = true;
    for (const Request& r : {Request{JailAction::attach, "main", {}}, Request{JailAction::command, "main", {"/bin/true"}},
                             Request{JailAction::list_sessions, "", {}}}) {
        const auto argv = plan_with(pol, full_probe(), r).value().argv;
        EXPECT_EQ(std::find(argv.begin(), argv.end(), std::string(kJailInfoDir)), argv.end());
    }
}

TEST(Plan, AnAttachShowsItsNoticeOnceAttached) {
    const std::string notice = "clihost-jail: settings changed (nested_sandbox); the operator's stop applies them";
    Request r{JailAction::attach, "main", {}};
    r.notice = notice;
    const auto p = plan_with(Policy{}, full_probe(), r);
    ASSERT_TRUE(p.ok()) << p.error().message;
    auto want = kAttachMain;
    want.insert(want.end(), {";", "display-message", "-d", "0", notice});
    EXPECT_EQ(p.value().handed_command, want);
    // The jail itself is the same as any attach's (it was prepared before).
    EXPECT_EQ(p.value().argv, plan_with(Policy{}, full_probe()).value().argv);
    for (const std::string& bad : std::vector<std::string>{"#(id)", "a\nb", "x\x1b[2J", std::string(300, 'a')}) {
        r.notice = bad;
        auto refused = plan_with(Policy{}, full_probe(), r);
        ASSERT_FALSE(refused.ok()) << bad;
        EXPECT_EQ(refused.error().message, "a notice is one plain line, for an attach");
    }
    Request serve{JailAction::serve, "", {}};
    serve.notice = "x";
    EXPECT_FALSE(plan_with(Policy{}, full_probe(), serve).ok());
}
