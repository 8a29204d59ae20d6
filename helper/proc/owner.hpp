// owner.hpp: the supervisor's event loop (docs/ARCHITECTURE.md, "Process
// model"): one thread, poll over the endpoint, each connection and a
// signalfd (SIGCHLD, and HUP/INT/QUIT/TERM: stop); non-blocking everywhere.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "host/cgroup.hpp"
#include "host/runtime_state.hpp"
#include "proc/launch.hpp"
#include "proc/session.hpp"

namespace clihost {

// Serves the tenant's connections once its session jail (`session_watcher`)
// is up: each request (decide/request.hpp) from a root peer, with its three
// descriptors checked, starts a connection jail (spawn_connection_jail) with
// `limits` and PAM's environment; its status goes back to its front. A
// hang-up or the front's end ends that jail (SIGHUP, SIGKILL after 3 s). A
// handshake has 2 s; at most 8 are pending. When the session jail ends or
// a stop signal arrives: the endpoint, record and attach namespace go,
// every jail is ended (SIGKILL after 3 s), everything re-parented to us is
// killed and reaped. Returns the session jail's wait status.
// `place`: each jail's watcher enters the tenant's jails leaf with
// RLIMIT_NPROC = tasks_max; a stop signal kills that leaf (every process of
// every jail, whatever it did) and sets `stopped`.
int serve_connections(const SessionStart& s, const RuntimeDir& dir, std::vector<std::string> pam_env,
                      Rlimits limits, const JailPlacement& place, pid_t session_watcher, UniqueFd listener,
                      bool attach_netns, int sigfd, bool& stopped);

}  // namespace clihost
