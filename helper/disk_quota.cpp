// disk_quota.cpp: see disk_quota.hpp.
#include "disk_quota.hpp"

#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/quota.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "file_read.hpp"
#include "unique_fd.hpp"

namespace clihost {
namespace {

std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (pos < line.size()) {
        auto end = line.find(' ', pos);
        if (end == std::string_view::npos) end = line.size();
        if (end > pos) out.push_back(line.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

// mountinfo writes ' ', '\t', '\n' and '\\' in paths as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            const auto oct = s.substr(i + 1, 3);
            unsigned v = 0;
            bool ok = oct.size() == 3;
            for (char c : oct) {
                if (c < '0' || c > '7') ok = false;
                v = v * 8 + static_cast<unsigned>(c - '0');
            }
            if (ok && v < 256) {
                out += static_cast<char>(v);
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

bool contains_path(std::string_view mount_point, std::string_view path) {
    if (mount_point == "/" || mount_point == path) return true;
    return path.size() > mount_point.size() && path.substr(0, mount_point.size()) == mount_point &&
           path[mount_point.size()] == '/';
}

bool parse_dev(std::string_view s, unsigned& major, unsigned& minor) {
    const auto colon = s.find(':');
    if (colon == std::string_view::npos) return false;
    const auto a = s.substr(0, colon), b = s.substr(colon + 1);
    const auto ra = std::from_chars(a.data(), a.data() + a.size(), major);
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), minor);
    return !a.empty() && !b.empty() && ra.ec == std::errc{} && ra.ptr == a.data() + a.size() &&
           rb.ec == std::errc{} && rb.ptr == b.data() + b.size();
}

std::string size_text(std::uint64_t bytes) {
    const char* units[] = {"B", "K", "M", "G", "T"};
    std::size_t u = 0;
    std::uint64_t whole = bytes;
    while (whole >= 1024 && u < 4) {
        whole /= 1024;
        ++u;
    }
    return std::to_string(whole) + units[u];
}

long quotactl_fd(int fd, unsigned cmd, unsigned id, void* addr) {
#ifdef SYS_quotactl_fd
    return ::syscall(SYS_quotactl_fd, fd, cmd, id, addr);
#else
    errno = ENOSYS;
    return -1;
#endif
}

// The state of one quota type, then the limit of `id` under it.
QuotaKind read_kind(int fd, int type, unsigned id, std::uint32_t acct_flag, std::uint32_t enfd_flag) {
    QuotaKind k;
    fs_quota_statv st{};
    st.qs_version = FS_QSTATV_VERSION1;
    if (quotactl_fd(fd, QCMD(Q_XGETQSTATV, type), 0, &st) != 0) {
        k.error = errno;
        return k;
    }
    k.accounting = (st.qs_flags & acct_flag) != 0;
    k.enforced = (st.qs_flags & enfd_flag) != 0;
    if (!k.accounting) return k;
    if_dqblk q{};
    if (quotactl_fd(fd, QCMD(Q_GETQUOTA, type), id, &q) != 0) {
        k.error = errno;
        return k;
    }
    const std::uint64_t limit = q.dqb_bhardlimit != 0 ? q.dqb_bhardlimit : q.dqb_bsoftlimit;
    k.has_limit = (q.dqb_valid & QIF_BLIMITS) != 0 && limit != 0;
    k.limit = limit * QIF_DQBLKSIZE;
    k.used = q.dqb_curspace;
    return k;
}

std::string where(const QuotaFacts& f) {
    if (!f.mount) return f.home;
    return f.mount->mount_point + " (" + f.mount->fstype + ", " + f.mount->source + ")";
}

std::string how_to_turn_on(const QuotaFacts& f) {
    const std::string mp = f.mount ? f.mount->mount_point : "MOUNTPOINT";
    const std::string dev = f.mount ? f.mount->source : "DEVICE";
    const std::string limit = "setquota -u " + f.tenant + " SOFT HARD 0 0 " + mp;
    const std::string type = f.mount ? f.mount->fstype : "";
    if (type == "ext4")
        return "fix: tune2fs -O quota " + dev + " while it is unmounted (or quotacheck -cum " + mp +
               "), add usrquota to its options in /etc/fstab and remount, then " + limit;
    if (type == "xfs")
        return "fix: mount it with uquota (for /: rootflags=uquota on the kernel command line), then xfs_quota -x "
               "-c 'limit -u bhard=SIZE " + f.tenant + "' " + mp;
    return "fix: put the homes on an ext4 or xfs file system with user quotas (" +
           (type.empty() ? std::string("this one") : type) + " has none that check can read)";
}

}  // namespace

std::optional<MountEntry> mount_of_device(std::string_view mountinfo, unsigned major, unsigned minor,
                                          std::string_view path) {
    std::optional<MountEntry> first, best;
    std::size_t pos = 0;
    while (pos < mountinfo.size()) {
        auto nl = mountinfo.find('\n', pos);
        if (nl == std::string_view::npos) nl = mountinfo.size();
        const auto f = fields(mountinfo.substr(pos, nl - pos));
        pos = nl + 1;
        // id parent major:minor root mountpoint options [optional...] - fstype source superopts
        unsigned ma = 0, mi = 0;
        if (f.size() < 6 || !parse_dev(f[2], ma, mi) || ma != major || mi != minor) continue;
        std::size_t dash = 6;
        while (dash < f.size() && f[dash] != "-") ++dash;
        if (dash + 3 >= f.size()) continue;
        MountEntry m{unescape(f[4]), std::string(f[dash + 1]), unescape(f[dash + 2]),
                     std::string(f[5]) + "," + std::string(f[dash + 3])};
        if (!first) first = m;
        if (contains_path(m.mount_point, path)) best = std::move(m);
    }
    return best ? best : first;
}

QuotaFacts read_quota_facts(const std::string& home, const std::string& tenant, uid_t uid) {
    QuotaFacts f;
    f.home = home;
    f.tenant = tenant;
    // Opened, not read: the directory's file system, device and project.
    // O_NOFOLLOW: a home that is a symbolic link is not followed to wherever it points.
    const UniqueFd fd(::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        f.open_error = errno;
        return f;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0) {
        auto mi = read_bounded("/proc/self/mountinfo", std::size_t{4} << 20);
        if (mi) f.mount = mount_of_device(mi.value(), major(st.st_dev), minor(st.st_dev), home);
    }
    fsxattr attr{};
    if (::ioctl(fd.get(), FS_IOC_FSGETXATTR, &attr) == 0) f.project_id = attr.fsx_projid;
    f.user = read_kind(fd.get(), USRQUOTA, static_cast<unsigned>(uid), FS_QUOTA_UDQ_ACCT, FS_QUOTA_UDQ_ENFD);
    f.project = read_kind(fd.get(), PRJQUOTA, f.project_id, FS_QUOTA_PDQ_ACCT, FS_QUOTA_PDQ_ENFD);
    return f;
}

QuotaVerdict quota_verdict(const QuotaFacts& f) {
    if (f.open_error != 0)
        return {false, "unknown (cannot open " + f.home + ": " + std::strerror(f.open_error) + ")"};
    const std::string at = where(f);
    const auto limit_text = [](const QuotaKind& k) {
        return "limit " + size_text(k.limit) + ", used " + size_text(k.used);
    };
    if (f.user.enforced && f.user.has_limit)
        return {true, "ok (user quotas are enforced on " + at + ": " + f.tenant + "'s " + limit_text(f.user) + ")"};
    if (f.project_id != 0 && f.project.enforced && f.project.has_limit)
        return {true, "ok (project quotas are enforced on " + at + ": project " + std::to_string(f.project_id) +
                          " of " + f.home + ", " + limit_text(f.project) + ")"};
    const std::string risk = ": " + f.tenant + " can fill " + (f.mount ? f.mount->mount_point : f.home) +
                             ", which every home on it shares" +
                             (f.mount && f.mount->mount_point == "/" ? " with the host's own files and logs" : "");
    // Quotas enforced but no limit for this tenant.
    if (f.user.enforced)
        return {false, "WARNING: user quotas are enforced on " + at + " but " + f.tenant + " has no block limit" +
                           risk + " (fix: setquota -u " + f.tenant + " SOFT HARD 0 0 " +
                           (f.mount ? f.mount->mount_point : f.home) + ")"};
    if (f.user.accounting)
        return {false, "WARNING: user quotas are counted but not enforced on " + at + risk + " (" +
                           how_to_turn_on(f) + ")"};
    if (f.user.error != 0 && f.user.error != ENOSYS && f.user.error != ESRCH && f.user.error != ENOENT)
        return {false, "WARNING: cannot read the quotas of " + at + " (" + std::strerror(f.user.error) + ")" + risk};
    return {false, "WARNING: no quotas on " + at + risk + " (" + how_to_turn_on(f) + ")"};
}

}  // namespace clihost
