// The cgroup code against directory trees of the kernel's layout: v2
// (which this project's CI machines cannot mount with controllers) and v1.
// The real hierarchies are exercised by tests/integration/test_limits.py.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "host/cgroup.hpp"
#include "decide/config.hpp"
#include "decide/systemd_scope.hpp"

using namespace clihost;

namespace {

// What a jail's bwrap child does with TenantCgroup::open_jails (it writes
// "0"): here `what`, into every hierarchy's jails leaf.
void enter_jails(const TenantCgroup& cg, const std::string& what) {
    auto fds = cg.open_jails();
    ASSERT_TRUE(fds.ok()) << fds.error().message;
    ASSERT_FALSE(fds.value().empty());
    for (const auto& fd : fds.value()) {
        ASSERT_EQ(::write(fd.get(), what.data(), what.size()), static_cast<ssize_t>(what.size()));
        EXPECT_EQ(::fcntl(fd.get(), F_GETFD), FD_CLOEXEC);
    }
}

class Tree {
public:
    Tree() {
        char tmpl[] = "/tmp/clihost-cgroup-test.XXXXXX";
        root_ = ::mkdtemp(tmpl);
    }
    ~Tree() {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
    const std::string& root() const { return root_; }
    void dir(const std::string& rel) const { ::mkdir((root_ + "/" + rel).c_str(), 0755); }
    void file(const std::string& rel, const std::string& text = "") const { std::ofstream(root_ + "/" + rel) << text; }
    std::string read(const std::string& rel) const {
        std::ifstream in(root_ + "/" + rel);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

private:
    std::string root_;
};

// A v2 cgroup as the kernel makes it: the interface files a cgroup with
// memory, pids and cpu enabled by its parent has.
void v2_cgroup(const Tree& t, const std::string& rel, bool with_pids = true) {
    t.dir(rel);
    for (const char* f : {"cgroup.procs", "cgroup.subtree_control", "cgroup.kill", "cpu.weight", "memory.max",
                          "memory.high", "memory.swap.max", "memory.current", "memory.events"})
        t.file(rel + "/" + f);
    t.file(rel + "/cgroup.controllers", with_pids ? "cpu memory pids\n" : "cpu memory\n");
    if (with_pids) {
        t.file(rel + "/pids.max");
        t.file(rel + "/pids.current");
    }
}

// A cgroup file the code writes more than once (cgroup.subtree_control,
// where the kernel keeps every controller enabled; a plain file would keep
// only the last write): a FIFO whose reader keeps everything written. Writes
// that follow each other closely arrive as one stream; each write to
// subtree_control is one "+controller", so the stream splits at '+'.
class WriteLog {
public:
    explicit WriteLog(std::string path) : path_(std::move(path)) {
        ::unlink(path_.c_str());
        EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0) << path_;
        // Open for reading and writing: the pipe never sees its last writer
        // go (no end of file, nothing written between two opens is lost).
        fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
        EXPECT_GE(fd_, 0) << path_;
        reader_ = std::thread([this] {
            char buf[256];
            while (stream_.size() < 5 || stream_.compare(stream_.size() - 5, 5, kStop) != 0) {
                const ssize_t n = ::read(fd_, buf, sizeof buf);
                if (n <= 0) return;
                stream_.append(buf, static_cast<std::size_t>(n));
            }
            stream_.resize(stream_.size() - 5);
        });
    }
    ~WriteLog() { stop(); }
    // Every "+controller" written so far, in order (the reader stopped).
    std::vector<std::string> writes() {
        stop();
        std::vector<std::string> out;
        for (char c : stream_) {
            if (c == '+' || out.empty()) out.emplace_back();
            out.back() += c;
        }
        return out;
    }

private:
    static constexpr const char* kStop = "#stop";
    void stop() {
        if (!reader_.joinable()) return;
        EXPECT_EQ(::write(fd_, kStop, 5), 5);
        reader_.join();
        ::close(fd_);
    }
    std::string path_;
    int fd_{-1};
    std::string stream_;
    std::thread reader_;
};

const std::string kMeminfo = "MemTotal:        8388608 kB\nMemFree:         1 kB\n";

}  // namespace

TEST(Cgroup, V2IsFoundByItsControllersFile) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    const auto host = detect_cgroups(t.root(), false);
    EXPECT_EQ(host.version, CgroupVersion::v2);
    ASSERT_EQ(host.hierarchies.size(), 1u);
    EXPECT_EQ(host.hierarchies[0].mount, t.root());
    Tree empty;
    EXPECT_TRUE(detect_cgroups(empty.root(), false).hierarchies.empty());
    EXPECT_EQ(detect_cgroups(empty.root(), false).why_not, "no cgroup file system at " + empty.root());
}

TEST(Cgroup, V2WritesLimitsOnTheJailsLeafBeforeAnyProcessEnters) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    t.file("cgroup.subtree_control");
    v2_cgroup(t, "clihost-jail");
    v2_cgroup(t, "clihost-jail/1234");
    v2_cgroup(t, "clihost-jail/1234/supervisor");
    v2_cgroup(t, "clihost-jail/1234/jails");
    v2_cgroup(t, "clihost-jail/1234/net");
    const Limits l = parse_config("[limits]\nmemory_max = 1G\ntasks_max = 100\ncpu_weight = 50\n").value().limits;
    auto cg = TenantCgroup::setup(detect_cgroups(t.root(), false), l, 1234, kMeminfo);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_TRUE(cg.value().placed());
    EXPECT_EQ(cg.value().path(), "/clihost-jail/1234");
    EXPECT_EQ(t.read("clihost-jail/1234/jails/memory.max"), "1073741824");
    EXPECT_EQ(t.read("clihost-jail/1234/jails/memory.high"), "max");
    EXPECT_EQ(t.read("clihost-jail/1234/jails/memory.swap.max"), "0");
    EXPECT_EQ(t.read("clihost-jail/1234/net/memory.max"), "134217728");
    EXPECT_EQ(t.read("clihost-jail/1234/jails/pids.max"), "100");
    EXPECT_EQ(t.read("clihost-jail/1234/cpu.weight"), "50");
    // The supervisor's leaf gets no limit, and nothing entered either leaf.
    EXPECT_EQ(t.read("clihost-jail/1234/supervisor/memory.max"), "");
    EXPECT_EQ(t.read("clihost-jail/1234/jails/cgroup.procs"), "");
    // Each level hands the controllers down (the last one written here).
    EXPECT_EQ(t.read("clihost-jail/1234/cgroup.subtree_control").rfind("+cpu", 0), 0u);
    enter_jails(cg.value(), "4242");
    EXPECT_EQ(t.read("clihost-jail/1234/jails/cgroup.procs"), "4242");
    ASSERT_TRUE(cg.value().enter_supervisor(4343).ok());
    EXPECT_EQ(t.read("clihost-jail/1234/supervisor/cgroup.procs"), "4343");
}

// Where systemd is PID 1 the tenant's node is its delegated transient scope
// (host/placement.cpp): on v2 the supervisor enters its leaf first, then the
// scope hands its controllers down and the jails' leaf gets the limits.
TEST(Cgroup, V2LeavesInsideTheTenantsSystemdScope) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    t.file("cgroup.subtree_control");
    const std::string scope = tenant_scope_cgroup(1234);
    v2_cgroup(t, "clihost.slice");
    v2_cgroup(t, "clihost.slice/clihost-jail.slice");
    v2_cgroup(t, scope);
    v2_cgroup(t, scope + "/supervisor");
    v2_cgroup(t, scope + "/jails");
    v2_cgroup(t, scope + "/net");
    ASSERT_TRUE(make_cgroup(t.root(), scope + "/supervisor").ok());
    ASSERT_TRUE(enter_cgroup(t.root() + "/" + scope + "/supervisor").ok());
    EXPECT_EQ(t.read(scope + "/supervisor/cgroup.procs"), std::to_string(::getpid()));
    const Limits l = parse_config("[limits]\nmemory_max = 1G\ntasks_max = 100\n").value().limits;
    const auto host = detect_cgroups(t.root(), false);
    auto cg = TenantCgroup::setup_at(host, l, scope, kMeminfo);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_EQ(cg.value().path(), "/clihost.slice/clihost-jail.slice/clihost-jail-1234.scope");
    EXPECT_EQ(t.read(scope + "/jails/memory.max"), "1073741824");
    EXPECT_EQ(t.read(scope + "/jails/pids.max"), "100");
    EXPECT_EQ(t.read(scope + "/supervisor/memory.max"), "");
    EXPECT_EQ(t.read(scope + "/cgroup.subtree_control").rfind("+cpu", 0), 0u);
    EXPECT_TRUE(TenantCgroup::open_at(host, scope).placed());
    EXPECT_FALSE(TenantCgroup::open(host, "clihost-jail", 1234).placed());
}

TEST(Cgroup, V2UsageKillAndOpen) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    v2_cgroup(t, "p");
    v2_cgroup(t, "p/7");
    v2_cgroup(t, "p/7/supervisor");
    v2_cgroup(t, "p/7/jails");
    v2_cgroup(t, "p/7/net");
    t.file("p/7/jails/memory.current", "1048576\n");
    t.file("p/7/jails/pids.current", "12\n");
    t.file("p/7/jails/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
    const auto host = detect_cgroups(t.root(), false);
    const TenantCgroup cg = TenantCgroup::open(host, "p", 7);
    ASSERT_TRUE(cg.placed());
    const auto u = cg.usage();
    EXPECT_EQ(u.memory, 1048576u);
    EXPECT_EQ(u.tasks, 12u);
    EXPECT_EQ(u.oom_kills, 1u);
    EXPECT_FALSE(u.memory_anon) << "no memory.stat: unknown, not 0";
    // stop's kill is cgroup.kill, one write; the leaf is then empty.
    ASSERT_TRUE(cg.kill_jails().ok());
    EXPECT_EQ(t.read("p/7/jails/cgroup.kill"), "1");
    EXPECT_FALSE(TenantCgroup::open(host, "p", 8).placed());
}

// list's memory_anon and memory_file: the jails' memory.stat, read from a
// real kernel's layout (v2: anon/file; v1: the hierarchical totals, not the
// cgroup's own rss/cache, which leave out the cgroups below it).
TEST(Cgroup, MemorySplitSeparatesAnonymousMemoryFromThePageCache) {
    const std::string v2 = "anon 52428800\nfile 1140850688\nkernel 4096000\nkernel_stack 16384\n"
                           "anon_thp 0\nfile_mapped 1024\nfile_dirty 0\nshmem 4096\n";
    EXPECT_EQ(memory_split(v2, CgroupVersion::v2).anon, 52428800u);
    EXPECT_EQ(memory_split(v2, CgroupVersion::v2).file, 1140850688u);
    const std::string v1 = "cache 4096\nrss 8192\nrss_huge 0\nshmem 0\nmapped_file 0\n"
                           "total_cache 1140850688\ntotal_rss 52428800\ntotal_rss_huge 2097152\n"
                           "total_shmem 4096\n";
    EXPECT_EQ(memory_split(v1, CgroupVersion::v1).anon, 52428800u);
    EXPECT_EQ(memory_split(v1, CgroupVersion::v1).file, 1140850688u);
    // A key missing (an older kernel, a truncated read) is unknown, not 0.
    EXPECT_FALSE(memory_split("anon_thp 0\nfile_mapped 9\n", CgroupVersion::v2).anon);
    EXPECT_FALSE(memory_split("anon_thp 0\nfile_mapped 9\n", CgroupVersion::v2).file);
    EXPECT_FALSE(memory_split(v2, CgroupVersion::v1).anon);
}

TEST(Cgroup, UsageReadsTheJailsMemoryStatOnV2AndV1) {
    {
        Tree t;
        t.file("cgroup.controllers", "cpu memory pids\n");
        for (const char* d : {"p", "p/7", "p/7/supervisor", "p/7/jails"}) v2_cgroup(t, d);
        t.file("p/7/jails/memory.current", "1192595456\n");
        t.file("p/7/jails/memory.stat", "anon 51744768\nfile 1140850688\n");
        const auto u = TenantCgroup::open(detect_cgroups(t.root(), false), "p", 7).usage();
        EXPECT_EQ(u.memory, 1192595456u);
        EXPECT_EQ(u.memory_anon, 51744768u);
        EXPECT_EQ(u.memory_file, 1140850688u);
    }
    Tree t;
    for (const char* c : {"memory", "pids"}) {
        t.dir(c);
        t.file(std::string(c) + "/cgroup.procs");
        for (const char* d : {"/p", "/p/9", "/p/9/supervisor", "/p/9/jails"}) {
            t.dir(std::string(c) + d);
            t.file(std::string(c) + d + "/cgroup.procs");
        }
    }
    t.file("memory/p/9/jails/memory.usage_in_bytes", "1192595456\n");
    t.file("memory/p/9/jails/memory.stat", "cache 0\nrss 0\ntotal_cache 1140850688\ntotal_rss 51744768\n");
    const auto u = TenantCgroup::open(detect_cgroups(t.root(), false), "p", 9).usage();
    EXPECT_EQ(u.memory, 1192595456u);
    EXPECT_EQ(u.memory_anon, 51744768u);
    EXPECT_EQ(u.memory_file, 1140850688u);
}

TEST(Cgroup, V2WithoutThePidsControllerLeavesTasksMaxToRlimitNproc) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory\n");
    v2_cgroup(t, "p", false);
    v2_cgroup(t, "p/7", false);
    v2_cgroup(t, "p/7/supervisor", false);
    v2_cgroup(t, "p/7/jails", false);
    v2_cgroup(t, "p/7/net", false);
    const auto host = detect_cgroups(t.root(), false);
    // Explicit or default, tasks_max is then RLIMIT_NPROC's (JailPlacement):
    // a warning, no refusal, and the other limits are written.
    for (const char* text : {"[limits]\ncgroup_parent = p\ntasks_max = 100\n", "[limits]\ncgroup_parent = p\n"}) {
        const Limits l = parse_config(text).value().limits;
        auto warned = TenantCgroup::setup(host, l, 7, kMeminfo);
        ASSERT_TRUE(warned.ok()) << warned.error().message;
        EXPECT_EQ(warned.value().warnings(),
                  std::vector<std::string>{"tasks_max " + std::to_string(l.tasks_max) +
                                           " only as RLIMIT_NPROC (per uid) (the controller is not available under p)"});
        EXPECT_NE(t.read("p/7/jails/memory.max"), "");
    }
    // An explicit memory_max where the memory controller is missing refuses.
    Tree no_memory;
    no_memory.file("cgroup.controllers", "cpu pids\n");
    no_memory.dir("p");
    for (const char* d : {"p/7", "p/7/supervisor", "p/7/jails"}) no_memory.dir(d);
    const Limits mem = parse_config("[limits]\ncgroup_parent = p\nmemory_max = 1G\n").value().limits;
    auto refused = TenantCgroup::setup(detect_cgroups(no_memory.root(), false), mem, 7, kMeminfo);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, Exit::host);
    EXPECT_EQ(refused.error().message,
              "memory_max is set in [limits] but cannot be enforced here (the controller is not available under p)");
}

TEST(Cgroup, APercentageIsOfTheLowerOfTheHostsAndTheContainersMemory) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    v2_cgroup(t, "ct");
    t.file("ct/memory.max", "2147483648\n");
    const auto host = detect_cgroups(t.root(), false);
    EXPECT_EQ(available_memory(host, "ct/clihost-jail", kMeminfo), std::uint64_t{2} << 30);
    EXPECT_EQ(available_memory(host, "other", kMeminfo), std::uint64_t{8} << 30);
}

TEST(Cgroup, V1UsesEachControllersHierarchyAndTheFreezerToKill) {
    Tree t;
    for (const char* c : {"memory", "pids", "cpu", "freezer"}) {
        t.dir(c);
        t.file(std::string(c) + "/cgroup.procs");
        for (const char* d : {"/p", "/p/9", "/p/9/supervisor", "/p/9/jails", "/p/9/net"}) {
            t.dir(std::string(c) + d);
            t.file(std::string(c) + d + "/cgroup.procs");
        }
    }
    for (const char* f : {"memory.limit_in_bytes", "memory.soft_limit_in_bytes", "memory.memsw.limit_in_bytes",
                          "memory.swappiness"})
        t.file(std::string("memory/p/9/jails/") + f);
    t.file("memory/p/9/jails/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    t.file("memory/p/9/net/memory.limit_in_bytes");
    t.file("pids/p/9/jails/pids.max");
    t.file("cpu/p/9/cpu.shares");
    t.file("freezer/p/9/jails/freezer.state", "THAWED\n");
    const auto host = detect_cgroups(t.root(), false);
    EXPECT_EQ(host.version, CgroupVersion::v1);
    ASSERT_EQ(host.hierarchies.size(), 4u);
    const Limits l = parse_config("[limits]\ncgroup_parent = p\nmemory_max = 1G\ntasks_max = 100\n").value().limits;
    auto cg = TenantCgroup::setup(host, l, 9, kMeminfo);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_EQ(t.read("memory/p/9/jails/memory.limit_in_bytes"), "1073741824");
    EXPECT_EQ(t.read("memory/p/9/jails/memory.memsw.limit_in_bytes"), "1073741824");
    // slirp4netns's leaf: an eighth of memory_max.
    EXPECT_EQ(t.read("memory/p/9/net/memory.limit_in_bytes"), "134217728");
    EXPECT_EQ(t.read("pids/p/9/jails/pids.max"), "100");
    EXPECT_EQ(t.read("cpu/p/9/cpu.shares"), "1024");
    EXPECT_EQ(cg.value().usage().oom_kills, 2u);
    enter_jails(cg.value(), "0");
    for (const char* c : {"memory", "pids", "cpu", "freezer"})
        EXPECT_EQ(t.read(std::string(c) + "/p/9/jails/cgroup.procs"), "0") << c;
    t.file("freezer/p/9/jails/cgroup.procs");
    for (const char* c : {"memory", "pids", "cpu"}) t.file(std::string(c) + "/p/9/jails/cgroup.procs");
    ASSERT_TRUE(cg.value().kill_jails().ok());
    // Frozen, killed, thawed: the last state written is THAWED.
    EXPECT_EQ(t.read("freezer/p/9/jails/freezer.state").rfind("THAWED", 0), 0u);
}

TEST(Cgroup, V2EnablesEachAvailableControllerForTheLevelBelowAndNoneInTheLeaves) {
    Tree t;
    // The root has more controllers than we use (io, cpuset: never
    // enabled); the parent was handed only memory and pids by its own
    // parent.
    t.file("cgroup.controllers", "cpuset cpu io memory pids\n");
    v2_cgroup(t, "p");
    t.file("p/cgroup.controllers", "memory pids\n");
    v2_cgroup(t, "p/7");
    t.file("p/7/cgroup.controllers", "memory pids\n");
    v2_cgroup(t, "p/7/supervisor");
    v2_cgroup(t, "p/7/jails");
    v2_cgroup(t, "p/7/net");
    WriteLog root(t.root() + "/cgroup.subtree_control");
    WriteLog parent(t.root() + "/p/cgroup.subtree_control");
    WriteLog tenant(t.root() + "/p/7/cgroup.subtree_control");
    WriteLog supervisor(t.root() + "/p/7/supervisor/cgroup.subtree_control");
    WriteLog jails(t.root() + "/p/7/jails/cgroup.subtree_control");
    const Limits l = parse_config("[limits]\ncgroup_parent = p\n").value().limits;
    auto cg = TenantCgroup::setup(detect_cgroups(t.root(), false), l, 7, kMeminfo);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_EQ(root.writes(), (std::vector<std::string>{"+memory", "+pids", "+cpu"}));
    EXPECT_EQ(parent.writes(), (std::vector<std::string>{"+memory", "+pids"}));
    EXPECT_EQ(tenant.writes(), (std::vector<std::string>{"+memory", "+pids"}));
    // The leaves hold the processes: no controller enabled below them.
    EXPECT_TRUE(supervisor.writes().empty());
    EXPECT_TRUE(jails.writes().empty());
}

TEST(Cgroup, V2PutsProcessesOnlyInLeavesNeverInANodeWithControllersEnabled) {
    // The kernel's no-internal-process rule: a cgroup that enables
    // controllers for its children (subtree_control) holds no process.
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    t.file("cgroup.subtree_control");
    for (const char* d : {"p", "p/7", "p/7/supervisor", "p/7/jails", "p/7/net"}) v2_cgroup(t, d);
    const auto host = detect_cgroups(t.root(), false);
    const Limits l = parse_config("[limits]\ncgroup_parent = p\n").value().limits;
    auto cg = TenantCgroup::setup(host, l, 7, kMeminfo);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    ASSERT_TRUE(cg.value().enter_supervisor(100).ok());
    enter_jails(cg.value(), "200");
    // The same through the open() a later command (stop, list) uses.
    enter_jails(TenantCgroup::open(host, "p", 7), "300");
    for (const char* node : {"p", "p/7"}) {
        EXPECT_NE(t.read(std::string(node) + "/cgroup.subtree_control"), "") << node;
        EXPECT_EQ(t.read(std::string(node) + "/cgroup.procs"), "") << node;
    }
    EXPECT_EQ(t.read("cgroup.procs"), "");
    EXPECT_EQ(t.read("p/7/supervisor/cgroup.procs"), "100");
    EXPECT_EQ(t.read("p/7/jails/cgroup.procs"), "300");
    for (const char* leaf : {"p/7/supervisor", "p/7/jails"}) EXPECT_EQ(t.read(std::string(leaf) + "/cgroup.subtree_control"), "") << leaf;
}

TEST(Cgroup, V2WritesMaxForNoLimitAndTheHighMark) {
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    t.file("cgroup.subtree_control");
    for (const char* d : {"p", "p/7", "p/7/supervisor", "p/7/jails", "p/7/net"}) v2_cgroup(t, d);
    const Limits l =
        parse_config("[limits]\ncgroup_parent = p\nmemory_max = max\nmemory_high = 512M\nmemory_swap_max = max\n"
                     "tasks_max = max\ncpu_weight = 10000\n")
            .value()
            .limits;
    auto cg = TenantCgroup::setup(detect_cgroups(t.root(), false), l, 7, kMeminfo);
    ASSERT_TRUE(cg.ok()) << cg.error().message;
    EXPECT_TRUE(cg.value().warnings().empty());
    EXPECT_EQ(t.read("p/7/jails/memory.max"), "max");
    EXPECT_EQ(t.read("p/7/jails/memory.high"), "536870912");
    EXPECT_EQ(t.read("p/7/jails/memory.swap.max"), "max");
    EXPECT_EQ(t.read("p/7/jails/pids.max"), "max");
    EXPECT_EQ(t.read("p/7/cpu.weight"), "10000");
    // Only the tenant's node carries the weight (between tenants); the leaves none.
    EXPECT_EQ(t.read("p/7/jails/cpu.weight"), "");
    EXPECT_EQ(t.read("p/7/supervisor/cpu.weight"), "");
    // check's read-back is the kernel's files.
    const auto applied = cg.value().applied();
    const std::vector<std::pair<std::string, std::string>> want{
        {"jails/memory.max", "max"}, {"jails/memory.high", "536870912"}, {"jails/memory.swap.max", "max"},
        {"jails/pids.max", "max"},   {"cpu.weight", "10000"}};
    EXPECT_EQ(applied, want);
}

TEST(Cgroup, V2WithoutCgroupKillStopsForksWithPidsMaxZero) {
    // Before Linux 5.14 there is no cgroup.kill: pids.max 0, then SIGKILL
    // over cgroup.procs until it is empty (here it is).
    Tree t;
    t.file("cgroup.controllers", "cpu memory pids\n");
    for (const char* d : {"p", "p/7", "p/7/supervisor", "p/7/jails", "p/7/net"}) v2_cgroup(t, d);
    ::unlink((t.root() + "/p/7/jails/cgroup.kill").c_str());
    const TenantCgroup cg = TenantCgroup::open(detect_cgroups(t.root(), false), "p", 7);
    ASSERT_TRUE(cg.placed());
    ASSERT_TRUE(cg.kill_jails().ok());
    EXPECT_EQ(t.read("p/7/jails/pids.max"), "0");
    EXPECT_FALSE(std::filesystem::exists(t.root() + "/p/7/jails/cgroup.kill"));
    // And the supervisor's leaf is never touched by the kill.
    EXPECT_EQ(t.read("p/7/supervisor/pids.max"), "");
}

// A hybrid host's cgroup2 hierarchy (no controller) is one of a v1 host's:
// a process is in one of its cgroups all the same, which cgroup.freeze can
// hold still, so the tenant's nodes and the lock holders' leaf go there too.
TEST(Cgroup, AHybridsUnifiedHierarchyIsOneOfAV1Hosts) {
    Tree t;
    for (const char* c : {"memory", "pids", "cpu", "freezer"}) {
        t.dir(c);
        t.file(std::string(c) + "/cgroup.procs");
    }
    EXPECT_EQ(detect_cgroups(t.root(), false).hierarchies.size(), 4u);  // no unified mount: the four
    t.dir("unified");
    t.file("unified/cgroup.procs");
    const auto host = detect_cgroups(t.root(), false);
    EXPECT_EQ(host.version, CgroupVersion::v1);
    ASSERT_EQ(host.hierarchies.size(), 5u);
    EXPECT_EQ(host.hierarchies.back().controller, "");
    EXPECT_EQ(host.hierarchies.back().mount, t.root() + "/unified");
    // Without a v1 controller it is not looked for: no cgroup file system.
    Tree bare;
    bare.dir("unified");
    bare.file("unified/cgroup.procs");
    EXPECT_TRUE(detect_cgroups(bare.root(), false).hierarchies.empty());
}

// The lock holders' leaf, PARENT/helper (host/placement.cpp,
// place_lock_holder): each component made where absent; a component that
// is not a directory of root's is refused, nothing made below it.
TEST(Cgroup, ACgroupIsMadeComponentByComponentOnlyOfRootsDirectories) {
    Tree t;
    t.dir("freezer");
    t.dir("freezer/p");
    ASSERT_TRUE(make_cgroup(t.root() + "/freezer", "p/q/helper").ok());
    EXPECT_TRUE(std::filesystem::is_directory(t.root() + "/freezer/p/q/helper"));
    // The kernel makes a cgroup's files with it; here it is made by hand.
    t.file("freezer/p/q/helper/cgroup.procs");
    ASSERT_TRUE(enter_cgroup(t.root() + "/freezer/p/q/helper").ok());
    EXPECT_EQ(t.read("freezer/p/q/helper/cgroup.procs"), std::to_string(::getpid()));
    t.dir("memory");
    t.file("memory/p");  // not a directory
    auto st = make_cgroup(t.root() + "/memory", "p/q/helper");
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("memory/p is not a directory of root's"), std::string::npos) << st.error().message;
    EXPECT_FALSE(std::filesystem::exists(t.root() + "/memory/p/q"));
}

// `stop` removes a systemd scope's leaves, never the scope's own cgroup in
// cgroup2 (a hybrid's here), where systemd learns the scope is empty: a
// scope whose cgroup went first never ended (the systemd suite, about one
// run in ten). In a v1 controller's hierarchy an empty one goes, as before.
TEST(Cgroup, RemovingAScopesLeavesKeepsTheScopesCgroup2Node) {
    Tree t;
    const std::string scope = tenant_scope_cgroup(1234);
    for (const char* h : {"freezer", "unified"}) {
        t.dir(h);
        t.file(std::string(h) + "/cgroup.procs");
        std::filesystem::create_directories(t.root() + "/" + h + "/" + scope + "/jails");
        std::filesystem::create_directories(t.root() + "/" + h + "/" + scope + "/supervisor");
    }
    const auto host = detect_cgroups(t.root(), false);
    ASSERT_EQ(host.hierarchies.size(), 2u);
    const TenantCgroup cg = TenantCgroup::open_at(host, scope);
    ASSERT_TRUE(cg.placed());
    ASSERT_TRUE(cg.remove().ok());
    EXPECT_FALSE(std::filesystem::exists(t.root() + "/unified/" + scope + "/jails"));
    EXPECT_FALSE(std::filesystem::exists(t.root() + "/unified/" + scope + "/supervisor"));
    EXPECT_TRUE(std::filesystem::is_directory(t.root() + "/unified/" + scope));
    EXPECT_FALSE(std::filesystem::exists(t.root() + "/freezer/" + scope));
}
