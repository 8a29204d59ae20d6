// cgroup.cpp: the tenant's cgroup on the cgroup file system (cgroup.hpp).
// Size: one class over v1 and v2 (its leaves made, limited, entered, read,
// killed and removed), sharing this file's bounded file helpers.
#include "host/cgroup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/file_read.hpp"
#include "decide/systemd_scope.hpp"
#include "host/cgroup_files.hpp"

namespace clihost {
namespace {

using cgroupfs::exists;
using cgroupfs::keyed;
using cgroupfs::read_file;
using cgroupfs::read_number;



std::string errno_text(int err) { return std::strerror(err); }

Status write_file(const std::string& path, const std::string& value) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return fail(Exit::host, "cannot open " + path + ": " + errno_text(errno));
    const auto n = ::write(fd, value.data(), value.size());
    const int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(value.size()))
        return fail(Exit::host, "cannot write " + value + " to " + path + ": " + errno_text(err));
    return ok_status();
}


// v2: hands the limited controllers that `dir` has down to its children
// (cgroup.subtree_control), or the leaves below get no limit files.
void hand_down_controllers(const std::string& dir) {
    const auto have = read_file(dir + "/cgroup.controllers").value_or("");
    for (const std::string_view c : kLimitedControllers) {
        if (have.find(c) == std::string::npos) continue;
        // Appended, not "+" + std::string(c): GCC 12 at -O3 warns of that
        // falsely (-Wrestrict).
        std::string line(1, '+');
        line.append(c);
        (void)write_file(dir + "/cgroup.subtree_control", line);
    }
}




Status make_dir(const std::string& path) {
    if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) {
        struct stat st{};
        // Ours (root's), not a directory someone else made for us to fill.
        if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
            return fail(Exit::host, path + " is not a directory of root's");
        return ok_status();
    }
    return fail(Exit::host, "cannot create " + path + ": " + errno_text(errno));
}

std::vector<pid_t> procs(const std::string& leaf) {
    std::vector<pid_t> out;
    const auto text = read_file(leaf + "/cgroup.procs");
    if (!text) return out;
    std::size_t pos = 0;
    while (pos < text->size()) {
        auto nl = text->find('\n', pos);
        if (nl == std::string::npos) nl = text->size();
        int pid = 0;
        auto [ptr, ec] = std::from_chars(text->data() + pos, text->data() + nl, pid);
        if (ec == std::errc{} && ptr == text->data() + nl && pid > 0) out.push_back(pid);
        pos = nl + 1;
    }
    return out;
}

void sleep_ms(long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000};
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

}  // namespace


std::uint64_t available_memory(const CgroupHost& host, const std::string& parent, const std::string& meminfo) {
    std::uint64_t avail = keyed(meminfo, "MemTotal").value_or(0) * 1024;
    const CgroupHierarchy* mem = nullptr;
    for (const auto& h : host.hierarchies)
        if (h.controller == (host.version == CgroupVersion::v2 ? "" : "memory")) mem = &h;
    if (mem == nullptr) return avail;
    const char* file = host.version == CgroupVersion::v2 ? "memory.max" : "memory.limit_in_bytes";
    std::string dir = mem->mount;
    std::size_t pos = 0;
    while (true) {
        if (auto n = read_number(dir + "/" + file); n && *n < avail) avail = *n;
        if (pos > parent.size()) break;
        const auto slash = std::min(parent.find('/', pos), parent.size());
        // Appended piece by piece: "/" + substr trips GCC 12's -O3 -Wrestrict
        // false positive (the Release -Werror build).
        dir.append(1, '/').append(parent, pos, slash - pos);
        pos = slash + 1;
        if (!exists(dir)) break;
    }
    return avail;
}

Result<TenantCgroup> TenantCgroup::setup(const CgroupHost& host, const Limits& limits, uid_t uid,
                                         const std::string& meminfo) {
    return setup_at(host, limits, limits.cgroup_parent + "/" + std::to_string(uid), meminfo);
}

Result<TenantCgroup> TenantCgroup::setup_at(const CgroupHost& host, const Limits& limits, const std::string& rel,
                                            const std::string& meminfo) {
    TenantCgroup cg;
    cg.version_ = host.version;
    cg.rel_ = rel;
    cg.resolved_ = resolve_limits(limits, available_memory(host, rel.substr(0, rel.rfind('/')), meminfo));
    std::string why = host.why_not;
    for (const auto& h : host.hierarchies) {
        // PARENT's components, then UID and its two leaves.
        std::string dir = h.mount;
        Status made = ok_status();
        std::size_t pos = 0;
        while (made && pos <= rel.size()) {
            const auto slash = std::min(rel.find('/', pos), rel.size());
            // v2: each level hands the controllers down to the next.
            if (host.version == CgroupVersion::v2) hand_down_controllers(dir);
            dir.append(1, '/').append(rel, pos, slash - pos);  // not "/" + substr: as in available_memory
            made = make_dir(dir);
            pos = slash + 1;
        }
        if (made && host.version == CgroupVersion::v2) hand_down_controllers(dir);
        if (made) made = make_dir(dir + "/supervisor");
        if (made) made = make_dir(dir + "/jails");
        if (made) (void)make_dir(dir + "/query");  // optional: limit_query_leaf decides
        if (made) made = make_dir(dir + "/net");
        if (!made) {
            if (why.empty()) why = made.error().message;
            continue;
        }
        cg.nodes_.push_back({h.controller, dir});
    }
    // What the leaves can carry: their limit files are there.
    auto has = [&](const char* controller, const std::string& leaf_file) {
        const Node* n = cg.node_of(controller);
        return n != nullptr && exists(n->dir + "/" + leaf_file);
    };
    if (host.version == CgroupVersion::v2) {
        cg.cap_ = {has("", "jails/memory.max"), has("", "jails/memory.swap.max"), has("", "jails/pids.max"),
                   has("", "cpu.weight"), why};
    } else {
        cg.cap_ = {has("memory", "jails/memory.limit_in_bytes"), has("memory", "jails/memory.memsw.limit_in_bytes"),
                   has("pids", "jails/pids.max"), has("cpu", "cpu.shares"), why};
        cg.cap_.tcp = has("memory", "jails/memory.kmem.tcp.limit_in_bytes");
    }
    if (cg.cap_.why_not.empty() && !(cg.cap_.memory && cg.cap_.pids && cg.cap_.cpu))
        cg.cap_.why_not = "the controller is not available under " + limits.cgroup_parent;
    auto decided = decide_enforcement(limits, cg.resolved_, host.version, cg.cap_);
    if (!decided) return decided.error();
    cg.warnings_ = decided.value().warnings;
    for (const auto& w : limit_writes(cg.resolved_, host.version, cg.cap_)) {
        const Node* n = cg.node_of(w.controller);
        if (n == nullptr) return fail(Exit::internal, "no cgroup for " + w.file);
        const std::string dir = w.node.empty() ? n->dir : n->dir + "/" + w.node;
        if (auto st = write_file(dir + "/" + w.file, w.value); !st) return st.error();
    }
    cg.limit_query_leaf();
    return cg;
}

// The query leaf's own small limits (kQueryTasks, kQueryMemory), in each
// hierarchy that limits the jails leaf. Where one cannot be written, the
// leaf goes and queries use the jails leaf, as before it existed: never a
// query leaf without limits.
void TenantCgroup::limit_query_leaf() const {
    const bool v2 = version_ == CgroupVersion::v2;
    std::vector<std::pair<const char*, std::string>> writes;  // controller, file
    if (cap_.pids) writes.emplace_back(v2 ? "" : "pids", "pids.max");
    if (cap_.memory) writes.emplace_back(v2 ? "" : "memory", v2 ? "memory.max" : "memory.limit_in_bytes");
    bool ok = true;
    for (const auto& [controller, file] : writes) {
        const Node* n = node_of(controller);
        const std::string value = std::to_string(file == "pids.max" ? kQueryTasks : kQueryMemory);
        ok = ok && n != nullptr && write_file(n->dir + "/query/" + file, value).ok();
    }
    if (ok && !writes.empty()) return;
    for (const auto& n : nodes_) (void)::rmdir((n.dir + "/query").c_str());
}

bool TenantCgroup::has_query_leaf() const {
    if (nodes_.empty()) return false;
    for (const auto& n : nodes_)
        if (!exists(n.dir + "/query/cgroup.procs")) return false;
    return true;
}




std::string TenantCgroup::path() const { return placed() ? "/" + rel_ : ""; }

Status TenantCgroup::enter(const char* leaf, pid_t pid) const {
    for (const auto& n : nodes_)
        if (auto st = write_file(n.dir + "/" + leaf + "/cgroup.procs", std::to_string(pid)); !st) return st.error();
    return ok_status();
}

Status TenantCgroup::enter_supervisor(pid_t pid) const { return enter("supervisor", pid); }
Result<std::vector<UniqueFd>> TenantCgroup::open_jails() const { return open_leaf("jails"); }
Result<std::vector<UniqueFd>> TenantCgroup::open_net() const {
    // A cgroup an earlier build made has no net leaf: its slirp4netns stays
    // in the supervisor's leaf, as it did then, until the tenant's `stop`.
    for (const auto& n : nodes_)
        if (!exists(n.dir + "/net")) return std::vector<UniqueFd>{};
    return open_leaf("net");
}

Result<std::vector<UniqueFd>> TenantCgroup::open_leaf(const char* leaf) const {
    std::vector<UniqueFd> out;
    for (const auto& n : nodes_) {
        const std::string file = n.dir + "/" + leaf + "/cgroup.procs";
        UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd.valid()) return fail(Exit::internal, "cannot open " + file + ": " + errno_text(errno));
        out.push_back(std::move(fd));
    }
    return out;
}

Result<UniqueFd> TenantCgroup::watch_oom() const {
    const bool v2 = version_ == CgroupVersion::v2;
    const Node* m = node_of(v2 ? "" : "memory");
    if (m == nullptr) return fail(Exit::host, "the tenant has no memory cgroup to watch");
    if (v2) {
        // memory.events changes on each OOM kill (kernfs notifies inotify).
        UniqueFd in(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
        const std::string file = m->dir + "/jails/memory.events";
        if (!in.valid() || ::inotify_add_watch(in.get(), file.c_str(), IN_MODIFY) < 0)
            return fail(Exit::internal, "cannot watch " + file + ": " + errno_text(errno));
        return in;
    }
    // v1: an eventfd the kernel signals on each OOM of the jails leaf
    // (cgroup.event_control with memory.oom_control).
    UniqueFd ev(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    const std::string control = m->dir + "/jails/memory.oom_control";
    const UniqueFd oom(::open(control.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    const std::string events = m->dir + "/jails/cgroup.event_control";
    const UniqueFd ctl(::open(events.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!ev.valid() || !oom.valid() || !ctl.valid())
        return fail(Exit::internal, "cannot watch " + control + ": " + errno_text(errno));
    const std::string line = std::to_string(ev.get()) + " " + std::to_string(oom.get());
    if (::write(ctl.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        return fail(Exit::internal, "cannot watch " + control + ": " + errno_text(errno));
    return ev;
}

std::vector<std::pair<std::string, std::string>> TenantCgroup::applied() const {
    std::vector<std::pair<std::string, std::string>> out;
    auto add = [&](const char* controller, const std::string& file) {
        const Node* n = node_of(controller);
        if (n == nullptr) return;
        auto v = read_file(n->dir + "/" + file);
        if (!v) return;
        while (!v->empty() && v->back() == '\n') v->pop_back();
        out.emplace_back(file, *v);
    };
    if (version_ == CgroupVersion::v2) {
        for (const char* f : {"jails/memory.max", "jails/memory.high", "jails/memory.swap.max", "jails/pids.max"})
            add("", f);
        add("", "cpu.weight");
    } else {
        for (const char* f : {"jails/memory.limit_in_bytes", "jails/memory.soft_limit_in_bytes",
                              "jails/memory.memsw.limit_in_bytes", "jails/memory.swappiness"})
            add("memory", f);
        add("pids", "jails/pids.max");
        add("cpu", "cpu.shares");
    }
    return out;
}

Status TenantCgroup::kill_jails() const {
    if (!placed()) return ok_status();
    const bool v2 = version_ == CgroupVersion::v2;
    auto all_empty = [&] {
        for (const auto& n : nodes_)
            if (!procs(n.dir + "/jails").empty()) return false;
        return true;
    };
    auto kill_listed = [&] {
        for (const auto& n : nodes_)
            for (pid_t pid : procs(n.dir + "/jails")) ::kill(pid, SIGKILL);
    };
    const Node* freezer = node_of("freezer");
    if (v2) {
        // cgroup.kill (Linux 5.14): every process, in one step, forks included.
        if (!exists(nodes_.front().dir + "/jails/cgroup.kill") ||
            !write_file(nodes_.front().dir + "/jails/cgroup.kill", "1"))
            (void)write_file(nodes_.front().dir + "/jails/pids.max", "0");
    } else if (freezer != nullptr) {
        // Frozen, nothing forks or exits while its pids are read and killed.
        const std::string state = freezer->dir + "/jails/freezer.state";
        if (auto st = write_file(state, "FROZEN"); !st) return st.error();
        for (int i = 0; i < 200 && read_file(state).value_or("").rfind("FROZEN", 0) != 0; ++i) sleep_ms(10);
        kill_listed();
        if (auto st = write_file(state, "THAWED"); !st) return st.error();
    } else if (const Node* pids = node_of("pids")) {
        // No new process can appear: each round kills all there are.
        if (auto st = write_file(pids->dir + "/jails/pids.max", "0"); !st) return st.error();
    }
    for (int i = 0; i < 500; ++i, sleep_ms(10)) {
        if (all_empty()) return kill_queries();
        kill_listed();
    }
    return fail(Exit::internal, "the tenant's jails cgroup did not become empty");
}

// The query leaf's few processes (kQueryTasks at most: no fork outruns
// the rounds), SIGKILLed until it is empty.
Status TenantCgroup::kill_queries() const {
    for (int i = 0; i < 500; ++i, sleep_ms(10)) {
        bool empty = true;
        for (const auto& n : nodes_)
            for (pid_t pid : procs(n.dir + "/query")) {
                empty = false;
                ::kill(pid, SIGKILL);
            }
        if (empty) return ok_status();
    }
    return fail(Exit::internal, "the tenant's query cgroup did not become empty");
}

Status TenantCgroup::remove() const {
    // A systemd unit's own cgroup (the tenant's service, an earlier build's
    // scope) is systemd's to remove once empty, never ours in cgroup2 (v2, a
    // hybrid's), where systemd learns it is empty: a unit whose cgroup went
    // first never ends. Only the leaves are ours.
    const bool scope = rel_.rfind(slice_cgroup(kTenantSlice) + "/", 0) == 0;
    for (const auto& n : nodes_)
        for (const std::string& d : {n.dir + "/query", n.dir + "/jails", n.dir + "/net", n.dir + "/supervisor", n.dir}) {
            if (scope && d == n.dir && n.controller.empty()) continue;
            if (::rmdir(d.c_str()) == 0 || errno == ENOENT) continue;
            if (scope && d == n.dir) continue;
            return fail(Exit::internal, "cannot remove " + d + ": " + errno_text(errno));
        }
    return ok_status();
}

Result<std::vector<UniqueFd>> JailPlacement::apply() const {
    std::vector<UniqueFd> jails;
    if (cgroup != nullptr) {
        auto opened = query && cgroup->has_query_leaf() ? cgroup->open_leaf("query") : cgroup->open_jails();
        if (!opened) return fail(Exit::host, "cannot enter the tenant's cgroup: " + opened.error().message);
        jails = std::move(opened).value();
    }
    if (nproc != 0) {
        rlimit rl{};
        if (::getrlimit(RLIMIT_NPROC, &rl) != 0) return fail(Exit::internal, "getrlimit failed");
        const std::uint64_t allowed = query ? nproc + kQueryTasks : nproc;
        rl.rlim_cur = static_cast<rlim_t>(nproc_limit(rl.rlim_cur, allowed));
        rl.rlim_max = static_cast<rlim_t>(nproc_limit(rl.rlim_max, allowed));
        if (::setrlimit(RLIMIT_NPROC, &rl) != 0) return fail(Exit::internal, "cannot set RLIMIT_NPROC");
    }
    return jails;
}

Status make_cgroup(const std::string& mount, const std::string& rel) {
    std::string dir = mount;
    for (std::size_t pos = 0; pos <= rel.size();) {
        const auto slash = std::min(rel.find('/', pos), rel.size());
        dir.append(1, '/').append(rel, pos, slash - pos);  // not "/" + substr: as in available_memory
        pos = slash + 1;
        if (auto st = make_dir(dir); !st) return st;
    }
    return ok_status();
}

Status enter_cgroup(const std::string& dir) { return write_file(dir + "/cgroup.procs", std::to_string(::getpid())); }

}  // namespace clihost
