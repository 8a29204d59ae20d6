// attach_stub.cpp: clihost-jail-attach, the command of every attach jail.
// A program of its own (libc and base/fd_pass only, no setuid bit), run by
// bwrap inside the jail as the tenant, with no capabilities and
// no_new_privs. Its jail is started before its connection
// (docs/ARCHITECTURE.md, "Process model"). It waits on kConnFd for
// messages from its watcher, each of words, each NUL-terminated: a
// command's argv, an empty word, its environment.
//  - A connection: the tmux client's words, and two descriptors (the
//    caller's terminal, as stdin and stdout; stderr is the watcher's
//    capture already). It makes them its stdin and stdout and execs the
//    client.
//  - A query (`list`, `kill`) while it waits: the word "query", then the
//    tmux client's words, and two descriptors (its stdout and stderr). It
//    runs the client in a child of its own, with stdin /dev/null (its own),
//    answers "exit N" (N its exit status, or 128 + its signal) once the
//    client has ended, and waits on.
// End of file (no connection came: the jail is being ended): exit 0.
// Anything malformed: one line on stderr and exit 127, nothing run.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/fd_pass.hpp"

namespace {

constexpr int kConnFd = 8;  // plan.hpp: kAttachFd
constexpr std::size_t kMaxMessage = 65536 + 6;  // plan.hpp: kMaxHandedBytes, and "query\0"
constexpr std::size_t kFds = 2;
constexpr std::string_view kQueryWord{"query\0", 6};  // plan.hpp: kQueryWord

int refuse(const char* why) {
    const std::string line = std::string("clihost-jail-attach: ") + why + "\n";
    (void)!::write(2, line.data(), line.size());
    return 127;
}

struct Command {
    std::vector<std::string> argv, env;
    const char* wrong{nullptr};  // why the words are not a command
};

// The words: the argv (its first an absolute path), an empty word, the
// environment (NAME=value each).
Command parse(std::string_view msg) {
    Command c;
    if (msg.empty() || msg.back() != '\0') {
        c.wrong = "malformed connection";
        return c;
    }
    bool in_env = false;
    for (std::size_t at = 0; at < msg.size();) {
        const std::size_t end = msg.find('\0', at);
        std::string word(msg.substr(at, end - at));
        at = end + 1;
        if (!in_env && word.empty()) in_env = true;
        else if (!in_env) c.argv.push_back(std::move(word));
        else if (word.find('=') == std::string::npos || word.front() == '=') c.wrong = "malformed environment";
        else c.env.push_back(std::move(word));
    }
    if (c.wrong == nullptr && (!in_env || c.argv.empty() || c.argv[0].empty() || c.argv[0][0] != '/'))
        c.wrong = "malformed command";
    return c;
}

[[noreturn]] void exec(Command& c) {
    std::vector<char*> a, e;
    for (auto& w : c.argv) a.push_back(w.data());
    a.push_back(nullptr);
    for (auto& w : c.env) e.push_back(w.data());
    e.push_back(nullptr);
    ::execve(a[0], a.data(), e.data());
    ::_exit(refuse((std::string("cannot execute ") + c.argv[0] + ": " + std::strerror(errno)).c_str()));
}

// A query's client, in a child: its stdout and stderr the two received;
// nothing else of ours reaches it (the received copies are close-on-exec,
// the channel is closed). Its exit status, or 128 + its signal.
int run_query(Command& c, std::vector<clihost::UniqueFd>& fds) {
    const pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (::dup2(fds[0].get(), 1) != 1 || ::dup2(fds[1].get(), 2) != 2 || ::close(kConnFd) != 0) ::_exit(127);
        exec(c);
    }
    // Only the client writes to them now: their ends come when it ends.
    fds.clear();
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

int main() {
    // Never privileged: the jail runs it as the tenant, and a setuid copy
    // or a root caller is not what it is for.
    if (::getuid() == 0 || ::geteuid() == 0) return refuse("not to be run as root");
    while (true) {
        clihost::Received got = clihost::receive_with_fds(kConnFd, kMaxMessage);
        if (got.n == 0) return 0;  // no connection came
        if (got.n < 0) return refuse("cannot read the connection");
        if (got.truncated || got.fds.size() != kFds) return refuse("malformed connection");
        const bool query = std::string_view(got.data).substr(0, kQueryWord.size()) == kQueryWord;
        Command c = parse(std::string_view(got.data).substr(query ? kQueryWord.size() : 0));
        if (c.wrong != nullptr) return refuse(c.wrong);
        if (query) {
            const int code = run_query(c, got.fds);
            if (code < 0) return refuse("cannot run the query");
            const std::string said = "exit " + std::to_string(code);
            if (!clihost::send_with_fds(kConnFd, said, {})) return refuse("cannot answer the query");
            continue;
        }
        for (std::size_t i = 0; i < kFds; ++i)
            if (::dup2(got.fds[i].get(), static_cast<int>(i)) != static_cast<int>(i))
                return refuse("cannot take the terminal");
        (void)::close(kConnFd);
        exec(c);
    }
}
