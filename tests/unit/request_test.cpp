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
    EXPECT_EQ(r.error().message, "protocol version 1 is not this supervisor's (2)");
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
    ::testing::Values("", "hello", "clihost-jail-request 2|attach|main|u|1|setuid|-|0|0",  // no final NUL
                      "clihost-jail-request 2|detach|main|u|1|setuid|-|0|0|",               // unknown kind
                      "clihost-jail-request 2|attach|-x|u|1|setuid|-|0|0|",                 // session name
                      "clihost-jail-request 2|attach|main|u|-1|setuid|-|0|0|",              // caller uid
                      "clihost-jail-request 2|attach|main|u|1|setuid|x|0|0|",               // SUDO_UID
                      "clihost-jail-request 2|attach|main|u|1|setuid|-|1|TERM=a/b|0|",      // env value
                      "clihost-jail-request 2|attach|main|u|1|setuid|-|1|LD_X-=1|0|",       // env name
                      "clihost-jail-request 2|attach|main|u|1|setuid|-|2|TERM=a|TERM=b|0|", // repeated
                      "clihost-jail-request 2|attach|main|u|1|setuid|-|0|1|/bin/sh|",       // attach + command
                      "clihost-jail-request 2|command|main|u|1|setuid|-|0|0|",              // command without one
                      "clihost-jail-request 2|attach|main|u|1|setuid|-|0|2|a|",             // count too large
                      "clihost-jail-request 2|attach|main|u\x01|1|setuid|-|0|0|",           // control character
                      "clihost-jail-request 2|attach|main|u|1|setuid|-|99|0|"));            // env count

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
