// The start-up reads of proc/supervise.hpp: read_until, which both the
// supervisor's report (read_report) and a watcher's bwrap --info-fd JSON
// go through, and read_report's verdicts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "base/unique_fd.hpp"
#include "proc/supervise.hpp"
#include "reason.hpp"

using namespace clihost;
using clihost::testing::refused_with;

namespace {

struct Pipe {
    UniqueFd r, w;
    Pipe() {
        int fds[2];
        EXPECT_EQ(::pipe(fds), 0);
        r = UniqueFd(fds[0]);
        w = UniqueFd(fds[1]);
    }
    void put(const std::string& s) { ASSERT_EQ(::write(w.get(), s.data(), s.size()), static_cast<ssize_t>(s.size())); }
};

}  // namespace

TEST(ReadUntil, StopsAtItsTerminatorWithoutWaitingForMore) {
    Pipe p;
    p.put("{\"child-pid\": 42}");
    const auto got = read_until(p.r.get(), '}', 4096, 5);
    EXPECT_FALSE(got.timed_out);
    EXPECT_EQ(got.text, "{\"child-pid\": 42}");
}

TEST(ReadUntil, EndOfFileEndsTheReadWithWhatCameBeforeIt) {
    Pipe p;
    p.put("{\"child-pid\": 4");
    p.w.reset();
    const auto got = read_until(p.r.get(), '}', 4096, 5);
    EXPECT_FALSE(got.timed_out);
    EXPECT_EQ(got.text, "{\"child-pid\": 4");
}

TEST(ReadUntil, ASilentWriterCostsTheDeadlineAndNoMore) {
    Pipe p;
    p.put("ok");  // no terminator, and the writer stays open
    const auto start = std::chrono::steady_clock::now();
    const auto got = read_until(p.r.get(), '\n', 2048, 1);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(got.timed_out);
    EXPECT_EQ(got.text, "ok");
    EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(ReadUntil, ATalkativeWriterIsCutAtTheBound) {
    Pipe p;
    p.put(std::string(5000, 'x'));
    const auto got = read_until(p.r.get(), '}', 4096, 5);
    EXPECT_FALSE(got.timed_out);
    EXPECT_GE(got.text.size(), 4096u);
    EXPECT_LT(got.text.size(), 4096u + 512u);
}

TEST(ReadReport, OkFailAndSilence) {
    {
        Pipe p;
        write_report(p.w.get(), ok_status());
        EXPECT_TRUE(read_report(p.r.get(), 5));
    }
    {
        Pipe p;
        write_report(p.w.get(), fail(Exit::refused, "the tenant is locked"));
        const auto st = read_report(p.r.get(), 5);
        EXPECT_TRUE(refused_with(st, Exit::refused, "the tenant is locked"));
    }
    {
        Pipe p;
        p.w.reset();
        EXPECT_TRUE(refused_with(read_report(p.r.get(), 5), Exit::internal, "ended without a report"));
    }
    {
        Pipe p;
        EXPECT_TRUE(refused_with(read_report(p.r.get(), 1), Exit::host, "did not start within 1 s"));
    }
    {
        Pipe p;  // stop's report: what it waits for is an end
        EXPECT_TRUE(refused_with(read_report(p.r.get(), 1, "the stop", "end"), Exit::host, "the stop did not end within 1 s"));
    }
}
