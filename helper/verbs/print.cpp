// print.cpp: `print` (print.hpp), in the admin program.
#include "verbs/print.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "decide/limits.hpp"
#include "decide/plan.hpp"
#include "decide/request.hpp"
#include "proc/net.hpp"

namespace clihost {
namespace {

int refuse(const Error& e) {
    log::refuse(e.code == Exit::refused || e.code == Exit::usage ? "deny" : "fail", e.message);
    return static_cast<int>(e.code);
}

std::string render(const Plan& plan) {
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on
    // `"literal" + std::string&&` (GCC bug 105329).
    std::string out = "env -i";
    for (const auto& e : plan.env) out.append(" ").append(shell_quote(e));
    for (const auto& a : plan.argv) out.append(" ").append(shell_quote(a));
    return out.append("\n");
}

}  // namespace

int do_print(const Prepared& p, const CommandLine& cl, const StartState& start) {
    // run plans two jails (the session jail, started if absent, and this
    // connection's attach jail); run -- COMMAND plans one.
    std::vector<Request> reqs;
    if (cl.command.empty()) reqs = {{JailAction::serve, "", {}}, {JailAction::attach, *cl.session, {}}};
    else reqs = {{JailAction::command, *cl.session, cl.command}};
    std::string out;
    for (const auto& req : reqs) {
        auto plan = build_plan(p.policy(), *p.tenant, req, p.probe, start.caller_env, {});
        if (!plan) return refuse(plan.error());
        const Plan& pl = plan.value();
        // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict on
        // `"literal" + std::string&&` (GCC bug 105329), which broke Release builds.
        out.append("# clihost-jail plan: ").append(jail_action_name(req.action)).append(" jail, tenant ");
        out.append(p.tenant->account.name).append(", session ").append(*cl.session);
        out.append(", /proc ").append(pl.proc_source);
        if (pl.trial_in_child) out.append(" (a fresh procfs, proven before exec)");
        if (!p.policy().pam_session) out.append(", no PAM session");
        else if (req.action == JailAction::attach) out.append(", PAM account check ").append(p.policy().pam_service);
        else out.append(", PAM session ").append(p.policy().pam_service).append(" (its pam_env variables are added at launch)");
        out.append(", nested sandbox ").append(pl.nested_sandbox ? "allowed" : "not allowed");
        out.append(", network ").append(jail_net_name(pl.net)).append("\n");
        if (req.action == JailAction::attach)
            out.append("# at attach, the jail joins the tenant's empty network namespace, which its supervisor "
                       "holds while the session jail runs, as root before the drop, and bwrap runs without "
                       "--unshare-net\n");
        for (const auto& w : pl.warnings) out.append("# warning: ").append(w).append("\n");
        out += render(pl);
        // An attach jail and a one-off jail start before their connection;
        // the stub then execs the client on the terminal, or the command
        // on the caller's stdin, stdout and stderr.
        if (!pl.handed_command.empty()) {
            out.append(req.action == JailAction::attach ? "# then the stub, handed the terminal, execs: env -i"
                                                        : "# then the stub, handed the caller's stdio, execs: env -i");
            for (const auto& e : pl.handed_env) out.append(" ").append(shell_quote(e));
            for (const auto& a : pl.handed_command) out.append(" ").append(shell_quote(a));
            out.append("\n");
        }
        out += render_data_files(pl);
        if (pl.net == JailNet::isolated) {
            // The user-mode network, as the root parent starts it once bwrap
            // has made the namespace (net.hpp), and the resolv.conf bwrap copies.
            out.append("# network: run as uid ").append(std::to_string(pl.creds.uid)).append(" with group ");
            out.append(kNetGroup).append(" only, on the jail's namespaces:\n#  ");
            for (const auto& a : pl.net_argv) out.append(" ").append(shell_quote(a));
            out.append("\n# /etc/resolv.conf in the jail (fd ").append(std::to_string(kResolvFd)).append("):\n");
            std::size_t at = 0;
            while (at < pl.resolv_conf.size()) {
                const auto nl = pl.resolv_conf.find('\n', at);
                out.append("#   ").append(pl.resolv_conf.substr(at, nl - at)).append("\n");
                at = nl == std::string::npos ? pl.resolv_conf.size() : nl + 1;
            }
        }
    }
    out.append("# limits, of all the tenant's jails together (read when a jail starts): ")
        .append(limits_summary(p.policy().limits, std::nullopt))
        .append("\n");
    const bool written = std::fputs(out.c_str(), stdout) >= 0;
    log::audit("allow", "plan printed");
    return written && std::fflush(stdout) == 0 ? 0 : static_cast<int>(Exit::internal);
}

}  // namespace clihost
