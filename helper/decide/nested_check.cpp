// nested_check.cpp: see nested_check.hpp.
#include "decide/nested_check.hpp"

namespace clihost {

std::string nested_sandbox_summary(const Policy& policy) {
    return policy.nested_sandbox ? "allowed (nested_sandbox = true: the jail may create user namespaces)"
                                 : "not allowed (nested_sandbox = false: bwrap --disable-userns)";
}

std::vector<std::string> nested_trial_command(const Policy& policy) {
    // --unshare-user is spelled out: --unshare-all only *tries* a user
    // namespace, and the trial must fail if it cannot get one. Every piece an
    // inner bwrap needs from the jail is exercised: the user namespace
    // (max_user_namespaces), mount + pivot_root in it, a fresh procfs over the
    // jail's (refused if anything covered part of it) and a new devtmpfs-like
    // /dev.
    return {policy.bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
            "--ro-bind",  "/",             "/",              "--proc",            "/proc",
            "--dev",      "/dev",          "--",             "/bin/true"};
}

}  // namespace clihost
