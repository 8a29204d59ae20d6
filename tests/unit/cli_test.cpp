// Command line and session names: valid/invalid pairs (minijail style).
#include <gtest/gtest.h>

#include "decide/cli.hpp"
#include "reason.hpp"

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
    const char* reason;  // a substring of the exact message: the row fails if another check refuses
};

class CliRefused : public ::testing::TestWithParam<BadArgs> {};

TEST_P(CliRefused, WithTheDocumentedExitCodeAndReason) {
    EXPECT_TRUE(clihost::testing::refused_with(parse(GetParam().args), GetParam().code, GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Table, CliRefused,
    ::testing::Values(
        BadArgs{"NoArgvAtAll", {}, Exit::usage, "missing command (try --help)"},
        BadArgs{"OnlyArgv0", {"x"}, Exit::usage, "missing command (try --help)"},
        BadArgs{"UnknownVerb", {"x", "shell"}, Exit::usage, "unknown command 'shell' (try --help)"},
        BadArgs{"MissingSession", {"x", "run", "--user", "a"}, Exit::usage, "--user and --session are required"},
        BadArgs{"MissingUser", {"x", "run", "--session", "s"}, Exit::usage, "--user and --session are required"},
        BadArgs{"UnknownOption", {"x", "run", "--user", "a", "--session", "s", "--shell"}, Exit::usage, "unknown or incomplete option"},
        BadArgs{"StrayArgument", {"x", "run", "--user", "a", "--session", "s", "bash"}, Exit::usage, "unexpected argument 'bash'"},
        BadArgs{"AbbreviatedUser", {"x", "run", "--use", "a", "--session", "s"}, Exit::usage, "unknown or abbreviated option"},
        BadArgs{"AbbreviatedSessionJoined", {"x", "run", "--user", "a", "--sess=s"}, Exit::usage, "unknown or abbreviated option"},
        BadArgs{"UserTwice", {"x", "run", "--user", "a", "--user", "b", "--session", "s"}, Exit::usage, "--user given twice"},
        BadArgs{"DashDashWithoutCommand", {"x", "run", "--user", "a", "--session", "s", "--"}, Exit::usage, "'--' must be followed by a command"},
        BadArgs{"KillWithCommand", {"x", "kill", "--user", "a", "--session", "s", "--", "sh"}, Exit::usage, "kill takes no command"},
        BadArgs{"CheckWithSession", {"x", "check", "--session", "s"}, Exit::usage, "check takes only --user"},
        BadArgs{"VersionWithExtra", {"x", "--version", "run"}, Exit::usage, "--version and --help take no arguments"},
        BadArgs{"SessionWithSlash", {"x", "run", "--user", "a", "--session", "a/b"}, Exit::refused, "invalid session name"},
        BadArgs{"SessionDotDot", {"x", "run", "--user", "a", "--session", ".."}, Exit::refused, "invalid session name"},
        BadArgs{"SessionSpace", {"x", "run", "--user", "a", "--session", "a b"}, Exit::refused, "invalid session name"},
        BadArgs{"SessionDash", {"x", "run", "--user", "a", "--session", "-t"}, Exit::refused, "invalid session name"},
        BadArgs{"SessionShellMeta", {"x", "run", "--user", "a", "--session", "a;id"}, Exit::refused, "invalid session name"},
        BadArgs{"SessionTooLong", {"x", "run", "--user", "a", "--session", std::string(65, 'a')}, Exit::refused, "invalid session name"},
        BadArgs{"UserWithSlash", {"x", "run", "--user", "../root", "--session", "s"}, Exit::refused, "invalid user name"},
        BadArgs{"UserDash", {"x", "run", "--user", "-a", "--session", "s"}, Exit::refused, "invalid user name"}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(Cli, TenMebibytesOfArgumentsAreRefused) {
    std::vector<std::string> a{"x", "run", "--user", "a", "--session", "s", "--"};
    a.push_back(std::string(10 << 20, 'A'));
    EXPECT_TRUE(clihost::testing::refused_with(parse(a), Exit::usage, "arguments too long (try --help)"));
}

TEST(Cli, TooManyArgumentsAreRefused) {
    std::vector<std::string> a{"x", "run", "--user", "a", "--session", "s", "--"};
    a.resize(300, "y");
    EXPECT_TRUE(clihost::testing::refused_with(parse(a), Exit::usage, "too many arguments (try --help)"));
}

TEST(Cli, ParserStateDoesNotLeakBetweenCalls) {
    ASSERT_TRUE(clihost::testing::refused_with(parse({"x", "run", "--bogus"}), Exit::usage, "unknown or incomplete option"));
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

TEST(Cli, ListTakesJsonAndNothingElseDoes) {
    auto r = parse({"x", "list", "--json"});
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r.value().json);
    auto u = parse({"x", "list", "--user", "a", "--json"});
    ASSERT_TRUE(u.ok()) << u.error().message;
    EXPECT_TRUE(u.value().json);
    EXPECT_FALSE(parse({"x", "list"}).value().json);
    for (const auto& bad : std::vector<std::vector<std::string>>{
             {"x", "run", "--user", "a", "--session", "s", "--json"},
             {"x", "list", "--json", "--json"},
             {"x", "list", "--js"},
             {"x", "stop", "--user", "a", "--json"}}) {
        auto e = parse(bad);
        ASSERT_FALSE(e.ok()) << bad.back();
        EXPECT_EQ(e.error().code, Exit::usage) << e.error().message;
    }
    EXPECT_EQ(parse({"x", "list", "--json", "--json"}).error().message, "--json given twice (try --help)");
    EXPECT_EQ(parse({"x", "list", "--js"}).error().message, "unknown or abbreviated option (try --help)");
}
