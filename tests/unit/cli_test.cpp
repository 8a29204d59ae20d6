// Command line and session names: valid/invalid pairs (minijail style).
#include <gtest/gtest.h>

#include "cli.hpp"

using namespace clihost;

namespace {
Result<CommandLine> parse(std::vector<std::string> a) { return parse_command_line(a); }
}  // namespace

TEST(Cli, RunWithUserAndSession) {
    auto r = parse({"clihost-jail", "run", "--user", "alice", "--session", "main"});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().verb, Verb::run);
    EXPECT_EQ(*r.value().user, "alice");
    EXPECT_EQ(*r.value().session, "main");
    EXPECT_TRUE(r.value().command.empty());
}

TEST(Cli, CommandAfterDashDashKeepsItsOwnOptions) {
    auto r = parse({"x", "run", "--user=alice", "--session=s", "--", "ls", "--user", "-la"});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().command, (std::vector<std::string>{"ls", "--user", "-la"}));
}

TEST(Cli, KillCheckPrintVersionHelp) {
    EXPECT_EQ(parse({"x", "kill", "--user", "a", "--session", "s"}).value().verb, Verb::kill);
    EXPECT_EQ(parse({"x", "check"}).value().verb, Verb::check);
    EXPECT_EQ(*parse({"x", "check", "--user", "a"}).value().user, "a");
    EXPECT_EQ(parse({"x", "print", "--user", "a", "--session", "s", "--", "true"}).value().command.size(), 1u);
    EXPECT_EQ(parse({"x", "--version"}).value().verb, Verb::version);
    EXPECT_EQ(parse({"x", "--help"}).value().verb, Verb::help);
}

struct BadArgs {
    const char* name;
    std::vector<std::string> args;
    Exit code;
};

class CliRefused : public ::testing::TestWithParam<BadArgs> {};

TEST_P(CliRefused, WithTheDocumentedExitCode) {
    auto r = parse(GetParam().args);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, GetParam().code);
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliRefused,
    ::testing::Values(
        BadArgs{"NoArgvAtAll", {}, Exit::usage},
        BadArgs{"OnlyArgv0", {"x"}, Exit::usage},
        BadArgs{"UnknownVerb", {"x", "shell"}, Exit::usage},
        BadArgs{"MissingSession", {"x", "run", "--user", "a"}, Exit::usage},
        BadArgs{"MissingUser", {"x", "run", "--session", "s"}, Exit::usage},
        BadArgs{"UnknownOption", {"x", "run", "--user", "a", "--session", "s", "--shell"}, Exit::usage},
        BadArgs{"StrayArgument", {"x", "run", "--user", "a", "--session", "s", "bash"}, Exit::usage},
        BadArgs{"AbbreviatedUser", {"x", "run", "--use", "a", "--session", "s"}, Exit::usage},
        BadArgs{"AbbreviatedSessionJoined", {"x", "run", "--user", "a", "--sess=s"}, Exit::usage},
        BadArgs{"UserTwice", {"x", "run", "--user", "a", "--user", "b", "--session", "s"}, Exit::usage},
        BadArgs{"DashDashWithoutCommand", {"x", "run", "--user", "a", "--session", "s", "--"}, Exit::usage},
        BadArgs{"KillWithCommand", {"x", "kill", "--user", "a", "--session", "s", "--", "sh"}, Exit::usage},
        BadArgs{"CheckWithSession", {"x", "check", "--session", "s"}, Exit::usage},
        BadArgs{"VersionWithExtra", {"x", "--version", "run"}, Exit::usage},
        BadArgs{"SessionWithSlash", {"x", "run", "--user", "a", "--session", "a/b"}, Exit::refused},
        BadArgs{"SessionDotDot", {"x", "run", "--user", "a", "--session", ".."}, Exit::refused},
        BadArgs{"SessionSpace", {"x", "run", "--user", "a", "--session", "a b"}, Exit::refused},
        BadArgs{"SessionDash", {"x", "run", "--user", "a", "--session", "-t"}, Exit::refused},
        BadArgs{"SessionShellMeta", {"x", "run", "--user", "a", "--session", "a;id"}, Exit::refused},
        BadArgs{"SessionTooLong", {"x", "run", "--user", "a", "--session", std::string(65, 'a')}, Exit::refused},
        BadArgs{"UserWithSlash", {"x", "run", "--user", "../root", "--session", "s"}, Exit::refused},
        BadArgs{"UserDash", {"x", "run", "--user", "-a", "--session", "s"}, Exit::refused}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Cli, TenMebibytesOfArgumentsAreRefused) {
    std::vector<std::string> a{"x", "run", "--user", "a", "--session", "s", "--"};
    a.push_back(std::string(10 << 20, 'A'));
    auto r = parse(a);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Exit::usage);
}

TEST(Cli, TooManyArgumentsAreRefused) {
    std::vector<std::string> a{"x", "run", "--user", "a", "--session", "s", "--"};
    a.resize(300, "y");
    EXPECT_FALSE(parse(a).ok());
}

TEST(Cli, ParserStateDoesNotLeakBetweenCalls) {
    ASSERT_FALSE(parse({"x", "run", "--bogus"}).ok());
    EXPECT_TRUE(parse({"x", "run", "--user", "a", "--session", "s"}).ok());
    EXPECT_TRUE(parse({"x", "run", "--user", "a", "--session", "s"}).ok());
}

TEST(SessionName, ValidAndInvalid) {
    for (const char* ok : {"a", "main", "A-b_c.9", "x-"}) EXPECT_TRUE(is_valid_session_name(ok)) << ok;
    EXPECT_TRUE(is_valid_session_name(std::string(64, 'z')));
    for (const char* bad : {"", "-a", ".a", "a/b", "a b", "a:b", "a$b", "a\nb", "ä", "a*"})
        EXPECT_FALSE(is_valid_session_name(bad)) << bad;
    EXPECT_FALSE(is_valid_session_name(std::string(65, 'z')));
}
