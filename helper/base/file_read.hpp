// file_read.hpp: the one bounded file reader. A file that is larger than its
// bound is an error, never silently truncated: a truncated policy could lose
// a later (stricter) line, and a truncated mountinfo could lose the mount
// that lies on top of /proc.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.hpp"

namespace clihost {

// Reads fd to its end. `what` names the file in the messages:
// "cannot read WHAT" and "WHAT is too large" (both Exit::host).
Result<std::string> read_bounded(int fd, std::size_t max, const std::string& what);

// The same for a path, opened O_RDONLY|O_CLOEXEC (following symlinks: for
// files the kernel provides, like /proc/self/mountinfo; a file an attacker
// may place goes through open_trusted and the fd overload instead).
Result<std::string> read_bounded(const std::string& path, std::size_t max);

}  // namespace clihost
