// The kinds of jail (proc/jail_start.hpp): each typed start is made only by
// its factory, which refuses a plan, a network channel or a namespace that
// does not fit the kind; none can be built around it.
#include <gtest/gtest.h>

#include <optional>
#include <type_traits>

#include "proc/jail_start.hpp"
#include "reason.hpp"

using namespace clihost;
using clihost::testing::refused_with;

namespace {

Plan plan_of(JailAction action, JailNet net) {
    Plan p;
    p.action = action;
    p.net = net;
    // An attach jail's and a one-off jail's shape (build_plan): the stub,
    // handed its client or command.
    if (action == JailAction::attach) {
        p.command = {std::string(kAttachStub)};
        p.handed_command = {"/usr/bin/tmux", "attach"};
    }
    if (action == JailAction::command) {
        p.command = {std::string(kAttachStub)};
        p.handed_command = {"/bin/true"};
    }
    return p;
}

const Stdio kStdio{{10, 11, 12}};
const NetHandoff kNet{20, 21};
const ConnHandoff kConn{30, 31};

// Not constructible but by make(): a start cannot be assembled around the
// factory's checks (with any of the arguments make() takes, or aggregate-style).
static_assert(!std::is_constructible_v<SessionJailStart, const Plan&, int, std::optional<NetHandoff>>);
static_assert(!std::is_constructible_v<AttachJailStart, const Plan&, Stdio, int, ConnHandoff>);
static_assert(!std::is_constructible_v<OneOffJailStart, const Plan&, Stdio, std::optional<NetHandoff>, ConnHandoff>);
static_assert(!std::is_constructible_v<QueryJailStart, const Plan&, Stdio>);
static_assert(!std::is_default_constructible_v<JailStart>);
// Nor changed after it: its members are const.
static_assert(!std::is_copy_assignable_v<OneOffJailStart>);
// The kind's traits and the plan's rendering (--new-session, --json-status-fd) agree.
static_assert(traits_of(JailKind::session).own_session == plans_own_session(JailAction::serve));
static_assert(traits_of(JailKind::one_off).reports_status == plans_status_report(JailAction::command));

TEST(JailStart, EachKindIsMadeFromItsOwnPlan) {
    const Plan serve = plan_of(JailAction::serve, JailNet::host);
    const Plan attach = plan_of(JailAction::attach, JailNet::none);
    const Plan command = plan_of(JailAction::command, JailNet::host);
    const Plan list = plan_of(JailAction::list_sessions, JailNet::none);
    const Plan kill = plan_of(JailAction::kill_session, JailNet::none);
    const Plan isolated = plan_of(JailAction::command, JailNet::isolated);
    auto s = SessionJailStart::make(serve, 5, std::nullopt);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(kind_of(s.value()), JailKind::session);
    EXPECT_EQ(std::get<SessionJailStart>(s.value()).ready_fd, 5);
    auto a = AttachJailStart::make(attach, kStdio, -1, kConn);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(kind_of(a.value()), JailKind::attach);
    auto o = OneOffJailStart::make(command, kStdio, std::nullopt, kConn);
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(kind_of(o.value()), JailKind::one_off);
    auto i = OneOffJailStart::make(isolated, kStdio, kNet, kConn);
    ASSERT_TRUE(i.ok());
    EXPECT_EQ(std::get<OneOffJailStart>(i.value()).net->watchers_end, 20);
    EXPECT_EQ(std::get<OneOffJailStart>(i.value()).conn.watchers_end, 30);
    ASSERT_TRUE(QueryJailStart::make(list, kStdio).ok());
    auto q = QueryJailStart::make(kill, kStdio);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(kind_of(q.value()), JailKind::query);
}

TEST(JailStart, APlanOfAnotherActionMakesNoStartOfTheKind) {
    const Plan serve = plan_of(JailAction::serve, JailNet::host);
    const Plan attach = plan_of(JailAction::attach, JailNet::none);
    const Plan command = plan_of(JailAction::command, JailNet::host);
    EXPECT_TRUE(refused_with(SessionJailStart::make(attach, 5, std::nullopt), Exit::internal, "a session jail serves tmux"));
    EXPECT_TRUE(refused_with(AttachJailStart::make(command, kStdio, -1, kConn), Exit::internal, "an attach jail runs a tmux client"));
    EXPECT_TRUE(refused_with(OneOffJailStart::make(serve, kStdio, std::nullopt, kConn), Exit::internal,
                             "a one-off jail runs the caller's command"));
    EXPECT_TRUE(refused_with(QueryJailStart::make(attach, kStdio), Exit::internal, "a query jail lists or kills"));
}

TEST(JailStart, ANetworkChannelGoesWithAnIsolatedPlanAndOnlyWithIt) {
    const Plan isolated_serve = plan_of(JailAction::serve, JailNet::isolated);
    const Plan host_serve = plan_of(JailAction::serve, JailNet::host);
    const Plan isolated_cmd = plan_of(JailAction::command, JailNet::isolated);
    const Plan host_cmd = plan_of(JailAction::command, JailNet::host);
    EXPECT_TRUE(SessionJailStart::make(isolated_serve, 5, kNet).ok());
    EXPECT_TRUE(refused_with(SessionJailStart::make(isolated_serve, 5, std::nullopt), Exit::internal,
                             "an isolated jail hands its namespaces over, and only it"));
    EXPECT_TRUE(refused_with(SessionJailStart::make(host_serve, 5, kNet), Exit::internal,
                             "an isolated jail hands its namespaces over, and only it"));
    EXPECT_TRUE(OneOffJailStart::make(isolated_cmd, kStdio, kNet, kConn).ok());
    EXPECT_TRUE(refused_with(OneOffJailStart::make(isolated_cmd, kStdio, std::nullopt, kConn), Exit::internal,
                             "an isolated one-off jail hands its namespaces over, and only it"));
    EXPECT_TRUE(refused_with(OneOffJailStart::make(host_cmd, kStdio, kNet, kConn), Exit::internal,
                             "an isolated one-off jail hands its namespaces over, and only it"));
    EXPECT_TRUE(refused_with(OneOffJailStart::make(isolated_cmd, kStdio, NetHandoff{20, -1}, kConn), Exit::internal,
                             "hands its namespaces over"));
    // A query jail has no network at all.
    EXPECT_TRUE(refused_with(QueryJailStart::make(plan_of(JailAction::list_sessions, JailNet::host), kStdio),
                             Exit::internal, "a query jail has no network"));
}

TEST(JailStart, AnAttachJailJoinsTheTenantsNamespaceExactlyAsPlanned) {
    const Plan joins = plan_of(JailAction::attach, JailNet::tenant_empty);
    const Plan own = plan_of(JailAction::attach, JailNet::none);
    auto a = AttachJailStart::make(joins, kStdio, 9, kConn);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(std::get<AttachJailStart>(a.value()).tenant_netns, 9);
    EXPECT_TRUE(refused_with(AttachJailStart::make(joins, kStdio, -1, kConn), Exit::internal,
                             "joins the tenant's empty network namespace only as planned"));
    EXPECT_TRUE(refused_with(AttachJailStart::make(own, kStdio, 9, kConn), Exit::internal,
                             "joins the tenant's empty network namespace only as planned"));
    EXPECT_TRUE(refused_with(AttachJailStart::make(plan_of(JailAction::attach, JailNet::host), kStdio, -1, kConn),
                             Exit::internal, "an attach jail has no network"));
    // Nobody else joins it.
    EXPECT_TRUE(refused_with(OneOffJailStart::make(plan_of(JailAction::command, JailNet::tenant_empty), kStdio,
                                                   std::nullopt, kConn),
                             Exit::internal, "only an attach jail joins the tenant's namespace"));
    EXPECT_TRUE(refused_with(SessionJailStart::make(plan_of(JailAction::serve, JailNet::tenant_empty), 5, std::nullopt),
                             Exit::internal, "joins none"));
}

TEST(JailStart, AConnectionJailTakesThreeDescriptorsAndASessionJailItsReport) {
    const Stdio two{{10, 11, -1}};
    EXPECT_TRUE(refused_with(AttachJailStart::make(plan_of(JailAction::attach, JailNet::none), two, -1, kConn), Exit::internal,
                             "takes three descriptors"));
    EXPECT_TRUE(refused_with(OneOffJailStart::make(plan_of(JailAction::command, JailNet::host), two, std::nullopt, kConn),
                             Exit::internal, "takes three descriptors"));
    EXPECT_TRUE(refused_with(QueryJailStart::make(plan_of(JailAction::kill_session, JailNet::none), two),
                             Exit::internal, "takes three descriptors"));
    EXPECT_TRUE(refused_with(SessionJailStart::make(plan_of(JailAction::serve, JailNet::host), -1, std::nullopt),
                             Exit::internal, "a session jail reports its start"));
}

TEST(JailStart, AnAttachJailRunsTheStubAndWaitsForItsConnection) {
    const Plan attach = plan_of(JailAction::attach, JailNet::none);
    auto a = AttachJailStart::make(attach, kStdio, -1, kConn);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(std::get<AttachJailStart>(a.value()).conn.watchers_end, 30);
    EXPECT_TRUE(refused_with(AttachJailStart::make(attach, kStdio, -1, ConnHandoff{30, -1}), Exit::internal,
                             "waits for its connection"));
    EXPECT_TRUE(refused_with(AttachJailStart::make(attach, kStdio, -1, ConnHandoff{}), Exit::internal,
                             "waits for its connection"));
    // The tmux client itself as bwrap's command, or a connection's
    // environment in bwrap's argv: not a jail that can start before it.
    Plan client = attach;
    client.command = {"/usr/bin/tmux", "attach"};
    EXPECT_TRUE(refused_with(AttachJailStart::make(client, kStdio, -1, kConn), Exit::internal, "runs the attach stub"));
    Plan with_env = attach;
    with_env.env = {"TERM=xterm"};
    EXPECT_TRUE(refused_with(AttachJailStart::make(with_env, kStdio, -1, kConn), Exit::internal, "runs the attach stub"));
}

TEST(JailStart, AOneOffJailRunsTheStubAndWaitsForItsConnection) {
    const Plan command = plan_of(JailAction::command, JailNet::host);
    EXPECT_TRUE(refused_with(OneOffJailStart::make(command, kStdio, std::nullopt, ConnHandoff{30, -1}), Exit::internal,
                             "a one-off jail waits for its connection"));
    EXPECT_TRUE(refused_with(OneOffJailStart::make(command, kStdio, std::nullopt, ConnHandoff{}), Exit::internal,
                             "a one-off jail waits for its connection"));
    // The caller's command as bwrap's own, or its environment in bwrap's
    // argv: not a jail that can start before its request.
    Plan direct = command;
    direct.command = {"/bin/true"};
    EXPECT_TRUE(refused_with(OneOffJailStart::make(direct, kStdio, std::nullopt, kConn), Exit::internal,
                             "runs the attach stub, which is handed its command"));
    Plan with_env = command;
    with_env.env = {"TERM=xterm"};
    EXPECT_TRUE(refused_with(OneOffJailStart::make(with_env, kStdio, std::nullopt, kConn), Exit::internal,
                             "runs the attach stub, which is handed its command"));
    Plan nothing_handed = command;
    nothing_handed.handed_command.clear();
    EXPECT_TRUE(refused_with(OneOffJailStart::make(nothing_handed, kStdio, std::nullopt, kConn), Exit::internal,
                             "runs the attach stub, which is handed its command"));
}

TEST(JailStart, TheKindDecidesTheWatchersShape) {
    EXPECT_TRUE(traits_of(JailKind::session).serves_tmux);
    EXPECT_TRUE(traits_of(JailKind::attach).attaches);
    for (JailKind k : {JailKind::attach, JailKind::one_off, JailKind::query}) EXPECT_TRUE(traits_of(k).takes_stdio);
    EXPECT_FALSE(traits_of(JailKind::session).takes_stdio);
    for (JailKind k : {JailKind::attach, JailKind::one_off, JailKind::query}) {
        EXPECT_FALSE(traits_of(k).serves_tmux);
        EXPECT_FALSE(traits_of(k).own_session);
    }
    for (JailKind k : {JailKind::session, JailKind::one_off, JailKind::query}) EXPECT_FALSE(traits_of(k).attaches);
    // Started before their connection: the attach jail and the one-off jail.
    for (JailKind k : {JailKind::attach, JailKind::one_off}) EXPECT_TRUE(traits_of(k).waits);
    for (JailKind k : {JailKind::session, JailKind::query}) EXPECT_FALSE(traits_of(k).waits);
}

}  // namespace
