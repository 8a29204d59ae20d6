// trusted_path.hpp: open a root-controlled file without following symlinks,
// proving that only root could have written it or any directory above it.
#pragma once

#include <sys/stat.h>

#include <string>

#include "result.hpp"
#include "unique_fd.hpp"

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

// True when mode/owner are what open_trusted accepts; exposed for tests.
bool is_trusted_stat(const struct stat& st);

}  // namespace clihost
