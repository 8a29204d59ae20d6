// The tenant's transient scope where systemd is PID 1: its name, its cgroup
// and the properties StartTransientUnit gets from [limits].
#include <gtest/gtest.h>

#include "decide/systemd_scope.hpp"

using namespace clihost;

namespace {
constexpr std::uint64_t M = std::uint64_t{1} << 20;

const UnitProperty* find(const std::vector<UnitProperty>& props, const std::string& name) {
    for (const auto& p : props)
        if (p.name == name) return &p;
    return nullptr;
}
}  // namespace

TEST(SystemdScope, NameAndCgroupAreTheTenantsInTheSlice) {
    EXPECT_EQ(tenant_scope_name(1001), "clihost-jail-1001.scope");
    EXPECT_EQ(tenant_scope_cgroup(1001), "clihost.slice/clihost-jail.slice/clihost-jail-1001.scope");
    // systemd's nesting of dashed slice names.
    EXPECT_EQ(slice_cgroup("system.slice"), "system.slice");
    EXPECT_EQ(slice_cgroup("a-b-c.slice"), "a.slice/a-b.slice/a-b-c.slice");
}

TEST(SystemdScope, PropertiesPlaceThePidDelegatedInTheSlice) {
    const ResolvedLimits r{512 * M, std::nullopt, 0, 100, 250};
    const auto props = scope_properties(r, 4242, 1001);
    using T = UnitProperty::Type;
    ASSERT_NE(find(props, "PIDs"), nullptr);
    EXPECT_EQ(*find(props, "PIDs"), (UnitProperty{"PIDs", T::pids, "", 4242}));
    EXPECT_EQ(*find(props, "Slice"), (UnitProperty{"Slice", T::string, "clihost-jail.slice", 0}));
    EXPECT_EQ(*find(props, "Delegate"), (UnitProperty{"Delegate", T::boolean, "", 1}));
    EXPECT_EQ(*find(props, "CollectMode"), (UnitProperty{"CollectMode", T::string, "inactive-or-failed", 0}));
    EXPECT_EQ(*find(props, "CPUWeight"), (UnitProperty{"CPUWeight", T::uint64, "", 250}));
    // Each name once: systemd refuses a property given twice.
    for (const auto& p : props) EXPECT_EQ(&p, find(props, p.name)) << p.name;
}

TEST(SystemdScope, TheScopesBudgetIsTheJailsLimitPlusTheSupervisorsAllowance) {
    const ResolvedLimits r{512 * M, std::nullopt, 0, 100, 100};
    const auto props = scope_properties(r, 1, 1001);
    EXPECT_EQ(find(props, "TasksMax")->number, 100 + kSupervisorTasks);
    // The net leaf's share (an eighth of memory_max, at least 32M) too.
    EXPECT_EQ(find(props, "MemoryMax")->number, 512 * M + 64 * M + kSupervisorMemory);
    EXPECT_EQ(find(props, "TasksMax")->type, UnitProperty::Type::uint64);
}

TEST(SystemdScope, NoLimitIsInfinityAndNothingWrapsAround) {
    const ResolvedLimits none{std::nullopt, std::nullopt, std::nullopt, std::nullopt, 100};
    EXPECT_EQ(scope_tasks_max(none), kUnitInfinity);
    EXPECT_EQ(scope_memory_max(none), kUnitInfinity);
    const ResolvedLimits huge{UINT64_MAX - 1, std::nullopt, std::nullopt, 4194304, 100};
    EXPECT_EQ(scope_memory_max(huge), kUnitInfinity);
    EXPECT_EQ(scope_tasks_max(huge), 4194304 + kSupervisorTasks);
}

// A lock holder's own scope (host/placement.cpp, place_lock_holder): named
// by its pid, in the tenants' slice, accounted (so that systemd moves it in
// the v1 controllers too), neither delegated nor limited.
TEST(SystemdScope, AHoldersScopeIsItsOwnAccountedNeitherDelegatedNorLimited) {
    EXPECT_EQ(holder_scope_name(4242), "clihost-jail-hold-4242.scope");
    EXPECT_EQ(holder_scope_cgroup(4242), "clihost.slice/clihost-jail.slice/clihost-jail-hold-4242.scope");
    const auto props = holder_scope_properties(4242, 1001);
    using T = UnitProperty::Type;
    ASSERT_NE(find(props, "PIDs"), nullptr);
    EXPECT_EQ(*find(props, "PIDs"), (UnitProperty{"PIDs", T::pids, "", 4242}));
    EXPECT_EQ(*find(props, "Slice"), (UnitProperty{"Slice", T::string, "clihost-jail.slice", 0}));
    for (const char* a : {"MemoryAccounting", "TasksAccounting", "CPUAccounting"}) {
        ASSERT_NE(find(props, a), nullptr) << a;
        EXPECT_EQ(find(props, a)->number, 1u) << a;
    }
    for (const char* absent : {"Delegate", "TasksMax", "MemoryMax", "CPUWeight"})
        EXPECT_EQ(find(props, absent), nullptr) << absent;
    for (const auto& p : props) EXPECT_EQ(&p, find(props, p.name)) << p.name;
}

// The tenant's service (session.cpp:launch_unit): PID 1 starts the
// supervisor program as its main process, with the scope's limits and
// delegation, the report as its stdout, no $VAR expansion of its argv.
TEST(SystemdUnit, TheServiceRunsTheSupervisorWithTheScopesLimitsAndTheReport) {
    EXPECT_EQ(tenant_unit_name(1001), "clihost-jail-1001.service");
    EXPECT_EQ(tenant_unit_cgroup(1001), "clihost.slice/clihost-jail.slice/clihost-jail-1001.service");
    const ResolvedLimits r{512 * M, std::nullopt, 0, 100, 250};
    const std::vector<std::string> argv{"clihost-jail-supervisor", "start", "--uid", "1001", "--in-unit"};
    const auto props = unit_properties(r, 1001, "/usr/libexec/clihost-jail/clihost-jail-supervisor", argv, 3);
    using T = UnitProperty::Type;
    EXPECT_EQ(find(props, "PIDs"), nullptr);  // systemd forks it: no pid of ours
    ASSERT_NE(find(props, "ExecStartEx"), nullptr);
    EXPECT_EQ(*find(props, "ExecStartEx"),
              (UnitProperty{"ExecStartEx", T::exec, "/usr/libexec/clihost-jail/clihost-jail-supervisor", 0, argv}));
    EXPECT_EQ(*find(props, "StandardOutputFileDescriptor"), (UnitProperty{"StandardOutputFileDescriptor", T::fd, "", 3}));
    EXPECT_EQ(*find(props, "Type"), (UnitProperty{"Type", T::string, "exec", 0}));
    EXPECT_EQ(*find(props, "Delegate"), (UnitProperty{"Delegate", T::boolean, "", 1}));
    EXPECT_EQ(*find(props, "Slice"), (UnitProperty{"Slice", T::string, "clihost-jail.slice", 0}));
    EXPECT_EQ(*find(props, "KillMode"), (UnitProperty{"KillMode", T::string, "control-group", 0}));
    EXPECT_EQ(find(props, "TasksMax")->number, 100 + kSupervisorTasks);
    EXPECT_EQ(find(props, "MemoryMax")->number, 512 * M + 64 * M + kSupervisorMemory);
    for (const auto& p : props) EXPECT_EQ(&p, find(props, p.name)) << p.name;
}
