// main.cpp: sanitise the process, then dispatch. No business logic here.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "commands.hpp"
#include "log.hpp"
#include "sanitize.hpp"

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
        (void)std::fprintf(stderr, "clihost-jail: internal error: %s\n", e.what());
    } catch (...) {
        (void)std::fprintf(stderr, "clihost-jail: internal error\n");
    }
    return static_cast<int>(clihost::Exit::internal);
}
