// jail_view.cpp: see jail_view.hpp.
#include "host/jail_view.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.hpp"
#include "decide/plan.hpp"

namespace clihost {
namespace {

constexpr const char* kInfoName = "jail.json";
constexpr const char* kInfoTmp = "jail.json.tmp";

Error view_error(const std::string& what) {
    return Error{Exit::host, "cannot keep " + std::string(kJailViewRoot) + ": " + what + ": " + std::strerror(errno)};
}

// A write that fails (a full file system, the caller's RLIMIT_FSIZE the
// supervisor inherited) is a runtime file that cannot be written, as the
// supervisor's own records (runtime_state.cpp: RuntimeDir::replace_file).
Error write_error() {
    return Error{Exit::internal, "cannot write the session jail's jail.json in " + std::string(kJailViewRoot) + ": " +
                                     std::strerror(errno)};
}

// The directory `name` under `at`, made with `mode` if absent, opened
// without following a link, root's with `mode` exactly (a directory left
// by anyone else is refused). No chown: the helper's SELinux domain has no
// chown capability (selinux/clihost_jail.te).
Result<UniqueFd> own_dir(int at, const char* name, mode_t mode) {
    if (::mkdirat(at, name, mode) != 0 && errno != EEXIST) return view_error(std::string("mkdir ") + name);
    UniqueFd fd(::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return view_error(std::string("open ") + name);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return view_error(std::string("stat ") + name);
    if (st.st_uid != 0 || st.st_gid != 0 || !S_ISDIR(st.st_mode)) {
        errno = EPERM;
        return view_error(std::string(name) + " is not root's");
    }
    if (::fchmod(fd.get(), mode) != 0) return view_error(std::string("chmod ") + name);
    return fd;
}

}  // namespace

Status write_jail_view(uid_t uid, const std::string& text) {
    auto root = own_dir(AT_FDCWD, std::string(kJailViewRoot).c_str(), 0711);
    if (!root) return root.error();
    auto dir = own_dir(root.value().get(), std::to_string(uid).c_str(), 0755);
    if (!dir) return dir.error();
    const int d = dir.value().get();
    if (::unlinkat(d, kInfoTmp, 0) != 0 && errno != ENOENT) return view_error("unlink jail.json.tmp");
    UniqueFd fd(::openat(d, kInfoTmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return view_error("create jail.json");
    if (::fchmod(fd.get(), 0644) != 0 ||
        ::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::renameat(d, kInfoTmp, d, kInfoName) != 0) {
        const Error e = write_error();
        ::unlinkat(d, kInfoTmp, 0);
        return e;
    }
    return ok_status();
}

void remove_jail_view(uid_t uid) {
    const UniqueFd root(::open(std::string(kJailViewRoot).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!root.valid()) return;
    const std::string name = std::to_string(uid);
    const UniqueFd dir(::openat(root.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.valid()) {
        (void)::unlinkat(dir.get(), kInfoName, 0);
        (void)::unlinkat(dir.get(), kInfoTmp, 0);
    }
    (void)::unlinkat(root.get(), name.c_str(), AT_REMOVEDIR);
}

}  // namespace clihost
