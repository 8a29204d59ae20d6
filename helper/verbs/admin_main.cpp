// admin_main.cpp: clihost-jail-admin, `check` and `print` without the
// setuid bit: root runs it (directly, or through `clihost-jail check`,
// which execs it for root only). Sanitised as the front is, then the same
// preparation of a verb (commands.hpp:dispatch_admin).
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "priv/sanitize.hpp"
#include "verbs/check.hpp"
#include "verbs/commands.hpp"
#include "verbs/print.hpp"

int main(int argc, char** argv, char** envp) {
    auto start = clihost::sanitize_process(envp);
    try {
        clihost::log::init();
        if (!start) {
            clihost::log::refuse("fail", start.error().message);
            return static_cast<int>(start.error().code);
        }
        if (::geteuid() != 0) {
            clihost::log::refuse("deny", "clihost-jail-admin runs as root (check and print read root's files)");
            return static_cast<int>(clihost::Exit::refused);
        }
        std::vector<std::string> args;
        for (int i = 0; i < argc && argv != nullptr && argv[i] != nullptr; ++i) args.emplace_back(argv[i]);
        return clihost::dispatch_admin(start.value(), args, {clihost::do_check, clihost::do_print});
    } catch (const std::exception& e) {
        (void)std::fprintf(stderr, "clihost-jail: internal error: %s\n", e.what());
    } catch (...) {
        (void)std::fputs("clihost-jail: internal error\n", stderr);
    }
    return static_cast<int>(clihost::Exit::internal);
}
