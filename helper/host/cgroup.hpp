// cgroup.hpp: the tenant's cgroup on the cgroup file system (v2, or the v1
// hierarchies of memory, pids, cpu and freezer where a host has those):
// PARENT/UID with a leaf for the supervisor (never limited, never killed),
// a leaf for the jails (the limits of limits.hpp, `stop`'s kill) and a leaf
// for the tenant's network process, slirp4netns (its share of memory_max,
// limits.hpp net_memory_max).
// Limits are written before any process enters. Root only.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "decide/limits.hpp"

namespace clihost {

// The controllers a tenant's limits are written to (limits.hpp): on v2
// handed down to the tenant's cgroup, on v1 the hierarchies systemd
// realizes a delegated scope with limits in (placement.cpp).
inline constexpr std::array<std::string_view, 3> kLimitedControllers{"memory", "pids", "cpu"};

struct CgroupHierarchy {
    std::string controller;  // v1: memory, pids, cpu, freezer, "" (a hybrid's cgroup2); v2: ""
    std::string mount;       // its directory, e.g. /sys/fs/cgroup/memory
};

struct CgroupHost {
    CgroupVersion version{CgroupVersion::v1};
    std::vector<CgroupHierarchy> hierarchies;  // empty: no cgroup file system to use
    std::string why_not;                       // why it is empty
};

// The cgroup file systems under `root` (/sys/fs/cgroup): v2 if it is a
// cgroup2 mount with cgroup.controllers, else each v1 controller's
// hierarchy, and a hybrid host's cgroup2 at ROOT/unified (no controller:
// the tenant's nodes are made there too, so that none of its processes
// stays in a cgroup of the caller's, which could freeze it). `verify_fs` checks the file system type (statfs); only the
// unit tests, on a directory tree of the kernel's layout, pass false.
CgroupHost detect_cgroups(const std::string& root, bool verify_fs);

// The memory available to cgroups under PARENT: MemTotal (`meminfo`, the
// text of /proc/meminfo), lowered by any limit on the way from the root
// of the memory hierarchy to PARENT (a container's).
std::uint64_t available_memory(const CgroupHost& host, const std::string& parent, const std::string& meminfo);

struct CgroupUsage {
    std::optional<std::uint64_t> memory;    // bytes charged to the jails
    // Of that (memory.stat, memory_split): anonymous memory (heaps,
    // stacks), which only the OOM killer frees, and file pages (the page
    // cache of files read and written, tmpfs included), which the kernel
    // reclaims first when memory_max is reached (tmpfs only to swap).
    std::optional<std::uint64_t> memory_anon;
    std::optional<std::uint64_t> memory_file;
    std::optional<std::uint64_t> tasks;     // processes and threads of the jails
    std::optional<std::uint64_t> oom_kills; // processes the jails' memory limit killed
    std::optional<std::uint64_t> tcp_memory; // the jails' socket buffers (v1: outside `memory`; v2: within)
    std::optional<std::uint64_t> net_memory; // the net leaf's (slirp4netns's), TCP buffers included
};

// Anonymous and file bytes from a memory.stat text: v2's "anon" and
// "file"; v1's hierarchical "total_rss" and "total_cache" (the jails'
// cgroup and all below it). A key the text lacks is unknown.
struct MemorySplit {
    std::optional<std::uint64_t> anon;
    std::optional<std::uint64_t> file;
};
MemorySplit memory_split(const std::string& stat, CgroupVersion version);

class TenantCgroup {
public:
    TenantCgroup() = default;

    // Creates (or takes over) PARENT/UID/{supervisor,jails} in every
    // hierarchy it can, decides (decide_enforcement: an explicit limit that
    // cannot be enforced fails, exit 3) and writes the limits. Nothing has
    // entered it yet. `warnings`: the default limits not enforced here.
    static Result<TenantCgroup> setup(const CgroupHost& host, const Limits& limits, uid_t uid,
                                      const std::string& meminfo);
    // The same at REL (below each hierarchy's root) rather than PARENT/UID:
    // a systemd scope's cgroup.
    static Result<TenantCgroup> setup_at(const CgroupHost& host, const Limits& limits, const std::string& rel,
                                         const std::string& meminfo);
    // The tenant's existing cgroup (empty if there is none).
    static TenantCgroup open(const CgroupHost& host, const std::string& parent, uid_t uid);
    static TenantCgroup open_at(const CgroupHost& host, const std::string& rel);

    bool placed() const { return !nodes_.empty(); }
    const ResolvedLimits& resolved() const { return resolved_; }
    const CgroupCapability& capability() const { return cap_; }
    const std::vector<std::string>& warnings() const { return warnings_; }
    // "/PARENT/UID" as /proc/PID/cgroup shows it, "" if not placed.
    std::string path() const;

    // Moves `pid` (0: the calling process) into the supervisor's leaf of
    // every hierarchy.
    Status enter_supervisor(pid_t pid = 0) const;
    // The jails leaf's cgroup.procs of every hierarchy, open for writing
    // (close-on-exec): a process enters the leaf by writing "0" to each.
    // The kernel checks the opener's credentials, so a process that is
    // already the tenant enters with descriptors root opened.
    Result<std::vector<UniqueFd>> open_jails() const;
    // The same for LEAF ("jails", "query").
    Result<std::vector<UniqueFd>> open_leaf(const char* leaf) const;
    // Whether every hierarchy has the query leaf: PARENT/UID/query, a
    // sibling of the jails leaf with limits of its own (kQueryTasks,
    // kQueryMemory), where `list` and `kill` query jails run, so that a
    // tenant at its tasks_max or memory_max still has its sessions listed.
    bool has_query_leaf() const;
    // The same for the net leaf (slirp4netns enters it before it becomes
    // the tenant); none for a cgroup made by an earlier build.
    Result<std::vector<UniqueFd>> open_net() const;

    CgroupUsage usage() const;
    // A descriptor that polls readable after an OOM of the jails leaf (v2:
    // inotify on memory.events; v1: an eventfd on memory.oom_control);
    // drain it, then read usage().oom_kills. Non-blocking, close-on-exec.
    Result<UniqueFd> watch_oom() const;
    // The limits as the kernel reads them back (for `check`).
    std::vector<std::pair<std::string, std::string>> applied() const;

    // Ends every process in the jails leaf and waits until it is empty:
    // v2 cgroup.kill; v1 the freezer where there is one (frozen, SIGKILLed,
    // thawed), else pids.max 0 and SIGKILL over cgroup.procs until empty.
    // The query leaf's processes end with them.
    Status kill_jails() const;
    // Removes the leaves and PARENT/UID (none may hold a process; a net
    // leaf's slirp4netns ends with its jail).
    Status remove() const;

private:
    struct Node {
        std::string controller;
        std::string dir;  // MOUNT/PARENT/UID
    };
    std::vector<Node> nodes_;
    std::string rel_;  // PARENT/UID
    CgroupVersion version_{CgroupVersion::v1};
    ResolvedLimits resolved_{};
    CgroupCapability cap_{};
    std::vector<std::string> warnings_;

    const Node* node_of(const std::string& controller) const;
    void limit_query_leaf() const;
    Status kill_queries() const;
    Status enter(const char* leaf, pid_t pid) const;
};

// What a jail's watcher does as root before it becomes the tenant:
// RLIMIT_NPROC lowered to tasks_max (a per-uid count, which works where no
// cgroup does), and the jails leaf opened (TenantCgroup::open_jails; none
// when the tenant has no cgroup), which its bwrap child enters. The
// watcher itself stays in the supervisor's leaf: the tenant's limits, and
// the OOM killer they call, never pick the helper's own processes.
struct JailPlacement {
    const TenantCgroup* cgroup{nullptr};
    std::uint64_t nproc{0};  // 0: unchanged
    // A query jail: the query leaf where there is one, and RLIMIT_NPROC
    // nproc + kQueryTasks (the kernel counts the uid's processes in every
    // jail against each jail's limit: at tasks_max, a query jail could not
    // fork within nproc).
    bool query{false};
    Result<std::vector<UniqueFd>> apply() const;
};

// Makes MOUNT/REL: each of REL's components a cgroup of root's, made where
// absent (one that is not a directory of root's: refused).
Status make_cgroup(const std::string& mount, const std::string& rel);
// Moves this process into the cgroup DIR.
Status enter_cgroup(const std::string& dir);

}  // namespace clihost
