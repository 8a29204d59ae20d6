// capture.cpp: the verbs' short tenant processes (capture.hpp). May fork,
// drop (run_as_tenant) and exec bwrap or a fixed argv, read the child's
// pipes within a deadline, and SIGKILL and reap its own children.
#include "proc/capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>

#include "base/unique_fd.hpp"
#include "priv/privdrop.hpp"
#include "proc/bwrap_exec.hpp"
#include "proc/probe.hpp"
#include "proc/supervise.hpp"

namespace clihost {

void exec_jail(const Plan& plan, pid_t expected_parent) noexcept {
    run_as_tenant(plan.creds, expected_parent, SIGKILL, [&] {
        const Error e = [&] {
            // Nobody here would attach its network: it needs a watcher.
            if (plan.net == JailNet::isolated) return fail(Exit::internal, "an isolated jail cannot be exec'd directly");
            // Its argv makes no namespace: it would have the host's network.
            if (plan.net == JailNet::tenant_empty)
                return fail(Exit::internal, "a jail planned to join a namespace cannot be exec'd directly");
            // Nobody here would open its gate.
            if (auto st = prove_private_proc(plan); !st) return st.error();
            // Nobody waits here to read a one-off jail's status: bwrap's
            // --json-status-fd writes it to /dev/null.
            if (!plans_status_report(plan.action)) return exec_bwrap(plan);
            const UniqueFd null(::open("/dev/null", O_WRONLY | O_CLOEXEC));
            if (!null.valid()) return fail(Exit::internal, "cannot open /dev/null");
            return exec_bwrap(plan, JailFds{null.get()});
        }();
        reap_trial();  // not exec'd: no zombie of ours outlives us (init may not reap)
        report_tenant_failure(e);
        return static_cast<int>(e.code);
    });
}

std::vector<Captured> capture_jails(const std::vector<const Plan*>& plans, std::size_t max, int deadline_ms) {
    // Every client jail at once, each on its own pipes: a tenant whose tmux
    // does not answer (a hook that sleeps, a stopped server) delays nobody
    // else, and nobody past the deadline.
    struct Running {
        pid_t pid{-1};
        UniqueFd out, err;
        bool reaped{false};
    };
    std::vector<Captured> got(plans.size());
    std::vector<Running> run(plans.size());
    const pid_t self = ::getpid();
    for (std::size_t i = 0; i < plans.size(); ++i) {
        int o[2] = {-1, -1};
        int e[2] = {-1, -1};
        if (::pipe2(o, O_CLOEXEC) != 0) continue;
        if (::pipe2(e, O_CLOEXEC) != 0) {
            ::close(o[0]);
            ::close(o[1]);
            continue;
        }
        const pid_t pid = ::fork();
        if (pid == 0) {
            if (::dup2(o[1], 1) != 1 || ::dup2(e[1], 2) != 2) ::_exit(static_cast<int>(Exit::internal));
            exec_jail(*plans[i], self);
        }
        ::close(o[1]);
        ::close(e[1]);
        if (pid < 0) {
            ::close(o[0]);
            ::close(e[0]);
            continue;
        }
        run[i].pid = pid;
        run[i].out.reset(o[0]);
        run[i].err.reset(e[0]);
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto left_ms = [&]() -> int {
        if (deadline_ms < 0) return -1;
        const auto spent =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
        return spent >= deadline_ms ? 0 : static_cast<int>(deadline_ms - spent);
    };
    // Output, up to `max` bytes a stream (the rest is read and dropped, so
    // that a client is never blocked on a full pipe), until every stream is
    // at its end or the deadline has passed.
    while (true) {
        std::vector<pollfd> pfds;
        std::vector<std::pair<std::size_t, bool>> which;  // (jail, stderr?)
        for (std::size_t i = 0; i < run.size(); ++i) {
            if (run[i].out.valid()) {
                pfds.push_back({run[i].out.get(), POLLIN, 0});
                which.emplace_back(i, false);
            }
            if (run[i].err.valid()) {
                pfds.push_back({run[i].err.get(), POLLIN, 0});
                which.emplace_back(i, true);
            }
        }
        const int left = left_ms();
        if (pfds.empty() || left == 0) break;
        const int r = ::poll(pfds.data(), pfds.size(), left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        for (std::size_t k = 0; k < pfds.size(); ++k) {
            if (pfds[k].revents == 0) continue;
            auto& [i, is_err] = which[k];
            UniqueFd& fd = is_err ? run[i].err : run[i].out;
            std::string& into = is_err ? got[i].err : got[i].out;
            char buf[4096];
            const ssize_t n = ::read(fd.get(), buf, sizeof buf);
            if (n > 0 && into.size() < max) into.append(buf, std::min(static_cast<std::size_t>(n), max - into.size()));
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) fd.reset();
        }
    }
    // Then each jail's end, within what is left of the deadline; one that
    // has not ended by then is killed (bwrap: its sandbox dies with it,
    // --die-with-parent) and reaped. Our unreaped children: no pid reuse.
    while (true) {
        bool waiting = false;
        for (std::size_t i = 0; i < run.size(); ++i) {
            if (run[i].pid < 0 || run[i].reaped) continue;
            int status = 0;
            const pid_t w = ::waitpid(run[i].pid, &status, WNOHANG);
            if (w == run[i].pid) {
                run[i].reaped = true;
                got[i].status = exit_status_of(status);
            } else {
                waiting = true;
            }
        }
        if (!waiting) break;
        if (left_ms() == 0) {
            for (std::size_t i = 0; i < run.size(); ++i) {
                if (run[i].pid < 0 || run[i].reaped) continue;
                ::kill(run[i].pid, SIGKILL);
                int status = 0;
                while (::waitpid(run[i].pid, &status, 0) < 0 && errno == EINTR) {}
                run[i].reaped = true;
                got[i].timed_out = true;
                got[i].status = exit_status_of(status);
            }
            break;
        }
        ::usleep(2000);
    }
    return got;
}

Captured capture_jail(const Plan& plan, std::size_t max, int deadline_ms) {
    return capture_jails({&plan}, max, deadline_ms).front();
}

std::string dropped_output(const TenantCreds& creds, const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return {};
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        auto run = [&]() noexcept {
            try {
                auto a = c_strings(argv);
                char* no_env[] = {nullptr};
                ::execve(a[0], a.data(), no_env);
            } catch (...) {
            }
            return 127;
        };
        if (::dup2(fds[1], 1) != 1) ::_exit(127);
        // An unprivileged `check` has nobody to become.
        if (::geteuid() != 0) ::_exit(run());
        run_as_tenant(creds, self, SIGKILL, run);
    }
    ::close(fds[1]);
    if (pid < 0) {
        ::close(fds[0]);
        return {};
    }
    std::string out;
    char buf[256];
    ssize_t n;
    while (out.size() < 4096 && ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? out : std::string();
}

}  // namespace clihost
