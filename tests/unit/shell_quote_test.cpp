// shell_quote: what `print` shows must mean, pasted into sh, exactly the argv
// that launch execs. So the words go through a real /bin/sh and come back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "child_process.hpp"
#include "decide/plan.hpp"

using namespace clihost;

namespace {

// Runs /bin/sh -c SCRIPT with an empty environment; returns its stdout, or
// "<sh failed>" if it did not exit 0.
std::string run_sh(const std::string& script) {
    const auto r = clihost::testing::run_in_child([&](int fd) {
        if (::dup2(fd, 1) != 1) ::_exit(127);
        const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
        char* no_env[] = {nullptr};
        ::execve("/bin/sh", const_cast<char**>(argv), no_env);
        ::_exit(127);
    });
    return r.exited_zero() ? r.output : "<sh failed>";
}

// Words a tenant name, session, command or PAM value could carry into a plan.
const std::vector<std::string> kWords{
    "plain/path-1.0", "", "a b", "it's", "''", "'", "$(id)", "`id`", "$HOME", "${IFS}", "a\nb", "a\tb",
    "\\", "\\'", "*", "?", "[a]", "~", "~root", "!x", "\"q\"", "a;b", "a|b", "a&b", "<x", ">x", "#c", "-c",
    "--user", "%s", "\xc3\xa4", "\x01\x7f", "x=y", "  lead", "trail  "};

}  // namespace

TEST(ShellQuote, RoundTripsThroughSh) {
    // printf '%s\0' WORD... prints each word as sh parsed it, NUL-terminated.
    std::string script = "printf '%s\\0'";
    std::string expected;
    for (const auto& w : kWords) {
        script += " " + shell_quote(w);
        expected += w + '\0';
    }
    EXPECT_EQ(run_sh(script), expected) << script;
}

TEST(ShellQuote, EachWordIsOneWordForSh) {
    for (const auto& w : kWords) {
        const std::string q = shell_quote(w);
        EXPECT_FALSE(q.empty()) << w;  // an empty word must still be a word: ''
        EXPECT_EQ(run_sh("set -- " + q + "; printf '%s' \"$#\""), "1") << q;
    }
}

TEST(ShellQuote, PlainWordsStayReadable) {
    EXPECT_EQ(shell_quote("plain/path-1.0"), "plain/path-1.0");
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

// Control: the same round trip with a naive quoter ('WORD', no escape for
// the quote itself) does not come back intact, so the test above can fail.
TEST(ShellQuote, ControlANaiveQuoterFailsTheRoundTrip) {
    std::string script = "printf '%s\\0'";
    std::string expected;
    for (const auto& w : kWords) {
        script += " '" + w + "'";
        expected += w + '\0';
    }
    EXPECT_NE(run_sh(script), expected);
}
