// trusted_path.cpp: symlink-free, ownership-checked walk from the root.
#include "host/trusted_path.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "base/validate.hpp"

namespace clihost {

bool is_trusted_stat(const struct stat& st) {
    return st.st_uid == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

Status check_trusted_executable(const std::string& what, const std::string& path) {
    auto f = open_trusted(path, Trust::must_exist);
    if (!f) return fail(Exit::host, what + " " + f.error().message);
    if ((f.value().st.st_mode & (S_IXOTH | S_IXUSR)) == 0) return fail(Exit::host, what + " " + path + " is not executable");
    return ok_status();
}

Status check_tenant_executable(const std::string& what, const std::string& path) {
    auto f = open_trusted(path, Trust::must_exist);
    if (!f) return fail(Exit::host, what + " " + f.error().message);
    if (!S_ISREG(f.value().st.st_mode) || (f.value().st.st_mode & S_IXOTH) == 0 || (f.value().st.st_mode & S_ISUID) != 0)
        return fail(Exit::host, what + " " + path + " is not a plain file executable by others");
    return ok_status();
}

Status check_pam_service(const std::string& service) {
    auto f = open_trusted("/etc/pam.d/" + service, Trust::must_exist);
    if (!f) return fail(Exit::host, "PAM service " + service + ": " + f.error().message);
    return ok_status();
}

Result<TrustedFile> open_trusted(const std::string& path, Trust trust) {
    if (!is_clean_absolute_path(path) || path == "/") return fail(Exit::host, "not a clean absolute path: " + path);
    UniqueFd dir(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return fail(Exit::host, "cannot open /: " + std::string(std::strerror(errno)));
    std::size_t pos = 1;
    std::string walked;
    while (true) {
        struct stat st {};
        if (::fstat(dir.get(), &st) != 0) return fail(Exit::host, "cannot stat " + (walked.empty() ? "/" : walked));
        if (!is_trusted_stat(st))
            return fail(Exit::host, (walked.empty() ? std::string("/") : walked) +
                                        " is not root-owned or is writable by group/others");
        const auto slash = path.find('/', pos);
        const std::string name = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        walked += "/" + name;
        const bool last = slash == std::string::npos;
        const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
        UniqueFd next(::openat(dir.get(), name.c_str(), flags));
        if (!next.valid()) {
            const int err = errno;
            if (err == ENOENT && trust == Trust::missing_ok) return TrustedFile{};
            // ELOOP/ENOTDIR: a symlink where none may be; refuse rather than follow.
            return fail(Exit::host, "cannot open " + walked + ": " +
                                        (err == ELOOP ? std::string("is a symlink") : std::strerror(err)));
        }
        if (last) {
            TrustedFile out{std::move(next), {}};
            if (::fstat(out.fd.get(), &out.st) != 0) return fail(Exit::host, "cannot stat " + path);
            if (!S_ISREG(out.st.st_mode)) return fail(Exit::host, path + " is not a regular file");
            if (!is_trusted_stat(out.st))
                return fail(Exit::host, path + " is not root-owned or is writable by group/others");
            return out;
        }
        dir = std::move(next);
        pos = slash + 1;
    }
}

}  // namespace clihost
