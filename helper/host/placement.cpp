// placement.cpp: the tenant's cgroup on this host, through systemd or the
// cgroup file system (placement.hpp).
#include "host/placement.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>

#include "base/file_read.hpp"
#include "decide/systemd_scope.hpp"
#include "host/systemd_scope.hpp"

namespace clihost {
namespace {

constexpr std::size_t kMaxMeminfo = 1 << 20;

// v1, after systemd started a scope with this process at REL: waits until
// systemd has moved it there in each managed controller's hierarchy that
// has REL (the ones it realized the scope in). It moves a scope's process
// into its own hierarchy first and into each controller's after that.
Status wait_realized(const CgroupHost& host, const std::string& rel, const std::string& who) {
    if (host.version != CgroupVersion::v1) return ok_status();
    for (const auto& h : host.hierarchies) {
        struct stat st{};
        const bool managed = std::find(kLimitedControllers.begin(), kLimitedControllers.end(), h.controller) !=
                             kLimitedControllers.end();
        if (managed && ::stat((h.mount + "/" + rel).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
            if (auto moved = wait_moved(h.controller, "/" + rel, who); !moved) return moved.error();
    }
    return ok_status();
}

}  // namespace

Result<TenantCgroup> setup_tenant_cgroup(const Limits& limits, uid_t uid) {
    const auto meminfo = read_bounded("/proc/meminfo", kMaxMeminfo);
    if (!meminfo) return meminfo.error();
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    if (auto scope = live_scope(host, uid)) return TenantCgroup::setup_at(host, limits, *scope, meminfo.value());
    return TenantCgroup::setup(host, limits, uid, meminfo.value());
}

Result<TenantCgroup> place_supervisor(const Limits& limits, uid_t uid) {
    const auto meminfo = read_bounded("/proc/meminfo", kMaxMeminfo);
    if (!meminfo) return meminfo.error();
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    if (!systemd_booted()) {
        auto cg = TenantCgroup::setup(host, limits, uid, meminfo.value());
        if (!cg) return cg.error();
        if (auto st = cg.value().enter_supervisor(); !st) return st.error();
        return cg;
    }
    // systemd is PID 1: it started this process as the main process of the
    // tenant's service (Delegate=yes: the subtree is ours; session.cpp:
    // launch_unit); the leaves go inside it.
    const std::string rel = tenant_unit_cgroup(uid);
    if (auto st = check_in_unit(rel, "the supervisor"); !st) return st.error();
    // v1: the leaves go in after systemd's moves (a delegated scope with
    // limits: memory, pids, cpu), or a move would take this process out of
    // its leaf.
    if (auto st = wait_realized(host, rel, "the supervisor"); !st) return st.error();
    if (host.version == CgroupVersion::v2 && !host.hierarchies.empty()) {
        // v2: no process in an inner node, and the scope hands its
        // controllers down only once it is empty; this process first.
        const std::string leaf = rel + "/supervisor";
        if (auto st = make_cgroup(host.hierarchies.front().mount, leaf); !st) return st.error();
        if (auto st = enter_cgroup(host.hierarchies.front().mount + "/" + leaf); !st) return st.error();
    }
    auto cg = TenantCgroup::setup_at(host, limits, rel, meminfo.value());
    if (!cg) return cg.error();
    if (!cg.value().placed()) return fail(Exit::host, "the tenant's systemd scope has no cgroup we can use: " +
                                                          cg.value().capability().why_not);
    if (auto st = cg.value().enter_supervisor(); !st) return st.error();
    return cg;
}

Result<UnitStart> start_tenant_unit(const Limits& limits, uid_t uid, const std::string& program,
                                    const std::vector<std::string>& argv, int report_fd) {
    const auto meminfo = read_bounded("/proc/meminfo", kMaxMeminfo);
    if (!meminfo) return meminfo.error();
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    const auto resolved =
        resolve_limits(limits, available_memory(host, slice_cgroup(kTenantSlice), meminfo.value()));
    return start_unit(tenant_unit_name(uid), unit_properties(resolved, uid, program, argv, report_fd),
                      "the tenant's service");
}

Status place_lock_holder(const Limits& limits, uid_t uid) {
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    std::vector<CgroupHierarchy> ours = host.hierarchies;
    if (systemd_booted()) {
        const pid_t self = ::getpid();
        const std::string rel = holder_scope_cgroup(self);
        if (auto st = enter_scope(holder_scope_name(self), rel, holder_scope_properties(self, uid),
                                  "the lock holder's scope", "the lock holder");
            !st)
            return st;
        if (auto st = wait_realized(host, rel, "the lock holder"); !st) return st;
        std::erase_if(ours, [](const CgroupHierarchy& h) { return h.controller != "freezer"; });
    }
    // The lock holders' leaf beside the tenants' nodes. Where it cannot be
    // made, no tenant's cgroup can be either, and the holder stays where it
    // is, as the tenant's processes will (the start warns that its limits
    // are not enforced there, or refuses an explicit one); a hierarchy
    // read-only here is such a one (nobody here can freeze in it either).
    const std::string rel = limits.cgroup_parent + "/helper";
    for (const auto& h : ours) {
        struct statvfs fs{};
        if (::statvfs(h.mount.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0) continue;
        if (!make_cgroup(h.mount, rel)) continue;
        if (auto st = enter_cgroup(h.mount + "/" + rel); !st) return st;
    }
    return ok_status();
}

}  // namespace clihost
