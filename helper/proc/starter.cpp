// starter.cpp: the front's side of the supervisor program (starter.hpp).
#include "proc/starter.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "host/trusted_path.hpp"
#include "proc/clean_state.hpp"
#include "proc/supervise.hpp"

namespace clihost {
namespace {

// The supervisor's bounds (session.cpp): the lock holder's placement
// (systemd's call, then its move), the tenant's lock, then the start or
// the stop itself.
constexpr int kPlaceSeconds = 10;
constexpr int kLockSeconds = 30;
constexpr int kStartSeconds = 20;
constexpr int kStopSeconds = 10;

// The starter's child: root through and through (clean_state: the caller
// can no longer signal, stop or trace it), in a session of its own (no
// terminal's signal reaches it), then, for a start, forked once more (the
// supervisor is init's child, or a subreaper's, and no session leader: it
// can never get a terminal), the supervisor program exec'd: its absolute
// path, an empty environment, the report on fd 3 and nothing else.
[[noreturn]] void exec_supervisor(int report_fd, bool detach, char* const* argv) noexcept {
    char* const envp[] = {nullptr};
    if (auto st = clean_state(report_fd); !st) {
        write_report(report_fd, st.error());
        ::_exit(static_cast<int>(st.error().code));
    }
    if (::setsid() < 0) {
        write_report(3, fail(Exit::internal, "setsid failed"));
        ::_exit(static_cast<int>(Exit::internal));
    }
    if (detach) {
        const pid_t pid = ::fork();
        if (pid < 0) write_report(3, fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno)));
        if (pid != 0) ::_exit(pid < 0 ? static_cast<int>(Exit::internal) : 0);
    }
    ::execve(kSupervisorPath, argv, envp);
    write_report(3, fail(Exit::host, std::string("cannot run the supervisor ") + kSupervisorPath + ": " +
                                         std::strerror(errno)));
    ::_exit(static_cast<int>(Exit::host));
}

// Runs the supervisor program with `args`. The front waits `seconds` for
// its report; a child that reported is root and ends at once (a start's
// child right after its fork), and its wait status is returned; one that
// did not may have been stopped by the caller before it became root: not
// waited for (init reaps it once the front is gone).
Result<int> run_supervisor(const SupervisorArgs& args, bool detach, int seconds, const std::string& what,
                           const char* verb) {
    if (auto st = check_trusted_executable("the supervisor", kSupervisorPath); !st) return st.error();
    const std::vector<std::string> words = supervisor_argv(args);
    std::vector<char*> argv;
    argv.reserve(words.size() + 1);
    for (const auto& w : words) argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(nullptr);
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return fail(Exit::internal, "pipe failed");
    const pid_t child = ::fork();
    if (child == 0) exec_supervisor(report[1], detach, argv.data());
    ::close(report[1]);
    if (child < 0) {
        ::close(report[0]);
        return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    }
    const Status up = read_report(report[0], seconds, what, verb);
    ::close(report[0]);
    int status = 0;
    while (::waitpid(child, &status, up ? 0 : WNOHANG) < 0 && errno == EINTR) {}
    if (!up) return up.error();
    return status;
}

}  // namespace

Result<SupervisorRecord> ensure_session_jail(const SupervisorArgs& args) {
    auto dir = RuntimeDir::open();
    if (!dir) return dir.error();
    // A live supervisor, without the lock: its record is replaced whole (a
    // rename), and the handover verifies it again (connect_endpoint).
    if (auto r = dir.value().read(args.uid); r && record_is_live(*r)) return *r;
    auto started = run_supervisor(args, true, kPlaceSeconds + kLockSeconds + kStartSeconds + 5, "the session jail",
                                  "start");
    if (!started) return started.error();
    auto r = dir.value().read(args.uid);
    if (!r || !record_is_live(*r)) return fail(Exit::internal, "the session jail started but is gone");
    return *r;
}

std::optional<SupervisorRecord> find_session_jail(uid_t uid) {
    auto dir = RuntimeDir::open();
    if (!dir) return std::nullopt;
    auto r = dir.value().read(uid);
    if (!r || !record_is_live(*r)) return std::nullopt;
    return r;
}

bool session_jail_ended(const SupervisorRecord& r, int millis) {
    const UniqueFd pidfd = open_supervisor(r);
    if (!pidfd.valid()) return true;
    pollfd p{pidfd.get(), POLLIN, 0};
    int n;
    while ((n = ::poll(&p, 1, millis)) < 0 && errno == EINTR) {}
    return n == 1;
}

std::optional<JailSettings> session_jail_settings(const SupervisorRecord& r) {
    auto dir = RuntimeDir::open();
    if (!dir) return std::nullopt;
    return dir.value().read_settings(r);
}

bool session_network_lost(const SupervisorRecord& r) {
    auto dir = RuntimeDir::open();
    return dir && dir.value().network_lost(r);
}

std::vector<SupervisorRecord> live_session_jails() {
    std::vector<SupervisorRecord> out;
    auto dir = RuntimeDir::open();
    if (!dir) return out;
    for (auto& r : dir.value().all())
        if (record_is_live(r)) out.push_back(std::move(r));
    return out;
}

Result<Stopped> stop_session_jail(const SupervisorArgs& args) {
    // The holder's placement, the lock's wait, the supervisor's end (SIGKILL
    // after kStopSeconds), then what is left in the jails: each bounded.
    auto ended = run_supervisor(args, false, kPlaceSeconds + kLockSeconds + kStopSeconds + 15, "the stop", "end");
    if (!ended) return ended.error();
    const int st = ended.value();
    if (!WIFEXITED(st) || WEXITSTATUS(st) > static_cast<int>(Stopped::supervisor_only))
        return fail(Exit::internal, "the stop ended without saying what it stopped");
    return static_cast<Stopped>(WEXITSTATUS(st));
}

}  // namespace clihost
