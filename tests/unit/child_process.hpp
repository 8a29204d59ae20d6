// child_process.hpp: run a body in a forked child and collect what it writes.
// For tests of code that reads or changes the state of the calling process
// (privilege drops) or that must run a real program (sh): the child never
// returns into gtest, whatever happens.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>

namespace clihost::testing {

struct ChildResult {
    std::string output;  // everything the child wrote to the fd it was given
    int status{-1};      // its wait status (-1: it could not be started)
    bool exited_zero() const { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// body(fd) runs in the child with fd the write end of a pipe (close-on-exec:
// dup2 it to keep it across an exec); when body returns, the child _exits 0.
inline ChildResult run_in_child(const std::function<void(int)>& body) {
    ChildResult r;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return r;
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return r;
    }
    if (pid == 0) {
        ::close(fds[0]);
        body(fds[1]);
        ::_exit(0);
    }
    ::close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) r.output.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {}
    return r;
}

}  // namespace clihost::testing
