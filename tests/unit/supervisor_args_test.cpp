// clihost-jail-supervisor's command line (decide/supervisor_args.hpp): what
// the front and the launch write is read back whole, and nothing else is.
#include <gtest/gtest.h>

#include "decide/supervisor_args.hpp"

using namespace clihost;

namespace {
SupervisorArgs a_start() {
    SupervisorArgs a;
    a.tenant = "alice";
    a.uid = 1001;
    a.caller = "clihost";
    a.caller_uid = 999;
    a.session_jail = false;
    a.config_digest = "abc";
    a.caller_env = {{"TERM", "xterm-256color"}};
    return a;
}
}  // namespace

TEST(SupervisorArgs, AStartIsReadBackWholeAndInUnitOnlyWhenSaid) {
    const auto back = parse_supervisor_argv(supervisor_argv(a_start()));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back.value().tenant, "alice");
    EXPECT_EQ(back.value().uid, 1001u);
    EXPECT_FALSE(back.value().session_jail);
    EXPECT_EQ(back.value().caller_env.at("TERM"), "xterm-256color");
    EXPECT_FALSE(back.value().in_unit);
    SupervisorArgs unit = a_start();
    unit.in_unit = true;
    const auto words = supervisor_argv(unit);
    EXPECT_EQ(words.back(), "--in-unit");
    const auto in = parse_supervisor_argv(words);
    ASSERT_TRUE(in) << in.error().message;
    EXPECT_TRUE(in.value().in_unit);
}

TEST(SupervisorArgs, InUnitIsAStartsOnlyAndUnknownWordsAreRefused) {
    auto r = parse_supervisor_argv({"clihost-jail-supervisor", "stop", "--uid", "1001", "--in-unit"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Exit::usage);
    EXPECT_NE(r.error().message.find("--in-unit is start's only"), std::string::npos) << r.error().message;
    r = parse_supervisor_argv({"clihost-jail-supervisor", "start", "--uid", "1001", "--user", "alice",
                               "--session-jail", "--in-units"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Exit::usage);
}
