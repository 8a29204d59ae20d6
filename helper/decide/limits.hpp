// limits.hpp: the tenant's resource limits ([limits] in jail.conf), what
// they come to on a host, and which cgroup files carry them. Pure: parsing,
// arithmetic and decisions only (unit-tested, fuzzed); cgroup.hpp acts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace clihost {

// A memory amount as written: "max" (no limit), a byte count, or a
// percentage of the memory available to the tenants' cgroups (the host's
// RAM or its container's limit, the lower).
struct MemoryAmount {
    enum class Kind { unlimited, bytes, percent };
    Kind kind{Kind::unlimited};
    std::uint64_t value{0};  // bytes, or 1..100
    bool operator==(const MemoryAmount&) const = default;
};

inline constexpr std::uint64_t kMinMemoryLimit = std::uint64_t{16} << 20;  // 16M
inline constexpr std::uint64_t kMaxMemoryLimit = std::uint64_t{1} << 50;   // 1P
inline constexpr std::uint64_t kMinTasksMax = 8;                           // a shell, tmux, a command
inline constexpr std::uint64_t kMaxTasksMax = 4194304;                     // the kernel's PID_MAX_LIMIT
inline constexpr std::uint32_t kDefaultCpuWeight = 100;

struct Limits {
    // Where the tenants' cgroups go, relative to the root of each cgroup
    // hierarchy: PARENT/UID/{supervisor,jails}.
    std::string cgroup_parent{"clihost-jail"};
    MemoryAmount memory_max{MemoryAmount::Kind::percent, 50};
    MemoryAmount memory_high{};                                // unlimited
    MemoryAmount memory_swap_max{MemoryAmount::Kind::bytes, 0};  // no swap: a limit kills rather than swaps
    std::uint64_t tasks_max{4096};                             // 0: no limit ("max")
    std::uint32_t cpu_weight{kDefaultCpuWeight};               // 1..10000
    // Set in the file (not a built-in default): such a limit is enforced or
    // the start refuses. Per controller.
    bool memory_explicit{false};
    bool tasks_explicit{false};
    bool cpu_explicit{false};
    bool operator==(const Limits&) const = default;
};

// The values of the [limits] keys (the parser's, and unit tests').
Result<MemoryAmount> parse_memory_amount(std::string_view v, bool percent_allowed);
Result<std::uint64_t> parse_tasks_max(std::string_view v);  // 0 for "max"
Result<std::uint32_t> parse_cpu_weight(std::string_view v);
// A relative cgroup path: components of [A-Za-z0-9_.-] (no "." or "..",
// no leading '-', none named like the kernel's cgroup.* files), '/'-separated,
// at most 8 deep and 200 bytes.
bool is_valid_cgroup_parent(std::string_view v);
// One [limits] key; false if the key is unknown.
Result<bool> apply_limit(Limits& l, std::string_view key, std::string_view v);

// A byte count with K/M/G suffix ("256M"), within [min, max]; nullopt if not.
std::optional<std::uint64_t> parse_byte_count(std::string_view v, std::uint64_t min, std::uint64_t max);
// A byte count as jail.conf writes it: the largest binary suffix that divides it.
std::string byte_count_text(std::uint64_t n);
std::string memory_amount_text(const MemoryAmount& m);

// The limits in numbers on a host with `available` bytes of memory.
struct ResolvedLimits {
    std::optional<std::uint64_t> memory_max;  // nullopt: no limit
    std::optional<std::uint64_t> memory_high;
    std::optional<std::uint64_t> swap_max;
    std::optional<std::uint64_t> tasks_max;
    std::uint32_t cpu_weight{kDefaultCpuWeight};
    bool operator==(const ResolvedLimits&) const = default;
};
ResolvedLimits resolve_limits(const Limits& l, std::uint64_t available);

// What a host's cgroups can carry (cgroup.hpp finds out).
enum class CgroupVersion { v1, v2 };
struct CgroupCapability {
    bool memory{false};
    bool memsw{false};  // v1 swap accounting (memory.memsw.*); v2: memory.swap.max
    bool pids{false};
    bool cpu{false};
    std::string why_not;  // why some controller is unusable ("" if all are)
    bool tcp{false};      // v1: memory.kmem.tcp.* (v2 charges socket buffers to memory.current)
};

// Which limits cannot be enforced here: an explicit one refuses the start
// (the error, exit 3, one line), a default one is a warning for the audit
// line and `check`.
struct Enforcement {
    std::vector<std::string> warnings;
};
Result<Enforcement> decide_enforcement(const Limits& l, const ResolvedLimits& r, CgroupVersion v,
                                       const CgroupCapability& cap);

// One write into a tenant's cgroup: NODE ("" for PARENT/UID itself,
// "jails") of the hierarchy of CONTROLLER (v1; "" on v2), FILE, VALUE. In
// order: the files of one controller depend on each other (v1 memsw).
struct CgroupWrite {
    std::string controller;
    std::string node;
    std::string file;
    std::string value;
    bool operator==(const CgroupWrite&) const = default;
};
// The limits go on the jails leaf (the supervisor's leaf is never limited),
// the network leaf's share on the net leaf (slirp4netns), the CPU weight on
// the tenant's node (fairness between tenants). On v1 the TCP buffers are a
// counter of their own, outside memory.usage_in_bytes: bounded on the jails
// leaf by tcp_memory_max and on the net leaf by its share.
std::vector<CgroupWrite> limit_writes(const ResolvedLimits& r, CgroupVersion v, const CgroupCapability& cap);

// A query jail's own allowance (`list` and `kill` ask the tenant's tmux
// in one): its cgroup leaf's pids.max and memory limit, and what it may
// count above tasks_max in RLIMIT_NPROC. A query jail is bwrap, its pid 1
// and one tmux client; the tenant's tmux server can make that client exec
// a command (detach-client -E), so the leaf is limited, and the query
// deadline ends it.
inline constexpr std::uint64_t kQueryTasks = 16;
inline constexpr std::uint64_t kQueryMemory = std::uint64_t{64} << 20;
// The net leaf's memory (slirp4netns, its sockets' buffers): an eighth of
// memory_max, at least kMinNetMemory; none without memory_max.
inline constexpr std::uint64_t kMinNetMemory = std::uint64_t{32} << 20;  // 32M
std::optional<std::uint64_t> net_memory_max(const ResolvedLimits& r);
// v1: the TCP buffers of the jails' sockets, on top of memory_max (a
// counter of their own there): a quarter of memory_max, at least
// kMinNetMemory; none without memory_max.
std::optional<std::uint64_t> tcp_memory_max(const ResolvedLimits& r);

// RLIMIT_NPROC of a jail: tasks_max (0: none) or the limit it already has
// (pam_limits' for the tenant, or the host's), the lower. Soft and hard alike.
// The kernel counts every process and thread of the uid on the host
// (through user namespaces too), not only the jail's.
std::uint64_t nproc_limit(std::uint64_t current, std::uint64_t tasks_max);

// cpu.weight (1..10000, 100 the default) as v1 cpu.shares (1024 the
// default), as systemd converts it.
std::uint64_t cpu_shares_of_weight(std::uint32_t weight);

// For `print`, `check` and the audit line: "memory_max 50% (12G), ...".
std::string limits_summary(const Limits& l, const std::optional<ResolvedLimits>& r);

}  // namespace clihost
