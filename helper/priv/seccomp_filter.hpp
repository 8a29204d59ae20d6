// seccomp_filter.hpp: the seccomp program handed to bwrap (--seccomp FD).
// It denies the terminal ioctls that let a jailed process push input into
// the terminal it shares with its caller (TIOCSTI: bubblewrap's
// CVE-2017-5226; TIOCLINUX: the same on a Linux console), change its line
// discipline (TIOCSETD) or lock it against reopening (TIOCEXCL), without
// taking the jail out of the caller's session, so tmux still gets SIGWINCH
// on resize.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "base/result.hpp"
#include "base/unique_fd.hpp"

namespace clihost {

// Classic BPF over struct seccomp_data: ioctl(fd, TIOCSTI|TIOCLINUX|
// TIOCSETD|TIOCEXCL, ...) fails with EPERM on the native ABI and (x86_64) the
// x32 and i386 compat ABIs; foreign ABIs are killed; everything else is allowed.
std::vector<sock_filter> terminal_injection_filter();

// A sealed memfd holding the program, positioned at offset 0.
Result<UniqueFd> seccomp_program_fd();

}  // namespace clihost
