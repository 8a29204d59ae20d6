// cgroup_usage.cpp: the cgroup file system read, never written: where the
// tenant's cgroup is (placement.hpp:open_tenant_cgroup) and what its jails
// use. The setuid front links this for `list`; the writes (cgroup.cpp,
// placement.cpp) are the supervisor's.
#include <sys/stat.h>
#include <sys/statfs.h>

#include <charconv>
#include <optional>
#include <string>

#include "base/file_read.hpp"
#include "decide/systemd_scope.hpp"
#include "host/cgroup.hpp"
#include "host/cgroup_files.hpp"
#include "host/placement.hpp"
#include "host/systemd_scope.hpp"

namespace clihost {
namespace cgroupfs {

constexpr std::size_t kMaxCgroupFile = 1 << 20;

bool exists(const std::string& path) {
    struct stat st{};
    return ::stat(path.c_str(), &st) == 0;
}

bool is_fs(const std::string& dir, long magic) {
    struct statfs sf{};
    return ::statfs(dir.c_str(), &sf) == 0 && static_cast<long>(sf.f_type) == magic;
}

std::optional<std::string> read_file(const std::string& path) {
    auto r = read_bounded(path, kMaxCgroupFile);
    if (!r) return std::nullopt;
    return r.value();
}

std::optional<std::uint64_t> to_number(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || ptr != s.data() + s.size()) return std::nullopt;
    return n;
}

std::optional<std::uint64_t> read_number(const std::string& path) {
    const auto s = read_file(path);
    return s ? to_number(*s) : std::nullopt;
}

std::optional<std::uint64_t> keyed(const std::string& text, const std::string& key) {
    std::size_t pos = 0;
    while (pos < text.size()) {
        auto nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        std::string_view line(text.data() + pos, nl - pos);
        pos = nl + 1;
        if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
            (line[key.size()] == ' ' || line[key.size()] == ':')) {
            line.remove_prefix(key.size() + 1);
            while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
            if (auto sp = line.find(' '); sp != std::string_view::npos) line = line.substr(0, sp);
            return to_number(line);
        }
    }
    return std::nullopt;
}
}  // namespace cgroupfs

namespace {

constexpr long kCgroupMagic = 0x27e0eb;       // CGROUP_SUPER_MAGIC
constexpr long kCgroup2Magic = 0x63677270;    // CGROUP2_SUPER_MAGIC
constexpr const char* kV1Controllers[] = {"memory", "pids", "cpu", "freezer"};
using cgroupfs::exists;
using cgroupfs::is_fs;
using cgroupfs::keyed;
using cgroupfs::read_file;
using cgroupfs::read_number;

}  // namespace

// systemd is PID 1 here (systemd_scope.hpp): read where the front needs it.
bool systemd_booted() {
    struct stat st{};
    return ::lstat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

CgroupHost detect_cgroups(const std::string& root, bool verify_fs) {
    CgroupHost h;
    if (exists(root + "/cgroup.controllers") && (!verify_fs || is_fs(root, kCgroup2Magic))) {
        h.version = CgroupVersion::v2;
        h.hierarchies.push_back({"", root});
        return h;
    }
    for (const char* c : kV1Controllers) {
        const std::string dir = root + "/" + c;
        if (exists(dir + "/cgroup.procs") && (!verify_fs || is_fs(dir, kCgroupMagic))) h.hierarchies.push_back({c, dir});
    }
    if (h.hierarchies.empty()) {
        h.why_not = "no cgroup file system at " + root;
        return h;
    }
    // A hybrid host's cgroup2: no controller, but every process is in one of
    // its cgroups (the caller's, until moved), which cgroup.freeze holds still.
    const std::string unified = root + "/unified";
    if (exists(unified + "/cgroup.procs") && (!verify_fs || is_fs(unified, kCgroup2Magic)))
        h.hierarchies.push_back({"", unified});
    return h;
}

TenantCgroup TenantCgroup::open(const CgroupHost& host, const std::string& parent, uid_t uid) {
    return open_at(host, parent + "/" + std::to_string(uid));
}

TenantCgroup TenantCgroup::open_at(const CgroupHost& host, const std::string& rel) {
    TenantCgroup cg;
    cg.version_ = host.version;
    cg.rel_ = rel;
    for (const auto& h : host.hierarchies) {
        const std::string dir = h.mount + "/" + cg.rel_;
        if (exists(dir + "/jails") && exists(dir + "/supervisor")) cg.nodes_.push_back({h.controller, dir});
    }
    return cg;
}

const TenantCgroup::Node* TenantCgroup::node_of(const std::string& controller) const {
    for (const auto& n : nodes_)
        if (n.controller == controller) return &n;
    return nullptr;
}

MemorySplit memory_split(const std::string& stat, CgroupVersion version) {
    if (version == CgroupVersion::v2) return {keyed(stat, "anon"), keyed(stat, "file")};
    return {keyed(stat, "total_rss"), keyed(stat, "total_cache")};
}

CgroupUsage TenantCgroup::usage() const {
    CgroupUsage u;
    const bool v2 = version_ == CgroupVersion::v2;
    if (const Node* m = node_of(v2 ? "" : "memory")) {
        u.memory = read_number(m->dir + (v2 ? "/jails/memory.current" : "/jails/memory.usage_in_bytes"));
        if (auto t = read_file(m->dir + (v2 ? "/jails/memory.events" : "/jails/memory.oom_control")))
            u.oom_kills = keyed(*t, "oom_kill");
        if (auto t = read_file(m->dir + "/jails/memory.stat")) {
            const auto split = memory_split(*t, version_);
            u.memory_anon = split.anon;
            u.memory_file = split.file;
        }
        // The jails' socket buffers: v1's counter of their own (outside
        // memory.usage_in_bytes), v2's share of memory.current.
        if (v2) {
            if (auto t = read_file(m->dir + "/jails/memory.stat")) u.tcp_memory = keyed(*t, "sock");
        } else {
            u.tcp_memory = read_number(m->dir + "/jails/memory.kmem.tcp.usage_in_bytes");
        }
        // slirp4netns's memory, with its TCP buffers on v1.
        u.net_memory = read_number(m->dir + (v2 ? "/net/memory.current" : "/net/memory.usage_in_bytes"));
        if (!v2 && u.net_memory)
            if (auto tcp = read_number(m->dir + "/net/memory.kmem.tcp.usage_in_bytes")) *u.net_memory += *tcp;
    }
    if (const Node* p = node_of(v2 ? "" : "pids")) u.tasks = read_number(p->dir + "/jails/pids.current");
    return u;
}

// Where systemd is PID 1 and the tenant's scope exists (its supervisor
// runs), the scope's cgroup; else none.
std::optional<std::string> live_scope(const CgroupHost& host, uid_t uid) {
    if (!systemd_booted() || host.hierarchies.empty()) return std::nullopt;
    // The tenant's service; an earlier build's supervisor, its scope.
    for (const std::string& rel : {tenant_unit_cgroup(uid), tenant_scope_cgroup(uid)}) {
        struct stat st{};
        for (const auto& h : host.hierarchies)
            if (::stat((h.mount + "/" + rel + "/jails").c_str(), &st) == 0) return rel;
    }
    return std::nullopt;
}


TenantCgroup open_tenant_cgroup(const Limits& limits, uid_t uid) {
    const CgroupHost host = detect_cgroups("/sys/fs/cgroup", true);
    if (auto scope = live_scope(host, uid)) return TenantCgroup::open_at(host, *scope);
    return TenantCgroup::open(host, limits.cgroup_parent, uid);
}

}  // namespace clihost
