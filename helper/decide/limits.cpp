// limits.cpp: [limits] values, their resolution and their cgroup files (limits.hpp).
#include "decide/limits.hpp"

#include <algorithm>
#include <charconv>

namespace clihost {
namespace {

bool all_digits(std::string_view v) {
    return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Decimal digits, no sign, no leading zero (an operator who wrote "0100"
// meant something we cannot know), at most 20 of them.
std::optional<std::uint64_t> parse_decimal(std::string_view v) {
    if (!all_digits(v) || v.size() > 20 || (v.size() > 1 && v.front() == '0')) return std::nullopt;
    std::uint64_t n = 0;
    const auto* end = v.data() + v.size();
    auto [ptr, ec] = std::from_chars(v.data(), end, n);
    if (ec != std::errc{} || ptr != end) return std::nullopt;
    return n;
}

}  // namespace

std::optional<std::uint64_t> parse_byte_count(std::string_view v, std::uint64_t min, std::uint64_t max) {
    std::uint64_t unit = 1;
    if (!v.empty()) {
        switch (v.back()) {
            case 'K': unit = std::uint64_t{1} << 10; break;
            case 'M': unit = std::uint64_t{1} << 20; break;
            case 'G': unit = std::uint64_t{1} << 30; break;
            default: break;
        }
        if (unit != 1) v.remove_suffix(1);
    }
    const auto n = parse_decimal(v);
    // Checked before multiplying: n * unit must not wrap around.
    if (!n || *n > max / unit) return std::nullopt;
    const std::uint64_t bytes = *n * unit;
    if (bytes < min || bytes > max) return std::nullopt;
    return bytes;
}

std::string byte_count_text(std::uint64_t n) {
    for (const auto& [unit, suffix] : {std::pair{std::uint64_t{1} << 30, "G"}, std::pair{std::uint64_t{1} << 20, "M"},
                                       std::pair{std::uint64_t{1} << 10, "K"}})
        if (n != 0 && n % unit == 0) return std::to_string(n / unit) + suffix;
    return std::to_string(n);
}

std::string memory_amount_text(const MemoryAmount& m) {
    switch (m.kind) {
        case MemoryAmount::Kind::unlimited: return "max";
        case MemoryAmount::Kind::percent: return std::to_string(m.value) + "%";
        case MemoryAmount::Kind::bytes: return byte_count_text(m.value);
    }
    return "?";
}

Result<MemoryAmount> parse_memory_amount(std::string_view v, bool percent_allowed) {
    if (v == "max") return MemoryAmount{};
    if (percent_allowed && !v.empty() && v.back() == '%') {
        const auto n = parse_decimal(v.substr(0, v.size() - 1));
        if (!n || *n < 1 || *n > 100) return fail(Exit::host, "a percentage must be 1% to 100%");
        return MemoryAmount{MemoryAmount::Kind::percent, *n};
    }
    // Swap may be 0 (none); a memory limit has a floor a shell can live in.
    const std::uint64_t min = percent_allowed ? kMinMemoryLimit : 0;
    const auto n = parse_byte_count(v, min, kMaxMemoryLimit);
    if (!n)
        return fail(Exit::host, percent_allowed ? "expected max, a percentage like 50%, or a byte count like 4G "
                                                  "(suffix K, M or G) from 16M"
                                                : "expected max or a byte count like 1G (suffix K, M or G)");
    return MemoryAmount{MemoryAmount::Kind::bytes, *n};
}

Result<std::uint64_t> parse_tasks_max(std::string_view v) {
    if (v == "max") return std::uint64_t{0};
    const auto n = parse_decimal(v);
    if (!n || *n < kMinTasksMax || *n > kMaxTasksMax)
        return fail(Exit::host, "tasks_max must be max or a number from " + std::to_string(kMinTasksMax) + " to " +
                                    std::to_string(kMaxTasksMax));
    return *n;
}

Result<std::uint32_t> parse_cpu_weight(std::string_view v) {
    const auto n = parse_decimal(v);
    if (!n || *n < 1 || *n > 10000) return fail(Exit::host, "cpu_weight must be a number from 1 to 10000");
    return static_cast<std::uint32_t>(*n);
}

bool is_valid_cgroup_parent(std::string_view v) {
    if (v.empty() || v.size() > 200 || v.front() == '/' || v.back() == '/') return false;
    std::size_t depth = 0;
    std::size_t pos = 0;
    while (pos <= v.size()) {
        auto end = v.find('/', pos);
        if (end == std::string_view::npos) end = v.size();
        const auto c = v.substr(pos, end - pos);
        if (c.empty() || c == "." || c == ".." || c.front() == '-' || ++depth > 8) return false;
        if (!std::all_of(c.begin(), c.end(), [](char ch) {
                return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                       ch == '.' || ch == '-';
            }))
            return false;
        // The kernel's own files in a cgroup directory (cgroup.procs,
        // tasks...): a component named like one is refused here; one named
        // like a controller's file (memory.max) is no directory, which
        // setup refuses (systemd's names, like system.slice, have dots).
        if (c.rfind("cgroup.", 0) == 0 || c == "tasks" || c == "notify_on_release" || c == "release_agent")
            return false;
        pos = end + 1;
    }
    return true;
}

Result<bool> apply_limit(Limits& l, std::string_view key, std::string_view v) {
    auto memory = [&](MemoryAmount& into, bool percent) -> Result<bool> {
        auto m = parse_memory_amount(v, percent);
        if (!m) return m.error();
        into = m.value();
        l.memory_explicit = true;
        return true;
    };
    if (key == "cgroup_parent") {
        if (!is_valid_cgroup_parent(v))
            return fail(Exit::host, "cgroup_parent must be a relative path of names of [A-Za-z0-9_.-], like clihost-jail");
        l.cgroup_parent = std::string(v);
        return true;
    }
    if (key == "memory_max") return memory(l.memory_max, true);
    if (key == "memory_high") return memory(l.memory_high, true);
    if (key == "memory_swap_max") return memory(l.memory_swap_max, false);
    if (key == "tasks_max") {
        auto n = parse_tasks_max(v);
        if (!n) return n.error();
        l.tasks_max = n.value();
        l.tasks_explicit = true;
        return true;
    }
    if (key == "cpu_weight") {
        auto n = parse_cpu_weight(v);
        if (!n) return n.error();
        l.cpu_weight = n.value();
        l.cpu_explicit = true;
        return true;
    }
    return false;
}

ResolvedLimits resolve_limits(const Limits& l, std::uint64_t available) {
    constexpr std::uint64_t kPage = 4096;
    auto amount = [&](const MemoryAmount& m) -> std::optional<std::uint64_t> {
        switch (m.kind) {
            case MemoryAmount::Kind::unlimited: return std::nullopt;
            case MemoryAmount::Kind::bytes: return m.value;
            case MemoryAmount::Kind::percent: {
                // available / 100 first: no overflow, a page or so lost.
                const std::uint64_t b = available / 100 * m.value / kPage * kPage;
                return std::max(b, kMinMemoryLimit);
            }
        }
        return std::nullopt;
    };
    ResolvedLimits r;
    r.memory_max = amount(l.memory_max);
    r.memory_high = amount(l.memory_high);
    r.swap_max = amount(l.memory_swap_max);
    if (l.tasks_max != 0) r.tasks_max = l.tasks_max;
    r.cpu_weight = l.cpu_weight;
    return r;
}

Result<Enforcement> decide_enforcement(const Limits& l, const ResolvedLimits& r, CgroupVersion v,
                                       const CgroupCapability& cap) {
    Enforcement e;
    const std::string why = cap.why_not.empty() ? "" : " (" + cap.why_not + ")";
    auto unenforced = [&](bool is_explicit, const std::string& what) -> Status {
        if (is_explicit) return fail(Exit::host, what + " is set in [limits] but cannot be enforced here" + why);
        e.warnings.push_back(what + " not enforced" + why);
        return ok_status();
    };
    const bool memory_limited = r.memory_max || r.memory_high;
    if (memory_limited && !cap.memory)
        if (auto st = unenforced(l.memory_explicit, "memory_max"); !st) return st.error();
    // Swap: bounded by memsw (v1) or memory.swap.max (v2); without that
    // accounting, v1 can still keep the tenants' memory out of swap
    // (memory.swappiness 0), which is what swap 0 asks.
    if (cap.memory && r.swap_max && !cap.memsw && (v == CgroupVersion::v2 || *r.swap_max != 0))
        if (auto st = unenforced(l.memory_explicit, "memory_swap_max (no swap accounting)"); !st) return st.error();
    // tasks_max without a pids controller: every jail still gets it as
    // RLIMIT_NPROC (nproc_limit), which the kernel enforces everywhere, per
    // uid. Enforced either way, so never a refusal; the allow line says how.
    if (r.tasks_max && !cap.pids)
        e.warnings.push_back("tasks_max " + std::to_string(*r.tasks_max) + " only as RLIMIT_NPROC (per uid)" + why);
    if (!cap.cpu && (l.cpu_explicit || r.cpu_weight != kDefaultCpuWeight))
        if (auto st = unenforced(l.cpu_explicit, "cpu_weight"); !st) return st.error();
    return e;
}

std::uint64_t nproc_limit(std::uint64_t current, std::uint64_t tasks_max) {
    return tasks_max == 0 ? current : std::min(current, tasks_max);
}

std::uint64_t cpu_shares_of_weight(std::uint32_t weight) {
    return std::max<std::uint64_t>(2, std::uint64_t{weight} * 1024 / 100);
}

std::vector<CgroupWrite> limit_writes(const ResolvedLimits& r, CgroupVersion v, const CgroupCapability& cap) {
    std::vector<CgroupWrite> w;
    auto num = [](const std::optional<std::uint64_t>& n, const char* none) {
        return n ? std::to_string(*n) : std::string(none);
    };
    if (v == CgroupVersion::v2) {
        if (cap.cpu) w.push_back({"", "", "cpu.weight", std::to_string(r.cpu_weight)});
        if (cap.memory) {
            w.push_back({"", "jails", "memory.max", num(r.memory_max, "max")});
            w.push_back({"", "jails", "memory.high", num(r.memory_high, "max")});
            if (cap.memsw) w.push_back({"", "jails", "memory.swap.max", num(r.swap_max, "max")});
        }
        if (cap.pids) w.push_back({"", "jails", "pids.max", num(r.tasks_max, "max")});
        if (cap.memory) w.push_back({"", "net", "memory.max", num(net_memory_max(r), "max")});
        return w;
    }
    if (cap.cpu) w.push_back({"cpu", "", "cpu.shares", std::to_string(cpu_shares_of_weight(r.cpu_weight))});
    if (cap.memory) {
        // memsw must stay >= the limit at every step: lifted first.
        if (cap.memsw) w.push_back({"memory", "jails", "memory.memsw.limit_in_bytes", "-1"});
        w.push_back({"memory", "jails", "memory.limit_in_bytes", num(r.memory_max, "-1")});
        // v1 has no memory.high: the soft limit is what global reclaim
        // pushes the cgroup back to first.
        w.push_back({"memory", "jails", "memory.soft_limit_in_bytes", num(r.memory_high, "-1")});
        if (cap.memsw && r.memory_max && r.swap_max)
            w.push_back({"memory", "jails", "memory.memsw.limit_in_bytes", std::to_string(*r.memory_max + *r.swap_max)});
        if (r.swap_max && *r.swap_max == 0) w.push_back({"memory", "jails", "memory.swappiness", "0"});
        // Written even as -1: only a written limit turns the accounting of
        // the leaf's new sockets on (the kernel's tcpmem_active).
        if (cap.tcp) w.push_back({"memory", "jails", "memory.kmem.tcp.limit_in_bytes", num(tcp_memory_max(r), "-1")});
        w.push_back({"memory", "net", "memory.limit_in_bytes", num(net_memory_max(r), "-1")});
        if (cap.tcp) w.push_back({"memory", "net", "memory.kmem.tcp.limit_in_bytes", num(net_memory_max(r), "-1")});
    }
    if (cap.pids) w.push_back({"pids", "jails", "pids.max", num(r.tasks_max, "max")});
    return w;
}

std::optional<std::uint64_t> net_memory_max(const ResolvedLimits& r) {
    if (!r.memory_max) return std::nullopt;
    return std::max(*r.memory_max / 8, kMinNetMemory);
}

std::optional<std::uint64_t> tcp_memory_max(const ResolvedLimits& r) {
    if (!r.memory_max) return std::nullopt;
    return std::max(*r.memory_max / 4, kMinNetMemory);
}

std::string limits_summary(const Limits& l, const std::optional<ResolvedLimits>& r) {
    auto mem = [&](const char* name, const MemoryAmount& m, const std::optional<std::uint64_t>& n) {
        std::string s = std::string(name) + " " + memory_amount_text(m);
        if (r && m.kind == MemoryAmount::Kind::percent && n) s += " (" + byte_count_text(*n) + ")";
        return s;
    };
    return mem("memory_max", l.memory_max, r ? r->memory_max : std::nullopt) + ", " +
           mem("memory_high", l.memory_high, r ? r->memory_high : std::nullopt) + ", " +
           mem("memory_swap_max", l.memory_swap_max, std::nullopt) + ", tasks_max " +
           (l.tasks_max ? std::to_string(l.tasks_max) : std::string("max")) + ", cpu_weight " +
           std::to_string(l.cpu_weight) + ", cgroup " + l.cgroup_parent + "/UID";
}

}  // namespace clihost
