// supervise.cpp: the waiting parent's part (the supervisor's for its jails,
// each watcher's for its bwrap, `check`'s for its trial). May wait, reap and
// signal its own children, and block signals; starts nothing.
#include "proc/supervise.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "base/unique_fd.hpp"

namespace clihost {
namespace {

// How long a waiting process gives a relayed signal to end its child before
// it SIGKILLs it: bwrap dies at once on any of them, so only a stopped or
// wedged process is still there after this.
constexpr int kGraceSeconds = 3;

}  // namespace

// Everything still our child once the one we wait for is gone is a remnant
// of the jail re-parented to us (we are its subreaper): bwrap's sandbox pid
// 1 whose --die-with-parent was not armed yet (bwrap killed during its
// setup), or one blocked forever after bwrap failed mid-setup. SIGKILL
// reaches a pid namespace's init from outside, and the kernel then kills
// its namespace.
void kill_remaining_children() {
    const std::string path = "/proc/self/task/" + std::to_string(::getpid()) + "/children";
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return;
    char buf[4096];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    if (n <= 0) return;
    buf[n] = '\0';
    char* save = nullptr;
    for (char* tok = ::strtok_r(buf, " \n", &save); tok != nullptr; tok = ::strtok_r(nullptr, " \n", &save)) {
        const long pid = std::strtol(tok, nullptr, 10);
        if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
}

void write_report(int fd, const Status& st) {
    std::string line = st ? std::string("ok") : "fail " + std::to_string(static_cast<int>(st.error().code)) + " " + st.error().message;
    if (line.size() > 1000) line.resize(1000);
    for (char& c : line)
        if (c == '\n') c = ' ';
    line += '\n';
    (void)!::write(fd, line.data(), line.size());
}

ReadUntil read_until(int fd, char stop, std::size_t max, int seconds) {
    ReadUntil got;
    bool reset = false;
    const auto deadline = std::time(nullptr) + seconds;
    while (got.text.find(stop) == std::string::npos && got.text.size() < max) {
        const auto left = deadline - std::time(nullptr);
        pollfd p{fd, POLLIN, 0};
        const int r = left < 0 ? 0 : ::poll(&p, 1, static_cast<int>(left * 1000 + 100));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            got.timed_out = true;
            break;
        }
        char buf[512];
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        // A peer that ended with a message of ours unread (a jail's watcher
        // that failed before its connection) resets the socket: the kernel
        // says so once, and what it wrote before is still to be read.
        if (n < 0 && errno == ECONNRESET && !reset) {
            reset = true;
            continue;
        }
        if (n <= 0) break;
        got.text.append(buf, static_cast<std::size_t>(n));
    }
    return got;
}

Status read_report(int fd, int seconds, const std::string& what, const char* verb) {
    const auto got = read_until(fd, '\n', 2048, seconds);
    if (got.timed_out)
        return fail(Exit::host, what + " did not " + verb + " within " + std::to_string(seconds) + " s");
    const std::string& line = got.text;
    if (line.rfind("ok\n", 0) == 0) return ok_status();
    if (line.rfind("fail ", 0) == 0 && line.size() > 7) {
        const int code = line[5] - '0';
        if (code >= 1 && code <= 4 && line[6] == ' ') {
            auto msg = line.substr(7);
            if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
            return fail(static_cast<Exit>(code), msg);
        }
    }
    return fail(Exit::internal, what + "'s start-up ended without a report");
}

sigset_t relayed_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGCHLD}) sigaddset(&set, s);
    return set;
}

sigset_t group_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGWINCH, SIGTSTP, SIGCONT}) sigaddset(&set, s);
    return set;
}

Status block_relayed_signals() {
    const sigset_t set = relayed_signals();
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return fail(Exit::internal, "sigprocmask failed");
    return ok_status();
}


int supervise(pid_t child) {
    // The terminal's signals a supervisor relays (group_signals) are waited
    // for too: blocked only in a supervisor and the watchers it starts.
    sigset_t set = relayed_signals();
    const sigset_t group = group_signals();
    for (int sig = 1; sig < NSIG; ++sig)
        if (sigismember(&group, sig) == 1) sigaddset(&set, sig);
    int status = -1;
    bool reaped = false;
    std::time_t deadline = 0;  // set once a relayed signal was passed on
    while (true) {
        // Reap whatever has exited: our child, or a descendant re-parented to us.
        bool children_left = true;
        while (true) {
            int st = 0;
            const pid_t r = ::waitpid(-1, &st, WNOHANG);
            if (r == child) {
                status = st;
                reaped = true;
            } else if (r > 0 || (r < 0 && errno == EINTR)) {
                continue;
            } else {
                children_left = !(r < 0 && errno == ECHILD);
                break;
            }
        }
        if (!children_left) break;
        if (reaped) kill_remaining_children();
        siginfo_t info{};
        int sig;
        if (deadline != 0) {
            const std::time_t left = deadline - std::time(nullptr);
            if (left <= 0) {
                // The signal was not obeyed in time (a stopped or wedged
                // process): no root process waits forever on a tenant's.
                if (!reaped) ::kill(child, SIGKILL);
                kill_remaining_children();
                deadline = std::time(nullptr) + kGraceSeconds;
                continue;
            }
            const timespec wait{left, 0};
            sig = ::sigtimedwait(&set, &info, &wait);
            if (sig < 0 && errno == EAGAIN) continue;
        } else {
            sig = ::sigwaitinfo(&set, &info);
        }
        if (sig < 0) {
            if (errno == EINTR) continue;
            // Cannot happen with a valid set; wait blocking instead of spinning.
            while (::waitpid(-1, &status, 0) > 0 || errno == EINTR) {}
            break;
        }
        // TERM/HUP (including our own parent-death SIGHUP): pass it
        // on, and wake the child should something have stopped it; bwrap
        // dies, and --die-with-parent takes the whole jail with it (what it
        // leaves behind comes to us and is SIGKILLed above).
        // WINCH/TSTP/CONT (and a one-off's INT, QUIT), relayed by a front
        // through the supervisor: to the jail's process group (the tmux
        // client re-reads its terminal's size; a one-off command gets its
        // ^C, ^\\, ^Z), as the terminal would send them to its foreground
        // group. A command that ignores its ^C keeps running.
        if (sig == SIGWINCH || sig == SIGTSTP || sig == SIGCONT || sig == SIGINT || sig == SIGQUIT) {
            if (!reaped) ::kill(-child, sig);
            continue;
        }
        if (sig != SIGCHLD && !reaped) {
            ::kill(child, sig);
            ::kill(child, SIGCONT);
            if (deadline == 0) deadline = std::time(nullptr) + kGraceSeconds;
        }
    }
    return reaped ? status : -1;
}

int exit_status_of(int status) {
    if (status == -1) return static_cast<int>(Exit::internal);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return static_cast<int>(Exit::internal);
}

}  // namespace clihost
