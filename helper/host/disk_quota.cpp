// disk_quota.cpp: see disk_quota.hpp.
#include "host/disk_quota.hpp"

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

#include "base/file_read.hpp"
#include "base/unique_fd.hpp"

namespace clihost {
namespace {

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

}  // namespace

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

}  // namespace clihost
