// attach_stub.cpp: clihost-jail-attach, the command of every attach jail.
// A program of its own (libc and base/fd_pass only, no setuid bit), run by
// bwrap inside the jail as the tenant, with no capabilities and
// no_new_privs. Its jail is started before its connection
// (docs/ARCHITECTURE.md, "Process model"): it waits on kConnFd for one
// message from its watcher, which carries the tmux client's argv, an empty
// word, the client's environment, and two descriptors (the caller's
// terminal, as stdin and stdout; stderr is the watcher's capture already).
// It makes them its stdin and stdout and execs the client. End of file (no
// connection came: the jail is being ended): exit 0. Anything malformed:
// one line on stderr and exit 127, nothing run.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/fd_pass.hpp"

namespace {

constexpr int kConnFd = 8;  // plan.hpp: kAttachFd
constexpr std::size_t kMaxMessage = 65536;
constexpr std::size_t kFds = 2;

int refuse(const char* why) {
    const std::string line = std::string("clihost-jail-attach: ") + why + "\n";
    (void)!::write(2, line.data(), line.size());
    return 127;
}

}  // namespace

int main() {
    // Never privileged: the jail runs it as the tenant, and a setuid copy
    // or a root caller is not what it is for.
    if (::getuid() == 0 || ::geteuid() == 0) return refuse("not to be run as root");
    clihost::Received got = clihost::receive_with_fds(kConnFd, kMaxMessage);
    if (got.n == 0) return 0;  // no connection came
    if (got.n < 0) return refuse("cannot read the connection");
    if (got.truncated || got.fds.size() != kFds) return refuse("malformed connection");
    const std::string& msg = got.data;
    if (msg.empty() || msg.back() != '\0') return refuse("malformed connection");
    // The words, each NUL-terminated: the argv, an empty word, the environment.
    std::vector<std::string> argv, env;
    bool in_env = false;
    for (std::size_t at = 0; at < msg.size();) {
        const std::size_t end = msg.find('\0', at);
        std::string word = msg.substr(at, end - at);
        at = end + 1;
        if (!in_env && word.empty()) in_env = true;
        else if (!in_env) argv.push_back(std::move(word));
        else if (word.find('=') == std::string::npos || word.front() == '=') return refuse("malformed environment");
        else env.push_back(std::move(word));
    }
    if (!in_env || argv.empty() || argv[0].empty() || argv[0][0] != '/') return refuse("malformed command");
    for (std::size_t i = 0; i < kFds; ++i)
        if (::dup2(got.fds[i].get(), static_cast<int>(i)) != static_cast<int>(i)) return refuse("cannot take the terminal");
    // Nothing else of ours reaches the client: the received copies and the
    // channel are close-on-exec (MSG_CMSG_CLOEXEC; the channel closed here).
    (void)::close(kConnFd);
    std::vector<char*> a, e;
    for (auto& w : argv) a.push_back(w.data());
    a.push_back(nullptr);
    for (auto& w : env) e.push_back(w.data());
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    return refuse((std::string("cannot execute ") + argv[0] + ": " + std::strerror(errno)).c_str());
}
