// supervisor_main.cpp: clihost-jail-supervisor, the tenant's owner. Root,
// not setuid, exec'd by the front's starter (starter.hpp) with an empty
// environment and the start-up report on fd 3. It trusts nothing it
// inherits: the process is cleaned again, the arguments parsed strictly,
// and the file and the tenant read again by its modes (session.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "base/fault.hpp"
#include "base/log.hpp"
#include "decide/supervisor_args.hpp"
#include "proc/clean_state.hpp"
#include "proc/session.hpp"
#include "proc/supervise.hpp"

namespace {

int run(const std::vector<std::string>& words, pid_t starter) {
    auto args = clihost::parse_supervisor_argv(words);
    if (!args) {
        clihost::log::refuse("fail", args.error().message);
        clihost::write_report(3, args.error());
        return static_cast<int>(args.error().code);
    }
    const clihost::SupervisorArgs& a = args.value();
    clihost::fault::arm(a.faults);
    auto& ctx = clihost::log::context();
    ctx.action = a.mode == clihost::SupervisorMode::start ? "run" : "stop";
    ctx.caller = a.caller;
    ctx.caller_uid = a.caller_uid;
    ctx.via = a.via;
    ctx.tenant = a.mode == clihost::SupervisorMode::start ? a.tenant : std::to_string(a.uid);
    ctx.session = a.session;
    return a.mode == clihost::SupervisorMode::start ? clihost::supervisor_start(a, starter)
                                                    : clihost::supervisor_stop(a);
}

}  // namespace

int main(int argc, char** argv) {
    // Under systemd, PID 1 runs us as the tenant's service with the report
    // on stdout (systemd_scope.hpp: unit_properties): it goes to fd 3, as
    // the starter's does (clean_state then puts /dev/null on 0-2).
    bool in_unit = false;
    for (int i = 1; i < argc && argv[i] != nullptr; ++i) in_unit = in_unit || std::string_view(argv[i]) == "--in-unit";
    if (in_unit && ::dup2(1, 3) != 3) return 2;
    // Only root's, and only with the report the starter passes: anyone
    // else's run (the program is root's 0750) ends here.
    if (::getuid() != 0 || ::geteuid() != 0 || ::fcntl(3, F_GETFD) < 0) {
        (void)std::fputs("clihost-jail-supervisor: started by clihost-jail only (root, with its report on fd 3)\n",
                         stderr);
        return 2;
    }
    const pid_t starter = ::getppid();
    try {
        if (auto st = clihost::clean_state(3); !st) {
            clihost::write_report(3, st.error());
            return static_cast<int>(st.error().code);
        }
        clihost::log::init();
        std::vector<std::string> words;
        for (int i = 0; i < argc && argv != nullptr && argv[i] != nullptr; ++i) words.emplace_back(argv[i]);
        return run(words, starter);
    } catch (const std::exception& e) {
        clihost::write_report(3, clihost::fail(clihost::Exit::internal, e.what()));
    } catch (...) {
        clihost::write_report(3, clihost::fail(clihost::Exit::internal, "unknown exception"));
    }
    return static_cast<int>(clihost::Exit::internal);
}
