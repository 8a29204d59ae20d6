// systemd_scope.hpp: where systemd is PID 1, each tenant's supervisor asks it
// for a transient scope (StartTransientUnit, as `systemd-run --scope` does):
// clihost-jail-UID.scope in clihost-jail.slice, Delegate=yes. Pure: the unit's
// name, its cgroup and its property list from the resolved [limits];
// host/systemd_scope.hpp sends them.
//
// The scope is the tenant's node; inside it, as on the bare cgroup file
// system, the supervisor's leaf (never limited), the jails' leaf (the limits
// of limits.hpp, written by cgroup.hpp) and the net leaf (slirp4netns, with
// its share of memory_max: net_memory_max). The scope's own TasksMax and
// MemoryMax are the leaves' limits plus the supervisor's allowance, so that
// a leaf hits its own limit before the scope does: the jails' OOM kills and
// refused forks happen among the jails' processes, the net leaf's to
// slirp4netns (the supervisor tells of it), never to the supervisor or to a
// sibling leaf; `systemctl show`, systemd-cgtop and an operator's
// `set-property` see the tenant's whole budget. (The supervisor's leaf holds
// only the helper's own processes, within kSupervisorMemory: an operator's
// smaller MemoryMax can still reach them.) CPUWeight is the tenant's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "decide/limits.hpp"

namespace clihost {

inline constexpr const char* kTenantSlice = "clihost-jail.slice";
// What the supervisor's leaf may hold on top of the jails' limits: the
// supervisor and its short-lived children (a PAM module's helper, a jail's
// process before it enters the jails' leaf), its own memory and page cache.
inline constexpr std::uint64_t kSupervisorTasks = 64;
inline constexpr std::uint64_t kSupervisorMemory = std::uint64_t{64} << 20;
// systemd's "infinity" for TasksMax and MemoryMax.
inline constexpr std::uint64_t kUnitInfinity = UINT64_MAX;

struct UnitProperty {
    // D-Bus s, b, t, au, h, and a(sasas) (ExecStartEx: one command, its
    // flags "no-env-expand": systemd expands no $VAR of its argv).
    enum class Type { string, boolean, uint64, pids, fd, exec };
    std::string name;
    Type type{Type::string};
    std::string text;          // string; exec: the program's absolute path
    std::uint64_t number{0};   // boolean (0/1), uint64, pids (one pid), fd
    std::vector<std::string> words{};  // exec: its argv
    bool operator==(const UnitProperty&) const = default;
};

// The tenant's supervisor under systemd: the main process of the transient
// service "clihost-jail-1001.service", started by PID 1 (systemd_scope.hpp
// in host/ sends it), and the service's cgroup below each hierarchy's root.
std::string tenant_unit_name(uid_t uid);
std::string tenant_unit_cgroup(uid_t uid);
// Its properties: the scope's (Slice, Delegate, CollectMode, accounting,
// TasksMax, MemoryMax, CPUWeight; no PIDs), Type=exec, ExecStartEx `argv`
// of `program`, stdout the start-up report `report_fd` (its copy goes to
// systemd), stdin and stderr /dev/null, KillMode=control-group (a jail
// outlives its supervisor in no case), no restart.
std::vector<UnitProperty> unit_properties(const ResolvedLimits& r, uid_t uid, const std::string& program,
                                          const std::vector<std::string>& argv, int report_fd);
// "clihost-jail-1001.scope": an earlier build's supervisor (a scope it
// entered itself); `list` and `stop` still find it there.
std::string tenant_scope_name(uid_t uid);
// A slice's cgroup as systemd nests it ("a-b.slice": "a.slice/a-b.slice").
std::string slice_cgroup(const std::string& slice);
// The scope's cgroup below each hierarchy's root, as /proc/PID/cgroup shows
// it without the leading '/':
// "clihost.slice/clihost-jail.slice/clihost-jail-1001.scope".
std::string tenant_scope_cgroup(uid_t uid);
// A lock holder's own scope (the starter, stop's child; host/placement.hpp):
// "clihost-jail-hold-PID.scope", in the same slice, and its cgroup.
std::string holder_scope_name(pid_t pid);
std::string holder_scope_cgroup(pid_t pid);
// Its properties: PIDs=[pid], Slice, CollectMode, and accounting (memory,
// tasks, CPU), so that on v1 systemd realizes it, and moves the process,
// in those controllers' hierarchies too; no delegation, no limit.
std::vector<UnitProperty> holder_scope_properties(pid_t pid, uid_t uid);
// StartTransientUnit's properties: PIDs=[pid], Slice, Delegate, CollectMode
// (a failed scope, say after an OOM kill, is collected too: the name is free
// for the next start), accounting, TasksMax, MemoryMax, CPUWeight.
std::vector<UnitProperty> scope_properties(const ResolvedLimits& r, pid_t pid, uid_t uid);
// The scope's TasksMax and MemoryMax for limits `r` (kUnitInfinity: none).
std::uint64_t scope_tasks_max(const ResolvedLimits& r);
std::uint64_t scope_memory_max(const ResolvedLimits& r);

}  // namespace clihost
