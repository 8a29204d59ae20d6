// probe.hpp: what this host supports, read from /proc/self/mountinfo and from
// real trials in forked, unprivileged children; never guessed from env vars.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "decide/host_facts.hpp"

namespace clihost {

// Pure: does the topmost mount on /proc in this mountinfo have hidepid=2/invisible?
bool mountinfo_proc_hidepid(std::string_view mountinfo);

// lstat each path (and readlink symlinks) so the plan binds only what exists.
std::vector<HostPath> inspect_host_paths(const std::vector<std::string>& paths);
// The entries of /etc/profile.d (HostProbe::profile_d), sorted; false when
// it is not a directory, cannot be read or has more than 256 entries.
bool list_profile_d(std::vector<HostPath>& out);

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
