// container_check.cpp: see container_check.hpp.
#include "host/container_check.hpp"

#include <sys/statvfs.h>

#include "base/file_read.hpp"

namespace clihost {
namespace {

constexpr std::string_view kMaxUserNamespaces = "/proc/sys/user/max_user_namespaces";
// The Docker options an operator needs, named once (install/clihost/README.md).
constexpr std::string_view kDockerSeccomp =
    "in Docker: --security-opt seccomp=clihost-seccomp.json, made by install/clihost/seccomp_allow_userns.py "
    "from Docker's default profile";
constexpr std::string_view kDockerPaths = "in Docker: --security-opt systempaths=unconfined";

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (pos <= s.size()) {
        auto end = s.find(sep, pos);
        if (end == std::string_view::npos) end = s.size();
        if (end > pos) out.push_back(s.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

bool has_option(std::string_view options, std::string_view opt) {
    for (auto o : split(options, ','))
        if (o == opt) return true;
    return false;
}

// One mountinfo line: mount point, and whether its mount or superblock
// options say read-only. False when the line is too short to read.
struct MountLine {
    std::string_view mount_point;
    bool read_only{false};
};

bool parse_line(std::string_view line, MountLine& out) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    const auto f = split(line, ' ');
    if (f.size() < 6) return false;
    out.mount_point = f[4];
    out.read_only = has_option(f[5], "ro");
    std::size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 3 < f.size() && has_option(f[dash + 3], "ro")) out.read_only = true;
    return true;
}

template <class F>
void for_each_mount(std::string_view mountinfo, F&& f) {
    for (auto line : split(mountinfo, '\n')) {
        MountLine m;
        if (parse_line(line, m)) f(m);
    }
}

bool contains_path(std::string_view mount_point, std::string_view path) {
    if (mount_point == "/" || mount_point == path) return true;
    return path.size() > mount_point.size() && path.substr(0, mount_point.size()) == mount_point &&
           path[mount_point.size()] == '/';
}

std::string read_small(const std::string& path) {
    auto r = read_bounded(path, std::size_t{64} << 10);
    return r ? r.value() : std::string();
}

}  // namespace

ContainerFacts read_container_facts() {
    ContainerFacts f;
    const std::string status = read_small("/proc/self/status");
    f.seccomp = status_field(status, "Seccomp");
    f.no_new_privs = status_field(status, "NoNewPrivs") == "1";
    f.max_user_namespaces = std::string(trim(read_small(std::string(kMaxUserNamespaces))));
    f.unprivileged_userns_clone = std::string(trim(read_small("/proc/sys/kernel/unprivileged_userns_clone")));
    // Over 4 MiB: no mounts are known, so nothing is explained or refused from them.
    auto mi = read_bounded("/proc/self/mountinfo", std::size_t{4} << 20);
    if (mi) f.mountinfo = std::move(mi).value();
    return f;
}

std::string status_field(std::string_view status, std::string_view key) {
    for (auto line : split(status, '\n')) {
        if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':')
            return std::string(trim(line.substr(key.size() + 1)));
    }
    return {};
}

std::vector<std::string> mounts_over_proc(std::string_view mountinfo) {
    std::vector<std::string> out;
    for_each_mount(mountinfo, [&](const MountLine& m) {
        if (m.mount_point.size() <= 6 || m.mount_point.substr(0, 6) != "/proc/") return;
        // A permanently empty directory of procfs: the kernel lets a fresh
        // procfs be mounted although something is mounted there (a host's
        // binfmt_misc automount).
        if (m.mount_point == "/proc/sys/fs/binfmt_misc") return;
        for (const auto& seen : out)
            if (seen == m.mount_point) return;
        out.emplace_back(m.mount_point);
    });
    return out;
}

bool read_only_at(std::string_view mountinfo, std::string_view path) {
    // Later lines are mounted on top of earlier ones (a child comes after its
    // parent; a mount on an ancestor listed later hides the earlier deeper one).
    bool read_only = false;
    for_each_mount(mountinfo, [&](const MountLine& m) {
        if (contains_path(m.mount_point, path)) read_only = m.read_only;
    });
    return read_only;
}

std::string why_no_userns(const ContainerFacts& f) {
    if (f.unprivileged_userns_clone == "0") return "the sysctl kernel.unprivileged_userns_clone is 0";
    if (f.max_user_namespaces == "0") return "the sysctl user.max_user_namespaces is 0";
    if (f.seccomp == "2")
        return "a seccomp filter on this process blocks namespace creation (Seccomp: 2 in /proc/self/status, "
               "while the kernel allows user namespaces; " + std::string(kDockerSeccomp) + ")";
    return {};
}

std::string why_no_fresh_proc(const ContainerFacts& f) {
    const auto mounts = mounts_over_proc(f.mountinfo);
    if (mounts.empty()) return {};
    std::string list;
    for (const auto& m : mounts) list.append(list.empty() ? "" : ", ").append(m);
    return "something is mounted over part of /proc (" + list +
           "), so the kernel refuses a fresh procfs in a new user namespace; " + std::string(kDockerPaths);
}

std::string why_not_root(const ContainerFacts& f) {
    if (!f.no_new_privs) return {};
    return "no_new_privs is set on this process (NoNewPrivs: 1 in /proc/self/status), so the kernel ignored the "
           "setuid bit (Docker: --security-opt no-new-privileges); start the container without it, or run the "
           "proxy as root in the container";
}

std::string not_root_message(const ContainerFacts& f) {
    const std::string why = why_not_root(f);
    return "not running with root privileges (" + (why.empty() ? std::string("install setuid root or use sudo") : why) +
           ")";
}

Status check_proc_sys_writable(bool disable_userns, const ContainerFacts& f) {
    if (!disable_userns || !read_only_at(f.mountinfo, kMaxUserNamespaces)) return ok_status();
    return fail(Exit::host, "cannot start the jail: /proc/sys is read-only here, and bwrap --disable-userns must "
                            "write /proc/sys/user/max_user_namespaces; " + std::string(kDockerPaths));
}

Status require_proc_sys_writable(bool disable_userns) {
    // The launch path's cheap question first (one syscall, and one that does
    // not depend on who asks: access() would check the setuid caller's real
    // uid): the facts, mountinfo and all, are read only to word a refusal.
    if (!disable_userns) return ok_status();
    struct statvfs st {};
    if (::statvfs(std::string(kMaxUserNamespaces).c_str(), &st) == 0 && (st.f_flag & ST_RDONLY) == 0)
        return ok_status();
    return check_proc_sys_writable(true, read_container_facts());
}

std::vector<std::pair<std::string, std::string>> container_problems(bool unprivileged, const ContainerFacts& f) {
    std::vector<std::pair<std::string, std::string>> out;
    if (unprivileged && f.no_new_privs) out.emplace_back("no-new-privileges", why_not_root(f));
    // Every attach jail uses --disable-userns (nested_sandbox or not).
    if (auto st = check_proc_sys_writable(true, f); !st) out.emplace_back("/proc/sys", st.error().message);
    return out;
}

}  // namespace clihost
