// main.cpp: sanitise the process, then dispatch. No business logic here.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "verbs/commands.hpp"
#include "base/log.hpp"
#include "priv/sanitize.hpp"

namespace {

// The last resort: one stderr line that needs no memory, then the audit
// line if memory allows (a caller's RLIMIT_AS can make any allocation fail).
void internal_error(const char* what) noexcept {
    (void)std::fprintf(stderr, "clihost-jail: internal error%s%s\n", what != nullptr ? ": " : "",
                       what != nullptr ? what : "");
    try {
        clihost::log::audit("fail", std::string("internal error") + (what != nullptr ? std::string(": ") + what : ""));
    } catch (...) {
        // The stderr line and the exit code still say it.
    }
}

}  // namespace

int main(int argc, char** argv, char** envp) {
    // First, before any library code can look at the environment or fds.
    auto start = clihost::sanitize_process(envp);
    try {
        clihost::log::init();
        if (!start) {
            clihost::log::refuse("fail", start.error().message);
            return static_cast<int>(start.error().code);
        }
        // argc may be 0 (execve with an empty argv): then args is empty.
        std::vector<std::string> args;
        for (int i = 0; i < argc && argv != nullptr && argv[i] != nullptr; ++i) args.emplace_back(argv[i]);
        return clihost::dispatch(start.value(), args);
    } catch (const std::exception& e) {
        internal_error(e.what());
    } catch (...) {
        internal_error(nullptr);
    }
    return static_cast<int>(clihost::Exit::internal);
}
