// placement.hpp: the tenant's cgroup on this host (/sys/fs/cgroup,
// /proc/meminfo): where systemd is PID 1, the tenant's transient scope
// (systemd_scope.hpp) with the leaves of cgroup.hpp inside it; elsewhere
// PARENT/UID on the cgroup file system. Root only.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/result.hpp"
#include "decide/limits.hpp"
#include "host/cgroup.hpp"
#include "host/systemd_scope.hpp"

namespace clihost {

// The tenant's cgroup on this host (/sys/fs/cgroup, /proc/meminfo): set
// up for a start, or the existing one. Where systemd is PID 1 and the
// tenant's unit exists, the unit's (systemd_scope.hpp).
// Where systemd is PID 1 and the tenant's unit exists (its supervisor
// runs: its service, or an earlier build's scope), the unit's cgroup,
// relative to each hierarchy; else none.
std::optional<std::string> live_scope(const CgroupHost& host, uid_t uid);
Result<TenantCgroup> setup_tenant_cgroup(const Limits& limits, uid_t uid);
TenantCgroup open_tenant_cgroup(const Limits& limits, uid_t uid);
// The supervisor's placement, before it starts anything: where systemd is
// PID 1, systemd started it as the main process of the tenant's transient
// service (clihost-jail.slice, Delegate=yes) and the leaves are made inside that;
// elsewhere PARENT/UID on the cgroup file system. Then this process enters
// the supervisor's leaf. An explicit limit that cannot be enforced, or a
// supervisor outside its service's cgroup, fails (exit 3).
Result<TenantCgroup> place_supervisor(const Limits& limits, uid_t uid);
// Where systemd is PID 1: asks it to start `program` `argv` as the main
// process of the tenant's transient service (its limits from `limits`,
// as the scope's were; stdout `report_fd`). `exists`: a unit of that name
// runs (a supervisor starting or ending).
Result<UnitStart> start_tenant_unit(const Limits& limits, uid_t uid, const std::string& program,
                                    const std::vector<std::string>& argv, int report_fd);

// A lock holder's cgroups (the starter, stop's child: session.cpp's
// run_root_child), taken before it locks tenant `uid`: root's in every
// hierarchy (a v1 freezer, v1 memory's oom_kill_disable and any cgroup2's
// cgroup.freeze can hold a process still), never the caller's, which a
// caller that owns it could freeze. Where
// systemd is PID 1, a transient scope of its own in clihost-jail.slice
// (systemd moves it, in its hierarchy and the controllers it realizes),
// then PARENT/helper in a v1 freezer, which systemd leaves alone;
// elsewhere PARENT/helper in each. A supervisor the starter forks starts
// there. Exit::host, one line.
Status place_lock_holder(const Limits& limits, uid_t uid);

}  // namespace clihost
