// capture.cpp: `check`'s dropped command (capture.hpp). May fork, drop
// (run_as_tenant) and exec a fixed argv, read the child's pipe, and reap it.
#include "proc/capture.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "priv/privdrop.hpp"
#include "proc/bwrap_exec.hpp"

namespace clihost {

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
