// trusted_path.hpp: open a root-controlled file without following symlinks,
// proving that only root could have written it or any directory above it.
#pragma once

#include <sys/stat.h>

#include <string>

#include "base/result.hpp"
#include "base/unique_fd.hpp"

namespace clihost {

struct TrustedFile {
    UniqueFd fd;
    struct stat st {};
};

enum class Trust { missing_ok, must_exist };

// Walks from "/" with openat(O_NOFOLLOW) so that a swapped component cannot
// redirect the walk; every directory and the file must be owned by root and
// not writable by group or others (the doas rule: otherwise a non-root user
// could rewrite the policy or the binary we exec). Returns an invalid fd when
// the file is absent and absence is allowed.
Result<TrustedFile> open_trusted(const std::string& path, Trust trust);

// bwrap is exec'd as root's choice on the tenant's behalf: only root may
// have been able to put it there (doas' rule for its config, applied to the
// binary), and it must be executable.
Status check_trusted_executable(const std::string& what, const std::string& path);

// A program the tenants run in their jails (the attach stub): trusted as
// above, a regular file without the setuid bit, executable by others.
Status check_tenant_executable(const std::string& what, const std::string& path);

// Linux-PAM silently falls back to /etc/pam.d/other when a service file is
// missing, and Debian's "other" stack admits everyone: refuse instead of
// running a session under rules nobody wrote for us.
Status check_pam_service(const std::string& service);

// True when mode/owner are what open_trusted accepts; exposed for tests.
bool is_trusted_stat(const struct stat& st);

}  // namespace clihost
