// print_default_policy: the policy the helper's library loads when the
// config file is absent, printed in jail.conf syntax. Used by
// tests/integration/example_config_matches_design.sh to hold the built-in
// defaults against README's block and install/jail.conf.
#include <cstdint>
#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include "host/config_file.hpp"

namespace {

std::string join(const std::vector<std::string>& list, const char* sep) {
    std::string out;
    for (const auto& item : list) out += (out.empty() ? "" : sep) + item;
    return out;
}

}  // namespace

// A byte count as jail.conf writes it: the largest binary suffix that divides it.
static std::string size_text(std::uint64_t n) {
    for (const auto& [unit, suffix] : {std::pair{std::uint64_t{1} << 30, "G"}, std::pair{std::uint64_t{1} << 20, "M"},
                                       std::pair{std::uint64_t{1} << 10, "K"}})
        if (n % unit == 0) return std::to_string(n / unit) + suffix;
    return std::to_string(n);
}

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
    std::printf("[tenants]\ngroup = %s\nmin_uid = %u\nmax_uid = %u\nrefusal_delay_max = %u\n", p.tenant_group.c_str(),
                p.min_uid, p.max_uid, p.refusal_delay_max);
    std::printf("[jail]\nbwrap = %s\nproc = %s\nro_bind = %s\ntmpfs = %s\nallow_caller_command = %s\nextra_env = %s\n",
                p.bwrap.c_str(), std::string(proc_mode_name(p.proc)).c_str(), join(p.ro_bind, " ").c_str(),
                join(p.tmpfs, " ").c_str(), p.allow_caller_command ? "true" : "false", join(p.extra_env, " ").c_str());
    if (!p.setenv.empty()) {
        std::vector<std::string> items;
        for (const auto& e : p.setenv) items.push_back(e.name + "=" + e.value);
        std::printf("setenv = %s\n", join(items, " ").c_str());
    }
    std::printf("network = %s\n", std::string(network_mode_name(p.network)).c_str());
    std::printf("nested_sandbox = %s\ntmpfs_size = %s\n", p.nested_sandbox ? "true" : "false",
                size_text(p.tmpfs_size).c_str());
    const Limits& l = p.limits;
    std::printf("[limits]\ncgroup_parent = %s\nmemory_max = %s\nmemory_high = %s\nmemory_swap_max = %s\n",
                l.cgroup_parent.c_str(), memory_amount_text(l.memory_max).c_str(),
                memory_amount_text(l.memory_high).c_str(), memory_amount_text(l.memory_swap_max).c_str());
    std::printf("tasks_max = %s\ncpu_weight = %u\n",
                l.tasks_max ? std::to_string(l.tasks_max).c_str() : "max", l.cpu_weight);
    std::printf("[pam]\nservice = %s\nsession = %s\n", p.pam_service.c_str(), p.pam_session ? "true" : "false");
    return 0;
}
