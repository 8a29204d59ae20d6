// placement.cpp: the tenant's cgroup on this host, through systemd or the
// cgroup file system (placement.hpp).
#include "host/placement.hpp"

#include <sys/stat.h>
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

// Where systemd is PID 1 and the tenant's scope exists (its supervisor
// runs), the scope's cgroup; else none.
std::optional<std::string> live_scope(const CgroupHost& host, uid_t uid) {
    if (!systemd_booted() || host.hierarchies.empty()) return std::nullopt;
    const std::string rel = tenant_scope_cgroup(uid);
    struct stat st{};
    for (const auto& h : host.hierarchies)
        if (::stat((h.mount + "/" + rel + "/jails").c_str(), &st) == 0) return rel;
    return std::nullopt;
}

}  // namespace

Result<TenantCgroup> setup_tenant_cgroup(const Limits& limits, uid_t uid) {
    const auto meminfo = read_bounded("/proc/meminfo", kMaxMeminfo);
    if (!meminfo) return meminfo.error();
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    if (auto scope = live_scope(host, uid)) return TenantCgroup::setup_at(host, limits, *scope, meminfo.value());
    return TenantCgroup::setup(host, limits, uid, meminfo.value());
}

TenantCgroup open_tenant_cgroup(const Limits& limits, uid_t uid) {
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    if (auto scope = live_scope(host, uid)) return TenantCgroup::open_at(host, *scope);
    return TenantCgroup::open(host, limits.cgroup_parent, uid);
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
    // systemd is PID 1: it moves this process into the tenant's scope
    // (Delegate=yes: the subtree is ours), then the leaves go inside it.
    const std::string rel = tenant_scope_cgroup(uid);
    const auto resolved =
        resolve_limits(limits, available_memory(host, slice_cgroup(kTenantSlice), meminfo.value()));
    if (auto st = enter_tenant_scope(uid, scope_properties(resolved, ::getpid(), uid)); !st) return st.error();
    // v1: systemd moves this process into the scope in its own hierarchy
    // first, then in each controller's it realized the scope in (a
    // delegated scope with limits: memory, pids, cpu). The leaves go in
    // after that move, or it would take this process out of its leaf.
    if (host.version == CgroupVersion::v1)
        for (const auto& h : host.hierarchies) {
            struct stat st{};
            const bool managed = std::find(kLimitedControllers.begin(), kLimitedControllers.end(), h.controller) !=
                                 kLimitedControllers.end();
            if (managed && ::stat((h.mount + "/" + rel).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                if (auto moved = wait_moved(h.controller, "/" + rel); !moved) return moved.error();
        }
    if (host.version == CgroupVersion::v2 && !host.hierarchies.empty()) {
        // v2: no process in an inner node, and the scope hands its
        // controllers down only once it is empty; this process first.
        const std::string scope = host.hierarchies.front().mount + "/" + rel;
        if (auto st = enter_new_leaf(scope + "/supervisor"); !st) return st.error();
    }
    auto cg = TenantCgroup::setup_at(host, limits, rel, meminfo.value());
    if (!cg) return cg.error();
    if (!cg.value().placed()) return fail(Exit::host, "the tenant's systemd scope has no cgroup we can use: " +
                                                          cg.value().capability().why_not);
    if (auto st = cg.value().enter_supervisor(); !st) return st.error();
    return cg;
}

}  // namespace clihost
