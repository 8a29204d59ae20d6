// print_default_policy: the policy the helper's library loads when the
// config file is absent, printed in jail.conf syntax. Used by
// tests/integration/example_config_matches_design.sh to hold the built-in
// defaults against docs/ARCHITECTURE.md, install/jail.conf and README.
#include <cstdio>
#include <string>
#include <vector>

#include "config_file.hpp"

namespace {

std::string join(const std::vector<std::string>& list, const char* sep) {
    std::string out;
    for (const auto& item : list) out += (out.empty() ? "" : sep) + item;
    return out;
}

}  // namespace

int main() {
    using namespace clihost;
    // A path whose first component does not exist: load_policy's "absent file" case.
    const auto loaded = load_policy("/nonexistent-clihost-jail-defaults/jail.conf", false);
    if (!loaded || loaded.value().from_file) {
        std::fprintf(stderr, "print_default_policy: %s\n", loaded ? "a file was read" : loaded.error().message.c_str());
        return 1;
    }
    const Policy& p = loaded.value().policy;
    std::printf("[callers]\nusers = %s\ngroups = %s\n", join(p.caller_users, ", ").c_str(),
                join(p.caller_groups, ", ").c_str());
    std::printf("[tenants]\ngroup = %s\nmin_uid = %u\nmax_uid = %u\n", p.tenant_group.c_str(), p.min_uid, p.max_uid);
    std::printf("[jail]\nbwrap = %s\nproc = %s\nro_bind = %s\ntmpfs = %s\nallow_caller_command = %s\nextra_env = %s\n",
                p.bwrap.c_str(), std::string(proc_mode_name(p.proc)).c_str(), join(p.ro_bind, " ").c_str(),
                join(p.tmpfs, " ").c_str(), p.allow_caller_command ? "true" : "false", join(p.extra_env, " ").c_str());
    std::printf("[pam]\nservice = %s\nsession = %s\n", p.pam_service.c_str(), p.pam_session ? "true" : "false");
    return 0;
}
