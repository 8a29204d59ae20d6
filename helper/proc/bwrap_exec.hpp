// bwrap_exec.hpp: the last steps before bwrap, as the tenant. A watcher
// starts it in a child sharing its memory (start_bwrap_child), which enters
// the tenant's jails leaf and hands bwrap exactly the planned descriptors (kSeccompFd, kStatusFd, kInfoFd, kBlockFd,
// kResolvFd) and the default signal dispositions. Internal to proc/.
#pragma once

#include <array>

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "base/unique_fd.hpp"
#include "decide/plan.hpp"

namespace clihost {

// argv/envp for execve: pointers into `v`, null-terminated.
std::vector<char*> c_strings(const std::vector<std::string>& v);

// The deferred host probe, run as the tenant right before bwrap: refuse if
// a fresh procfs cannot be mounted here (proc = private never falls back).
// Right before bwrap, by the watcher that starts it (its supervise() reaps
// the trial's child, probe.hpp).
Status prove_private_proc(const Plan& plan);

// The descriptors a jail's bwrap gets besides its seccomp program (-1: none).
struct JailFds {
    int status{-1};  // kStatusFd: --json-status-fd (one-off jails)
    int info{-1};    // kInfoFd: --info-fd (isolated jails)
    int block{-1};   // kBlockFd: --block-fd (isolated jails)
    int resolv{-1};  // kResolvFd: the jail's resolv.conf (isolated jails)
    int attach{-1};  // kAttachFd: the attach stub's end of its connection (attach jails)
    std::array<int, kMaxDataFiles> data{-1, -1};  // kDataFd + i: Plan::data[i]'s text
};

// Everything bwrap's exec needs, prepared (allocating, opening) before the
// last steps, which make system calls only (place_and_exec): the watcher
// runs those in a child that shares its memory (start_bwrap_child).
struct BwrapExec {
    const Plan* plan{nullptr};
    std::vector<char*> argv, envp;
    // Each planned descriptor (the seccomp program first) as a close-on-exec
    // copy above every target number, and its target: a source may sit on
    // another one's target (with no syslog socket open, a pipe can be fd 3,
    // which the seccomp program takes).
    std::vector<UniqueFd> copies;
    std::vector<std::pair<int, int>> place;  // {copy, target}
    bool fault_exec{false};
};


// The bwrap child of a watcher (already the tenant), started vfork-style:
// clone(CLONE_VM) shares the watcher's memory until the child's execve
// instead of copying it (a fork copied the whole address space the root
// parent had built, PAM modules included: most of a fork's cost). Not
// CLONE_VFORK: a one-off jail's child waits for the watcher to leave the
// caller's session (below), so the watcher runs meanwhile; it writes
// nothing the child reads until the child has exec'd (await_bwrap_exec).
// The child makes system calls only: everything it needs is prepared
// first (BwrapExec), and what went wrong is sent back on a close-on-exec
// pipe (errno is shared with the watcher: the child reads it right after
// the call that failed, for that step's message).
//
// It dies with the watcher until bwrap's own --die-with-parent is armed. A
// session jail gets a session of its own; a one-off jail stays on the
// caller's terminal in a process group of its own, and waits until the
// watcher has left the terminal's session (see watch_jail) before anything
// of the jail runs.
struct BwrapChild {
    BwrapExec exec;
    pid_t watcher{-1};
    bool own_session{false};  // the session jail: setsid, not a process group of its own
    int stderr_fd{-1}, go_fd{-1};
    std::vector<int> jails;  // the jails leaf's cgroup.procs (JailPlacement), entered first
    bool fault_cgroup{false};
    int err_write{-1};  // by number: the watcher closes its own copy after the clone
    UniqueFd err_read;  // end of file here: the child's write end closed in its execve
};


// Prepares everything the child needs and starts it (a session of its own
// if `own_session`). Returns its pid, or the error (nothing started).
Result<pid_t> start_bwrap_child(BwrapChild& c, const Plan& plan, pid_t watcher, bool own_session, int stderr_fd,
                                int go_fd, const JailFds& fds, const std::vector<UniqueFd>* jails);

// Blocks until the child has exec'd bwrap (ok) or failed; its failure is
// the error it reported (it exits with that error's code). Until this
// returns, the watcher must not write memory the child reads.
Status await_bwrap_exec(BwrapChild& c);

}  // namespace clihost
