// systemd_scope.cpp: the tenant's transient scope, as data (systemd_scope.hpp).
#include "decide/systemd_scope.hpp"

namespace clihost {

std::string tenant_unit_name(uid_t uid) { return "clihost-jail-" + std::to_string(uid) + ".service"; }

std::string tenant_scope_name(uid_t uid) { return "clihost-jail-" + std::to_string(uid) + ".scope"; }

std::string slice_cgroup(const std::string& slice) {
    // systemd nests a slice in the one its name's prefix up to each '-'
    // names: a-b.slice is a.slice/a-b.slice.
    const std::string stem = slice.substr(0, slice.size() - std::string(".slice").size());
    std::string path;
    for (std::size_t dash = stem.find('-'); dash != std::string::npos; dash = stem.find('-', dash + 1))
        path += stem.substr(0, dash) + ".slice/";
    return path + slice;
}

std::string tenant_unit_cgroup(uid_t uid) { return slice_cgroup(kTenantSlice) + "/" + tenant_unit_name(uid); }

std::string tenant_scope_cgroup(uid_t uid) { return slice_cgroup(kTenantSlice) + "/" + tenant_scope_name(uid); }

std::string holder_scope_name(pid_t pid) { return "clihost-jail-hold-" + std::to_string(pid) + ".scope"; }

std::string holder_scope_cgroup(pid_t pid) { return slice_cgroup(kTenantSlice) + "/" + holder_scope_name(pid); }

namespace {

// What every scope of ours has: its description, PIDs=[pid], the slice,
// collected even when failed, memory and tasks accounted.
std::vector<UnitProperty> scope_base(const std::string& description, pid_t pid) {
    using T = UnitProperty::Type;
    return {
        {"Description", T::string, description, 0},
        {"PIDs", T::pids, "", static_cast<std::uint64_t>(pid)},
        {"Slice", T::string, kTenantSlice, 0},
        {"CollectMode", T::string, "inactive-or-failed", 0},
        {"MemoryAccounting", T::boolean, "", 1},
        {"TasksAccounting", T::boolean, "", 1},
    };
}

}  // namespace

std::vector<UnitProperty> holder_scope_properties(pid_t pid, uid_t uid) {
    auto props = scope_base("clihost-jail: a start or stop of tenant " + std::to_string(uid), pid);
    props.push_back({"CPUAccounting", UnitProperty::Type::boolean, "", 1});
    return props;
}

std::uint64_t scope_tasks_max(const ResolvedLimits& r) {
    return r.tasks_max ? *r.tasks_max + kSupervisorTasks : kUnitInfinity;
}

std::uint64_t scope_memory_max(const ResolvedLimits& r) {
    const auto net = net_memory_max(r);
    if (!r.memory_max || !net || *r.memory_max > kUnitInfinity - kSupervisorMemory - *net) return kUnitInfinity;
    return *r.memory_max + *net + kSupervisorMemory;
}

std::vector<UnitProperty> scope_properties(const ResolvedLimits& r, pid_t pid, uid_t uid) {
    using T = UnitProperty::Type;
    auto props = scope_base("clihost-jail tenant " + std::to_string(uid), pid);
    props.insert(props.end(), {{"Delegate", T::boolean, "", 1},
                               {"TasksMax", T::uint64, "", scope_tasks_max(r)},
                               {"MemoryMax", T::uint64, "", scope_memory_max(r)},
                               {"CPUWeight", T::uint64, "", r.cpu_weight}});
    return props;
}

std::vector<UnitProperty> unit_properties(const ResolvedLimits& r, uid_t uid, const std::string& program,
                                          const std::vector<std::string>& argv, int report_fd) {
    using T = UnitProperty::Type;
    auto props = scope_properties(r, 0, uid);
    std::erase_if(props, [](const UnitProperty& p) { return p.name == "PIDs"; });
    props.insert(props.end(), {{"Type", T::string, "exec", 0},
                               {"ExecStartEx", T::exec, program, 0, argv},
                               {"StandardInput", T::string, "null", 0},
                               {"StandardOutputFileDescriptor", T::fd, "", static_cast<std::uint64_t>(report_fd)},
                               {"StandardError", T::string, "null", 0},
                               {"KillMode", T::string, "control-group", 0},
                               {"Restart", T::string, "no", 0}});
    return props;
}

}  // namespace clihost
