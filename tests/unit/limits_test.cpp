// [limits]: parsing, resolution, the enforce-or-refuse decision and the
// cgroup files each limit is written to (v1 and v2).
#include <gtest/gtest.h>

#include <algorithm>

#include "decide/config.hpp"
#include "decide/limits.hpp"
#include "reason.hpp"

using namespace clihost;

namespace {
constexpr std::uint64_t G = std::uint64_t{1} << 30;
constexpr std::uint64_t M = std::uint64_t{1} << 20;
}  // namespace

TEST(Limits, DefaultsProtectTheHostWithoutSurprisingATenant) {
    const Limits l = parse_config("").value().limits;
    EXPECT_EQ(l.cgroup_parent, "clihost-jail");
    EXPECT_EQ(l.memory_max, (MemoryAmount{MemoryAmount::Kind::percent, 50}));
    EXPECT_EQ(l.memory_high, MemoryAmount{});
    EXPECT_EQ(l.memory_swap_max, (MemoryAmount{MemoryAmount::Kind::bytes, 0}));
    EXPECT_EQ(l.tasks_max, 4096u);
    EXPECT_EQ(l.cpu_weight, 100u);
    EXPECT_FALSE(l.memory_explicit || l.tasks_explicit || l.cpu_explicit);
}

TEST(Limits, EveryKeyParsesAndMarksItsControllerExplicit) {
    auto p = parse_config(
        "[limits]\ncgroup_parent = a/b_c-1.slice\nmemory_max = 4G\nmemory_high = 25%\nmemory_swap_max = 512M\n"
        "tasks_max = 100\ncpu_weight = 10000\n");
    ASSERT_TRUE(p.ok()) << p.error().message;
    const Limits& l = p.value().limits;
    EXPECT_EQ(l.cgroup_parent, "a/b_c-1.slice");
    EXPECT_EQ(l.memory_max, (MemoryAmount{MemoryAmount::Kind::bytes, 4 * G}));
    EXPECT_EQ(l.memory_high, (MemoryAmount{MemoryAmount::Kind::percent, 25}));
    EXPECT_EQ(l.memory_swap_max, (MemoryAmount{MemoryAmount::Kind::bytes, 512 * M}));
    EXPECT_EQ(l.tasks_max, 100u);
    EXPECT_EQ(l.cpu_weight, 10000u);
    EXPECT_TRUE(l.memory_explicit && l.tasks_explicit && l.cpu_explicit);
    auto unlimited = parse_config("[limits]\nmemory_max = max\ntasks_max = max\n");
    ASSERT_TRUE(unlimited.ok());
    EXPECT_EQ(unlimited.value().limits.memory_max, MemoryAmount{});
    EXPECT_EQ(unlimited.value().limits.tasks_max, 0u);
}

struct BadLimit {
    const char* line;
    const char* reason;
};

TEST(Limits, MalformedValuesAreRefusedWithTheirReason) {
    const BadLimit cases[] = {
        {"memory_max = 0", "expected max, a percentage like 50%, or a byte count like 4G (suffix K, M or G) from 16M"},
        {"memory_max = 1M", "expected max, a percentage like 50%, or a byte count like 4G (suffix K, M or G) from 16M"},
        {"memory_max = 4g", "expected max, a percentage like 50%, or a byte count like 4G (suffix K, M or G) from 16M"},
        {"memory_max = 04G", "expected max, a percentage like 50%, or a byte count like 4G (suffix K, M or G) from 16M"},
        {"memory_max = 99999999999G", "expected max, a percentage like 50%, or a byte count like 4G (suffix K, M or G) from 16M"},
        {"memory_max = 0%", "a percentage must be 1% to 100%"},
        {"memory_max = 101%", "a percentage must be 1% to 100%"},
        {"memory_max = -5%", "a percentage must be 1% to 100%"},
        {"memory_swap_max = 10%", "expected max or a byte count like 1G (suffix K, M or G)"},
        {"tasks_max = 7", "tasks_max must be max or a number from 8 to 4194304"},
        {"tasks_max = 4194305", "tasks_max must be max or a number from 8 to 4194304"},
        {"tasks_max = 1e3", "tasks_max must be max or a number from 8 to 4194304"},
        {"cpu_weight = 0", "cpu_weight must be a number from 1 to 10000"},
        {"cpu_weight = 10001", "cpu_weight must be a number from 1 to 10000"},
        {"cgroup_parent = /clihost-jail", "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"cgroup_parent = a/../b", "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"cgroup_parent = a//b", "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"cgroup_parent = cgroup.procs", "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"cgroup_parent = a/..",  "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"cgroup_parent = a/tasks", "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"cgroup_parent = a b", "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail"},
        {"swap = 0", "unknown key 'swap' in [limits]"},
    };
    for (const auto& c : cases) {
        auto p = parse_config(std::string("[limits]\n") + c.line + "\n");
        ASSERT_FALSE(p.ok()) << c.line;
        EXPECT_EQ(p.error().code, Exit::host);
        EXPECT_EQ(p.error().message, std::string("config line 2: ") + c.reason) << c.line;
    }
}

TEST(Limits, APercentageIsOfTheAvailableMemoryInWholePages) {
    Limits l;
    l.memory_high = {MemoryAmount::Kind::percent, 25};
    const auto r = resolve_limits(l, 8 * G);
    EXPECT_EQ(r.memory_max, 8 * G / 100 * 50 / 4096 * 4096);
    EXPECT_EQ(*r.memory_max % 4096, 0u);
    EXPECT_LE(*r.memory_max, 4 * G);
    EXPECT_GT(*r.memory_max, 4 * G - 64 * M);
    EXPECT_LE(*r.memory_high, 2 * G);
    EXPECT_EQ(r.swap_max, 0u);
    EXPECT_EQ(r.tasks_max, 4096u);
    // Never below the floor a shell needs, however little is available.
    EXPECT_EQ(resolve_limits(l, 1 * M).memory_max, kMinMemoryLimit);
    l.memory_max = {};
    l.tasks_max = 0;
    EXPECT_FALSE(resolve_limits(l, 8 * G).memory_max.has_value());
    EXPECT_FALSE(resolve_limits(l, 8 * G).tasks_max.has_value());
}

TEST(Limits, V2WritesTheLimitsOnTheJailsLeafAndTheWeightOnTheTenant) {
    Limits l;
    l.memory_max = {MemoryAmount::Kind::bytes, 2 * G};
    l.tasks_max = 100;
    l.cpu_weight = 50;
    const CgroupCapability all{true, true, true, true, ""};
    EXPECT_EQ(limit_writes(resolve_limits(l, 8 * G), CgroupVersion::v2, all),
              (std::vector<CgroupWrite>{{"", "", "cpu.weight", "50"},
                                        {"", "jails", "memory.max", "2147483648"},
                                        {"", "jails", "memory.high", "max"},
                                        {"", "jails", "memory.swap.max", "0"},
                                        {"", "jails", "pids.max", "100"},
                                        {"", "net", "memory.max", "268435456"}}));
}

TEST(Limits, V1WritesEachControllersHierarchyWithMemswAboveTheLimitAtEveryStep) {
    Limits l;
    l.memory_max = {MemoryAmount::Kind::bytes, 1 * G};
    l.tasks_max = 100;
    const CgroupCapability all{true, true, true, true, ""};
    EXPECT_EQ(limit_writes(resolve_limits(l, 8 * G), CgroupVersion::v1, all),
              (std::vector<CgroupWrite>{{"cpu", "", "cpu.shares", "1024"},
                                        {"memory", "jails", "memory.memsw.limit_in_bytes", "-1"},
                                        {"memory", "jails", "memory.limit_in_bytes", "1073741824"},
                                        {"memory", "jails", "memory.soft_limit_in_bytes", "-1"},
                                        {"memory", "jails", "memory.memsw.limit_in_bytes", "1073741824"},
                                        {"memory", "jails", "memory.swappiness", "0"},
                                        {"memory", "net", "memory.limit_in_bytes", "134217728"},
                                        {"pids", "jails", "pids.max", "100"}}));
    // With the TCP counter (memory.kmem.tcp.*): the jails' TCP buffers get a
    // quarter of memory_max, the net leaf's its own share.
    CgroupCapability tcp = all;
    tcp.tcp = true;
    const auto with_tcp = limit_writes(resolve_limits(l, 8 * G), CgroupVersion::v1, tcp);
    EXPECT_NE(std::find(with_tcp.begin(), with_tcp.end(),
                        CgroupWrite{"memory", "jails", "memory.kmem.tcp.limit_in_bytes", "268435456"}),
              with_tcp.end());
    EXPECT_NE(std::find(with_tcp.begin(), with_tcp.end(),
                        CgroupWrite{"memory", "net", "memory.kmem.tcp.limit_in_bytes", "134217728"}),
              with_tcp.end());
    // Without memory_max the accounting is still turned on (-1).
    Limits unbounded = l;
    unbounded.memory_max = {};
    const auto no_max = limit_writes(resolve_limits(unbounded, 8 * G), CgroupVersion::v1, tcp);
    EXPECT_NE(std::find(no_max.begin(), no_max.end(),
                        CgroupWrite{"memory", "jails", "memory.kmem.tcp.limit_in_bytes", "-1"}),
              no_max.end());
    // Without swap accounting, swap 0 is swappiness 0; a controller that is
    // not usable gets no write.
    const CgroupCapability no_memsw_no_cpu{true, false, true, false, ""};
    EXPECT_EQ(limit_writes(resolve_limits(l, 8 * G), CgroupVersion::v1, no_memsw_no_cpu),
              (std::vector<CgroupWrite>{{"memory", "jails", "memory.limit_in_bytes", "1073741824"},
                                        {"memory", "jails", "memory.soft_limit_in_bytes", "-1"},
                                        {"memory", "jails", "memory.swappiness", "0"},
                                        {"memory", "net", "memory.limit_in_bytes", "134217728"},
                                        {"pids", "jails", "pids.max", "100"}}));
    EXPECT_EQ(cpu_shares_of_weight(1), 10u);
    EXPECT_EQ(cpu_shares_of_weight(10000), 102400u);
}

TEST(Limits, AnExplicitLimitThatCannotBeEnforcedRefusesADefaultOneWarns) {
    const CgroupCapability none{false, false, false, false, "/sys/fs/cgroup is read-only"};
    const Limits defaults;
    auto d = decide_enforcement(defaults, resolve_limits(defaults, 8 * G), CgroupVersion::v1, none);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d.value().warnings,
              (std::vector<std::string>{
                  "memory_max not enforced (/sys/fs/cgroup is read-only)",
                  "tasks_max 4096 only as RLIMIT_NPROC (per uid) (/sys/fs/cgroup is read-only)"}));
    for (const char* text : {"[limits]\nmemory_max = 1G\n", "[limits]\ncpu_weight = 200\n"}) {
        const Limits l = parse_config(text).value().limits;
        auto e = decide_enforcement(l, resolve_limits(l, 8 * G), CgroupVersion::v1, none);
        ASSERT_FALSE(e.ok()) << text;
        EXPECT_EQ(e.error().code, Exit::host);
        EXPECT_NE(e.error().message.find("is set in [limits] but cannot be enforced here (/sys/fs/cgroup is read-only)"),
                  std::string::npos)
            << e.error().message;
    }
    // An explicit tasks_max is still enforced, as RLIMIT_NPROC: no refusal,
    // the allow line says how.
    const Limits tasks = parse_config("[limits]\nmemory_max = max\ntasks_max = 100\n").value().limits;
    auto t = decide_enforcement(tasks, resolve_limits(tasks, 8 * G), CgroupVersion::v1, none);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t.value().warnings, std::vector<std::string>{
                                      "tasks_max 100 only as RLIMIT_NPROC (per uid) (/sys/fs/cgroup is read-only)"});
    // Control: the same explicit limits where the controllers work.
    const CgroupCapability all{true, true, true, true, ""};
    const Limits l = parse_config("[limits]\nmemory_max = 1G\ntasks_max = 100\ncpu_weight = 200\n").value().limits;
    auto e = decide_enforcement(l, resolve_limits(l, 8 * G), CgroupVersion::v1, all);
    ASSERT_TRUE(e.ok());
    EXPECT_TRUE(e.value().warnings.empty());
    // A swap size other than 0 needs swap accounting on v1.
    const Limits s = parse_config("[limits]\nmemory_swap_max = 1G\n").value().limits;
    const CgroupCapability no_memsw{true, false, true, true, ""};
    EXPECT_FALSE(decide_enforcement(s, resolve_limits(s, 8 * G), CgroupVersion::v1, no_memsw).ok());
    EXPECT_TRUE(decide_enforcement(defaults, resolve_limits(defaults, 8 * G), CgroupVersion::v1, no_memsw).ok());
}

TEST(Limits, AJailsProcessLimitIsTasksMaxOrPamLimitsValueTheLower) {
    // pam_limits (or the host) gave the tenant 50: tasks_max 100 keeps 50.
    EXPECT_EQ(nproc_limit(50, 100), 50u);
    // A higher inherited limit is lowered to tasks_max.
    EXPECT_EQ(nproc_limit(96367, 100), 100u);
    // Unlimited (RLIM_INFINITY) is lowered too.
    EXPECT_EQ(nproc_limit(~std::uint64_t{0}, 4096), 4096u);
    // tasks_max = max (0): the inherited limit, unchanged.
    EXPECT_EQ(nproc_limit(96367, 0), 96367u);
    EXPECT_EQ(nproc_limit(~std::uint64_t{0}, 0), ~std::uint64_t{0});
    // The parsed default and an explicit value reach it as they are.
    EXPECT_EQ(nproc_limit(96367, Limits{}.tasks_max), 4096u);
    EXPECT_EQ(nproc_limit(96367, parse_config("[limits]\ntasks_max = max\n").value().limits.tasks_max), 96367u);
}
