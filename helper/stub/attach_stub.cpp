// attach_stub.cpp: clihost-jail-attach, the command of every attach jail
// and every one-off jail (the stub). A program of its own (libc and
// base/fd_pass only, no setuid bit), run by bwrap inside the jail as the
// tenant, with no capabilities and no_new_privs. Its jail is started
// before its connection (docs/ARCHITECTURE.md, "Process model"). It waits
// on kConnFd for messages from its watcher, each of words (a command's
// argv and its environment, as base/handed.hpp lays them out).
//  - A connection: the command's words and the caller's descriptors, which
//    become its stdin, stdout (and stderr, when three come: a one-off's;
//    an attach's two are its terminal, its stderr is the watcher's
//    capture already). It execs the command: a name without '/' is looked
//    up in the handed environment's PATH, as bwrap's execvp did.
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
#include "base/handed.hpp"

namespace {

constexpr int kConnFd = 8;  // plan.hpp: kAttachFd
constexpr std::size_t kMaxMessage = 128 * 1024 + 6;  // plan.hpp: kMaxHandedBytes, and "query\0"
constexpr std::size_t kMaxFds = 3;
constexpr std::string_view kQueryWord{"query\0", 6};  // plan.hpp: kQueryWord

int refuse(const char* why) {
    const std::string line = std::string("clihost-jail-attach: ") + why + "\n";
    (void)!::write(2, line.data(), line.size());
    return 127;
}

// The handed environment's PATH (empty if it has none).
std::string path_of(const std::vector<std::string>& env) {
    for (const auto& kv : env)
        if (kv.rfind("PATH=", 0) == 0) return kv.substr(5);
    return {};
}

[[noreturn]] void exec(clihost::HandedWords& c) {
    std::vector<char*> a, e;
    for (auto& w : c.argv) a.push_back(w.data());
    a.push_back(nullptr);
    for (auto& w : c.env) e.push_back(w.data());
    e.push_back(nullptr);
    int err = ENOENT;
    if (c.argv[0].find('/') != std::string::npos) {
        ::execve(a[0], a.data(), e.data());
        err = errno;
    } else {
        // execvp's search, in the handed PATH (none: nothing is searched):
        // the first entry that execs; a found file that cannot be run is
        // what is said (EACCES).
        const std::string path = path_of(c.env);
        for (std::size_t at = 0; !path.empty() && at <= path.size();) {
            std::size_t end = path.find(':', at);
            if (end == std::string::npos) end = path.size();
            const std::string dir = end == at ? "." : path.substr(at, end - at);
            const std::string file = dir + "/" + c.argv[0];
            ::execve(file.c_str(), a.data(), e.data());
            if (errno != ENOENT && errno != ENOTDIR) err = errno;
            at = end + 1;
        }
    }
    ::_exit(refuse((std::string("cannot execute ") + c.argv[0] + ": " + std::strerror(err)).c_str()));
}

// A query's client, in a child: its stdout and stderr the two received;
// nothing else of ours reaches it (the received copies are close-on-exec,
// the channel is closed). Its exit status, or 128 + its signal.
int run_query(clihost::HandedWords& c, std::vector<clihost::UniqueFd>& fds) {
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
        const bool query = std::string_view(got.data).substr(0, kQueryWord.size()) == kQueryWord;
        if (got.truncated || got.fds.size() < 2 || got.fds.size() > (query ? 2 : kMaxFds))
            return refuse("malformed connection");
        clihost::HandedWords c = clihost::decode_handed(std::string_view(got.data).substr(query ? kQueryWord.size() : 0));
        if (c.wrong != nullptr) return refuse(c.wrong);
        if (query) {
            const int code = run_query(c, got.fds);
            if (code < 0) return refuse("cannot run the query");
            const std::string said = "exit " + std::to_string(code);
            if (!clihost::send_with_fds(kConnFd, said, {})) return refuse("cannot answer the query");
            continue;
        }
        for (std::size_t i = 0; i < got.fds.size(); ++i)
            if (::dup2(got.fds[i].get(), static_cast<int>(i)) != static_cast<int>(i))
                return refuse("cannot take the caller's descriptors");
        (void)::close(kConnFd);
        exec(c);
    }
}
