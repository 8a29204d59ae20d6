// The session jails' runtime records: exact format, strict parsing, and the
// start time read past a hostile command name.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "host/runtime_state.hpp"

using namespace clihost;

namespace {

SupervisorRecord sample() {
    return SupervisorRecord{"alice", 1001, 4242, 987654, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 1764763200};
}

}  // namespace

TEST(RuntimeState, RecordFormatIsOneExactLine) {
    EXPECT_EQ(format_record(sample()),
              "v4 alice 1001 4242 987654 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 1764763200 1001.sock\n");
}

// A record of a build before the owner model (no endpoint) is read as such:
// a front refuses it by name, `stop` can still end its session jail.
TEST(RuntimeState, PreviousFormatIsRecognised) {
    auto r = parse_record("v1 alice 1001 4242 987654 0f1e 1764763200\n");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().version, 1);
    auto old = sample();
    old.version = 1;
    EXPECT_EQ(format_record(old), "v1 alice 1001 4242 987654 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 1764763200\n");
    // A supervisor of protocol version 2 (before list and kill were queries).
    auto v2 = parse_record("v2 alice 1001 4242 987654 0f1e 1764763200 1001.sock\n");
    ASSERT_TRUE(v2.ok()) << v2.error().message;
    EXPECT_EQ(v2.value().version, 2);
    EXPECT_FALSE(speaks_our_protocol(v2.value()));
    // The supervisor of a build before the split: the same protocol, served.
    auto v3 = parse_record("v3 alice 1001 4242 987654 0f1e 1764763200 1001.sock\n");
    ASSERT_TRUE(v3.ok()) << v3.error().message;
    EXPECT_EQ(v3.value().version, 3);
    EXPECT_TRUE(speaks_our_protocol(v3.value()));
    EXPECT_LT(v3.value().version, kRecordVersion);  // `list --json`'s earlier_version
}

TEST(RuntimeState, RecordRoundTrips) {
    auto r = parse_record(format_record(sample()));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().tenant, "alice");
    EXPECT_EQ(r.value().uid, 1001u);
    EXPECT_EQ(r.value().pid, 4242);
    EXPECT_EQ(r.value().start_ticks, 987654u);
    EXPECT_EQ(r.value().boot_id, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    EXPECT_EQ(r.value().started, 1764763200);
}

class RecordRefused : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordRefused, IsNotBelieved) {
    auto r = parse_record(GetParam());
    ASSERT_FALSE(r.ok()) << GetParam();
    EXPECT_EQ(r.error().message, "malformed session record");
}

INSTANTIATE_TEST_SUITE_P(Table, RecordRefused,
                         ::testing::Values(
                             "",                                                          // empty
                             "v1 alice 1001 4242 987654 0f1e 1764763200",                 // no newline
                             "v5 alice 1001 4242 987654 0f1e 1764763200 1001.sock\n",     // unknown version
                             "v4 alice 1001 4242 987654 0f1e 1764763200\n",               // v4 without its endpoint
                             "v3 alice 1001 4242 987654 0f1e 1764763200\n",               // v3 without its endpoint
                             "v2 alice 1001 4242 987654 0f1e 1764763200\n",               // v2 without its endpoint
                             "v2 alice 1001 4242 987654 0f1e 1764763200 1002.sock\n",     // another tenant's endpoint
                             "v2 alice 1001 4242 987654 0f1e 1764763200 ../x.sock\n",     // a path
                             "v1 alice 0 4242 987654 0f1e 1764763200\n",                  // uid 0: never a tenant
                             "v1 alice 1001 1 987654 0f1e 1764763200\n",                  // pid 1: init
                             "v1 alice 1001 0 987654 0f1e 1764763200\n",                  // pid 0
                             "v1 alice 1001 -5 987654 0f1e 1764763200\n",                 // negative pid
                             "v1 ../etc 1001 4242 987654 0f1e 1764763200\n",              // not an account name
                             "v1 alice 1001 4242 987654 0F1E 1764763200\n",               // boot id not lower hex
                             "v1 alice 1001 4242 987654 0f1e/x 1764763200\n",             // boot id with a slash
                             "v1 alice 1001 4242 987654 0f1e 1764763200 extra\n",         // extra field
                             "v1  alice 1001 4242 987654 0f1e 1764763200\n",              // empty field
                             "v1 alice 1001 4242 98x654 0f1e 1764763200\n",               // junk number
                             "v1 alice 4294967295 4242 987654 0f1e 1764763200\n",         // (uid_t)-1
                             "v1 alice 1001 4242 987654 0f1e 1764763200\nv1 bob\n"));     // two lines

TEST(RuntimeState, StartTimeIsReadPastTheLastParenthesis) {
    // Fields: pid (comm) state ppid pgrp session tty tpgid flags minflt
    // cminflt majflt cmajflt utime stime cutime cstime priority nice
    // num_threads itrealvalue starttime ...
    const std::string rest = " S 1 2 3 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 200\n";
    EXPECT_EQ(parse_stat_start_time("77 (sleep)" + rest), 123456u);
    // A command name a tenant chose, with spaces and parentheses, shifts nothing.
    EXPECT_EQ(parse_stat_start_time("77 (a) S 1 2 3 ) (x)" + rest), 123456u);
    EXPECT_FALSE(parse_stat_start_time("77 (sleep) S 1 2").has_value());
    EXPECT_FALSE(parse_stat_start_time("no parenthesis").has_value());
}

TEST(RuntimeState, StateIsReadPastTheLastParenthesis) {
    EXPECT_EQ(parse_stat_state("77 (sleep) S 1 2 3"), 'S');
    EXPECT_EQ(parse_stat_state("77 (a) R (x) Z 1 2 3"), 'Z');
    EXPECT_EQ(parse_stat_state("77 (a) Z) S 1"), 'S');
    EXPECT_FALSE(parse_stat_state("77 (sleep)").has_value());
    EXPECT_FALSE(parse_stat_state("77 (sleep) ").has_value());
    EXPECT_FALSE(parse_stat_state("no parenthesis").has_value());
}

TEST(RuntimeState, AZombieSupervisorIsNotLive) {
    // A child of ours that exited and is not reaped yet: the same pid,
    // start time and boot, and a root-owned /proc entry when run as root.
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    SupervisorRecord r{"alice", 1001, child, 0, current_boot_id(), 0};
    std::string stat;
    for (int i = 0; i < 500; ++i) {
        std::ifstream f("/proc/" + std::to_string(child) + "/stat");
        std::getline(f, stat);
        if (parse_stat_state(stat) == 'Z') break;
        ::usleep(2000);
    }
    ASSERT_EQ(parse_stat_state(stat), 'Z') << stat;
    r.start_ticks = parse_stat_start_time(stat).value();
    EXPECT_FALSE(record_is_live(r));
    // The control: the same record for a live process of the same owner
    // (this one) is live when we are root, as a supervisor is.
    SupervisorRecord self{"alice", 1001, ::getpid(), own_start_ticks().value(), current_boot_id(), 0};
    EXPECT_EQ(record_is_live(self), ::geteuid() == 0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
}

TEST(RuntimeState, OwnStartTimeAndBootIdAreReadable) {
    EXPECT_TRUE(own_start_ticks().has_value());
    const std::string id = current_boot_id();
    EXPECT_EQ(id.size(), 36u) << id;
}

TEST(RuntimeState, AStaleRecordIsNotLive) {
    SupervisorRecord r = sample();
    r.boot_id = current_boot_id();
    r.pid = getpid();
    r.start_ticks = own_start_ticks().value() + 1;  // a reused pid: other start time
    EXPECT_FALSE(record_is_live(r));
    r.start_ticks = own_start_ticks().value();
    r.boot_id = "00000000-0000-0000-0000-000000000000";  // another boot
    EXPECT_FALSE(record_is_live(r));
}

TEST(RuntimeState, ThisProcessAsItsOwnRecordIsLiveWhenRoot) {
    // The positive control of the test above: the same record with this
    // process's own values is live (a supervisor is root; so is CI).
    ASSERT_EQ(geteuid(), 0u) << "run the unit tests as root, as tests/run.sh does";
    SupervisorRecord r = sample();
    r.boot_id = current_boot_id();
    r.pid = getpid();
    r.start_ticks = own_start_ticks().value();
    EXPECT_TRUE(record_is_live(r));
}

TEST(RuntimeState, AWriteReplacesATemporaryFileThatADeadProcessLeft) {
    // A supervisor SIGKILLed between creating its temporary file and the
    // rename leaves it under a name with its pid; a new supervisor that
    // gets the same pid must still write its record and settings (it
    // failed to start with "File exists").
    ASSERT_EQ(geteuid(), 0u) << "run the unit tests as root, as tests/run.sh does";
    auto dir = RuntimeDir::open();
    ASSERT_TRUE(dir.ok()) << dir.error().message;
    SupervisorRecord r = sample();
    r.uid = 3999999;  // no tenant's
    r.pid = getpid();
    const std::string uid = std::to_string(r.uid);
    const std::string pid = std::to_string(getpid());
    const int at = dir.value().fd();
    for (const std::string& stale : {uid + ".state.tmp" + pid, uid + ".settings.tmp" + pid}) {
        const int fd = openat(at, stale.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0) << stale;
        close(fd);
    }
    const Status wrote = dir.value().write(r);
    const Status wrote_settings = dir.value().write_settings(r, JailSettings{});
    const bool left = faccessat(at, (uid + ".state.tmp" + pid).c_str(), F_OK, 0) == 0 ||
                      faccessat(at, (uid + ".settings.tmp" + pid).c_str(), F_OK, 0) == 0;
    const auto read_back = dir.value().read(r.uid);
    for (const std::string& name : {uid + ".state", uid + ".settings", uid + ".state.tmp" + pid, uid + ".settings.tmp" + pid})
        unlinkat(at, name.c_str(), 0);
    EXPECT_TRUE(wrote.ok()) << wrote.error().message;
    EXPECT_TRUE(wrote_settings.ok()) << wrote_settings.error().message;
    EXPECT_FALSE(left);
    ASSERT_TRUE(read_back.has_value());
    EXPECT_EQ(read_back->pid, getpid());
}
