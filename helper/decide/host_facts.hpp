// host_facts.hpp: what the probe found on this host, as plain values that
// the pure decisions (plan, proc_decision) read. Filled by proc/probe.
#pragma once

#include <string>
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
    // The entries of the host's /etc/profile.d (paths, sorted), listed when
    // it is a directory of at most kMaxProfileEntries entries.
    bool profile_d_listed{false};
    std::vector<HostPath> profile_d;
};

struct TrialResult {
    bool user_namespaces{false};
    bool fresh_proc{false};
    bool process_limit{false};  // the clone failed for RLIMIT_NPROC, not for namespaces
    std::string detail;
};

}  // namespace clihost
