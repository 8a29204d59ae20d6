// request_test.cpp: the front/supervisor messages (request.hpp).
#include <gtest/gtest.h>
#include <signal.h>

#include "decide/request.hpp"

using namespace clihost;

namespace {

HandoverRequest sample() {
    HandoverRequest r;
    r.kind = HandoverKind::attach;
    r.session = "main";
    r.extra_env = {{"TERM", "xterm-256color"}, {"LANG", "C.UTF-8"}};
    r.caller = "ctj-proxy";
    r.caller_uid = 1001;
    r.via = "setuid";
    r.sudo_uid = "-";
    return r;
}

std::string with_nul(std::string s) {
    for (char& c : s)
        if (c == '|') c = '\0';
    return s;
}

}  // namespace

TEST(Request, RoundTrips) {
    auto r = parse_request(format_request(sample()));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().session, "main");
    EXPECT_EQ(r.value().caller, "ctj-proxy");
    EXPECT_EQ(r.value().caller_uid, 1001);
    EXPECT_EQ(r.value().extra_env.at("TERM"), "xterm-256color");
    auto cmd = sample();
    cmd.kind = HandoverKind::command;
    cmd.command = {"/bin/sh", "-c", "echo 'a b'"};
    auto c = parse_request(format_request(cmd));
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c.value().command, cmd.command);
}

TEST(Request, AnotherVersionIsRefusedWithBothVersions) {
    auto old = sample();
    old.version = 1;
    auto r = parse_request(format_request(old));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Exit::host);
    EXPECT_EQ(r.error().message, "protocol version 1 is not this supervisor's (3)");
}

class RequestRefused : public ::testing::TestWithParam<std::string> {};

TEST_P(RequestRefused, IsMalformed) {
    auto r = parse_request(with_nul(GetParam()));
    ASSERT_FALSE(r.ok()) << GetParam();
    EXPECT_EQ(r.error().code, Exit::refused);
    EXPECT_EQ(r.error().message.rfind("malformed request", 0), 0u) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, RequestRefused,
    ::testing::Values("", "hello", "clihost-jail-request 3|attach|main|u|1|setuid|-|0|0",  // no final NUL
                      "clihost-jail-request 3|detach|main|u|1|setuid|-|0|0|",               // unknown kind
                      "clihost-jail-request 3|attach|-x|u|1|setuid|-|0|0|",                 // session name
                      "clihost-jail-request 3|attach|main|u|-1|setuid|-|0|0|",              // caller uid
                      "clihost-jail-request 3|attach|main|u|1|setuid|x|0|0|",               // SUDO_UID
                      "clihost-jail-request 3|attach|main|u|1|setuid|-|1|TERM=a/b|0|",      // env value
                      "clihost-jail-request 3|attach|main|u|1|setuid|-|1|LD_X-=1|0|",       // env name
                      "clihost-jail-request 3|attach|main|u|1|setuid|-|2|TERM=a|TERM=b|0|", // repeated
                      "clihost-jail-request 3|attach|main|u|1|setuid|-|0|1|/bin/sh|",       // attach + command
                      "clihost-jail-request 3|command|main|u|1|setuid|-|0|0|",              // command without one
                      "clihost-jail-request 3|attach|main|u|1|setuid|-|0|2|a|",             // count too large
                      "clihost-jail-request 3|attach|main|u\x01|1|setuid|-|0|0|",           // control character
                      "clihost-jail-request 3|attach|main|u|1|setuid|-|99|0|",              // env count
                      "clihost-jail-request 3|list|main|u|1|setuid|-|0|0|",                 // list names none
                      "clihost-jail-request 3|kill||u|1|setuid|-|0|0|",                     // kill names one
                      "clihost-jail-request 3|kill|-x|u|1|setuid|-|0|0|",                   // session name
                      "clihost-jail-request 3|list||u|1|setuid|-|0|1|/bin/sh|",             // query + command
                      "clihost-jail-request 3|kill|main|u|1|setuid|-|1|TERM=a|0|"));        // query + env

TEST(Request, BoundsAreEnforced) {
    auto big = sample();
    big.kind = HandoverKind::command;
    big.command.assign(kMaxRequestArgs + 1, "x");
    EXPECT_FALSE(parse_request(format_request(big)).ok());
    EXPECT_FALSE(parse_request(std::string(kMaxRequestBytes + 1, 'a')).ok());
}

TEST(Reply, RoundTripsAndRefusesGarbage) {
    for (const Reply& r : {Reply{ReplyKind::ok, 0, ""}, Reply{ReplyKind::retry, 0, ""}, Reply{ReplyKind::exit, 130, ""},
                           Reply{ReplyKind::fail, 3, "protocol version 1"}}) {
        auto back = parse_reply(format_reply(r));
        ASSERT_TRUE(back.ok()) << format_reply(r);
        EXPECT_EQ(back.value().kind, r.kind);
        EXPECT_EQ(back.value().code, r.code);
        EXPECT_EQ(back.value().message, r.message);
    }
    // A message with a control character is sent as spaces.
    EXPECT_EQ(format_reply(Reply{ReplyKind::fail, 1, "a\x1b[2Jb"}), "fail 1 a [2Jb");
    for (const char* bad : {"", "exit", "exit 256", "exit -1", "fail 5 x", "fail 1", "okay", "fail 1 \x1b"})
        EXPECT_FALSE(parse_reply(bad).ok()) << bad;
}

TEST(Relay, OnlyTheTerminalsSignalsAndHangUp) {
    for (int sig : {SIGWINCH, SIGTSTP, SIGCONT, SIGINT, SIGQUIT}) {
        auto r = parse_relay(format_relay(Relay{false, sig}));
        ASSERT_TRUE(r.ok()) << sig;
        EXPECT_EQ(r.value().signal, sig);
    }
    EXPECT_TRUE(parse_relay("hup").value().hangup);
    EXPECT_EQ(parse_relay("hup").value().signal, SIGHUP);
    EXPECT_EQ(parse_relay("term").value().signal, SIGTERM);
    EXPECT_EQ(format_relay(Relay{true, SIGTERM}), "term");
    for (const char* bad : {"sig 9", "sig 19", "sig 15", "sig 1", "sig ", "sig 28x", "hangup", "term "})
        EXPECT_FALSE(parse_relay(bad).ok()) << bad;
}

TEST(Request, QueriesRoundTrip) {
    auto list = sample();
    list.kind = HandoverKind::list;
    list.session.clear();
    list.extra_env.clear();
    auto l = parse_request(format_request(list));
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l.value().kind, HandoverKind::list);
    EXPECT_TRUE(l.value().session.empty());
    EXPECT_TRUE(is_query(HandoverKind::list));
    auto kill = list;
    kill.kind = HandoverKind::kill;
    kill.session = "dev";
    auto k = parse_request(format_request(kill));
    ASSERT_TRUE(k.ok()) << k.error().message;
    EXPECT_EQ(k.value().kind, HandoverKind::kill);
    EXPECT_EQ(k.value().session, "dev");
    EXPECT_TRUE(is_query(HandoverKind::kill));
    EXPECT_FALSE(is_query(HandoverKind::attach));
    EXPECT_FALSE(is_query(HandoverKind::command));
}

TEST(Answer, RoundTripsRawTenantNames) {
    QueryAnswer a;
    a.kind = QueryAnswer::Kind::sessions;
    // The tenant's names, raw: escaping is the front's (tenant_output.hpp).
    a.sessions = {"main", "a\x1b[2Jb", "x y=z"};
    auto back = parse_answer(format_answer(a));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back.value().kind, QueryAnswer::Kind::sessions);
    EXPECT_EQ(back.value().sessions, a.sessions);
    QueryAnswer none;
    none.kind = QueryAnswer::Kind::sessions;
    ASSERT_TRUE(parse_answer(format_answer(none)).ok());
    EXPECT_TRUE(parse_answer(format_answer(none)).value().sessions.empty());
    for (auto k : {QueryAnswer::Kind::no_answer, QueryAnswer::Kind::no_session_jail}) {
        QueryAnswer q;
        q.kind = k;
        auto b = parse_answer(format_answer(q));
        ASSERT_TRUE(b.ok());
        EXPECT_EQ(b.value().kind, k);
    }
    QueryAnswer nk;
    nk.kind = QueryAnswer::Kind::not_killed;
    nk.said = "can't find session: =dev";
    auto b = parse_answer(format_answer(nk));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b.value().said, nk.said);
}

TEST(Answer, BoundsAreEnforced) {
    QueryAnswer many;
    many.kind = QueryAnswer::Kind::sessions;
    many.sessions.assign(kMaxAnswerSessions + 10, "s");
    const std::string msg = format_answer(many);
    ASSERT_TRUE(parse_answer(msg).ok());
    EXPECT_EQ(parse_answer(msg).value().sessions.size(), kMaxAnswerSessions);
    QueryAnswer long_names;
    long_names.kind = QueryAnswer::Kind::sessions;
    long_names.sessions.assign(10, std::string(kMaxAnswerBytes / 4, 'n'));
    EXPECT_LE(format_answer(long_names).size(), kMaxAnswerBytes);
    QueryAnswer said;
    said.kind = QueryAnswer::Kind::not_killed;
    said.said = std::string(kMaxAnswerSaid * 2, 'x');
    EXPECT_EQ(parse_answer(format_answer(said)).value().said.size(), kMaxAnswerSaid);
    std::string over = "answer|sessions|";
    for (std::size_t i = 0; i <= kMaxAnswerSessions; ++i) over += "s|";
    EXPECT_FALSE(parse_answer(with_nul(over)).ok());
    for (const char* bad : {"", "answer", "answer|", "answer|sessions", "answer|sessions||", "answer|what|",
                            "answer|no-answer|x|", "answer|not-killed|", "answer|not-killed|a\nb|", "ok"})
        EXPECT_FALSE(parse_answer(with_nul(bad)).ok()) << bad;
}

TEST(Answer, OfATmuxClient) {
    // list: one name a line; a failed or killed client: unknown.
    auto l = answer_of(HandoverKind::list, 0, "main\ndev\n", "");
    EXPECT_EQ(l.kind, QueryAnswer::Kind::sessions);
    EXPECT_EQ(l.sessions, (std::vector<std::string>{"main", "dev"}));
    EXPECT_EQ(answer_of(HandoverKind::list, 1, "main\n", "no server").kind, QueryAnswer::Kind::no_answer);
    // kill: done, with the sessions left (none: the session jail is ending).
    auto k = answer_of(HandoverKind::kill, 0, "", "");
    EXPECT_EQ(k.kind, QueryAnswer::Kind::sessions);
    EXPECT_TRUE(k.sessions.empty());
    auto nk = answer_of(HandoverKind::kill, 1, "", "can't find session: =x\nmore\n");
    EXPECT_EQ(nk.kind, QueryAnswer::Kind::not_killed);
    EXPECT_EQ(nk.said, "can't find session: =x");
    std::string lots;
    for (std::size_t i = 0; i < kMaxAnswerSessions + 5; ++i) lots += "s\n";
    EXPECT_EQ(answer_of(HandoverKind::list, 0, lots, "").sessions.size(), kMaxAnswerSessions);
}
