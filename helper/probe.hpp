// probe.hpp: what this host supports, read from /proc/self/mountinfo and from
// real trials in forked, unprivileged children; never guessed from env vars.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace clihost {

struct HostPath {
    enum class Kind { absent, directory, symlink, other };
    std::string path;
    Kind kind{Kind::absent};
    std::string target;  // for symlinks
};

struct HostProbe {
    bool user_namespaces{false};    // unshare(CLONE_NEWUSER) worked for the target uid
    bool fresh_proc{false};         // a new procfs mounted in new user+pid+mount namespaces
    bool host_proc_hidepid{false};  // the host /proc is mounted hidepid=invisible (or 2)
    std::string trial_detail;       // why the trial failed, for messages
    // The trial was left to the jail child (proc = private, run/kill): the
    // plan does not depend on it there, and the child is already forked and
    // unprivileged, so this saves a fork, a drop and two waits per launch.
    bool trial_deferred{false};
    std::vector<HostPath> paths;    // ro_bind entries as found on the host
};

// Pure: does the topmost mount on /proc in this mountinfo have hidepid=2/invisible?
bool mountinfo_proc_hidepid(std::string_view mountinfo);

// lstat each path (and readlink symlinks) so the plan binds only what exists.
std::vector<HostPath> inspect_host_paths(const std::vector<std::string>& paths);

struct TrialResult {
    bool user_namespaces{false};
    bool fresh_proc{false};
    bool process_limit{false};  // the clone failed for RLIMIT_NPROC, not for namespaces
    std::string detail;
};

// A child in new user+pid+mount namespaces (created as uid/gid: when running
// as root, a forked child drops to them first and sets no_new_privs) mounts a
// fresh procfs as pid 1 of the new pid namespace: exactly what bwrap --proc
// will need.
TrialResult trial_namespaces(uid_t uid, gid_t gid);

// The same trial for a process that is already the tenant, without waiting
// for the end of its child's exit (the teardown of the trial's namespaces).
// That child is reaped by whoever reaps this process's children next:
// bwrap, exec'd right after, reaps the children it inherits (0.8.0:
// block_sigchild() before its clone, then its monitor loop's waitpid(-1));
// a waiting process's supervise() reaps every child of its own. A process
// that ends without either calls reap_trial(), which waits for it (a no-op
// when none is pending).
TrialResult trial_namespaces_deferred();
void reap_trial();

// All of the above for one launch; with run_trial false the trial is left to
// the jail child (HostProbe::trial_deferred), and mountinfo is not read
// (proc = private never looks at the host /proc: host_proc_hidepid false).
HostProbe probe_host(const std::vector<std::string>& ro_bind, uid_t uid, gid_t gid, bool run_trial);

}  // namespace clihost
