// fuzz_config.cpp: parse_config over arbitrary bytes. jail.conf is root's
// file, but a parser that crashes, loops or accepts a value the validators
// reject would turn an operator's typo into a weaker jail.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "decide/config.hpp"

using namespace clihost;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

template <class List, class Pred>
bool all(const List& list, Pred pred) {
    for (const auto& item : list)
        if (!pred(item)) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const auto parsed = parse_config(text);
    if (!parsed) {
        // Every config problem is "this host cannot run a safe jail" (exit 3).
        check(parsed.error().code == Exit::host && !parsed.error().message.empty());
        return 0;
    }
    // Whatever was accepted satisfies the same validators the rest of the
    // program relies on: the plan and launch never re-check these.
    const Policy& p = parsed.value();
    check(p.min_uid >= 1 && p.min_uid <= p.max_uid && p.max_uid != static_cast<uid_t>(-1));
    check(is_clean_absolute_path(p.bwrap));
    const auto bindable = [](const std::string& path) { return is_clean_absolute_path(path) && path != "/"; };
    check(all(p.ro_bind, bindable) && all(p.tmpfs, bindable));
    check(all(p.caller_users, is_valid_account_name) && all(p.caller_groups, is_valid_account_name));
    check(is_valid_account_name(p.tenant_group) && is_valid_account_name(p.pam_service));
    check(all(p.extra_env, [](const std::string& n) { return is_valid_env_name(n) && !is_reserved_env_name(n); }));
    check(p.ro_bind.size() <= 64 && p.tmpfs.size() <= 64 && p.extra_env.size() <= 64);
    check(proc_mode_name(p.proc) != "?");
    // Never 0 (tmpfs: no limit), never past the bound the plan renders.
    check(p.tmpfs_size >= kMinTmpfsSize && p.tmpfs_size <= kMaxTmpfsSize);
    if (p.tmpfs_size != kDefaultTmpfsSize) check(text.find("tmpfs_size") != std::string_view::npos);
    return 0;
}
