// capture.cpp: `check`'s short tenant processes (capture.hpp). May fork,
// drop (run_as_tenant) and exec bwrap or a fixed argv, read the child's
// pipe, and reap its own children.
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

int trial_jail_status(const Plan& plan) {
    // Its output is not the caller's: stdin, stdout and stderr on /dev/null.
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd <= 2; ++fd)
            if (null < 0 || ::dup2(null, fd) != fd) ::_exit(static_cast<int>(Exit::internal));
        exec_jail(plan, self);
    }
    if (pid < 0) return -1;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return exit_status_of(status);
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
