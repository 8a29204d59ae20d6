// config_file.cpp: trusted open + bounded read + pure parse.
#include "host/config_file.hpp"

#include <cstdint>
#include <cstdio>

#include "base/file_read.hpp"
#include "host/trusted_path.hpp"

namespace clihost {
namespace {

// FNV-1a 64: a change of the file, not an attacker's collision (the file
// is root's, trusted_path checks it), is what it must tell apart.
std::string digest_of(const std::string& text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
    char out[17];
    (void)std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

}  // namespace

Result<LoadedPolicy> load_policy(const std::string& path, bool explicit_path) {
    auto file = open_trusted(path, explicit_path ? Trust::must_exist : Trust::missing_ok);
    if (!file) return fail(Exit::host, "config " + file.error().message);
    if (!file.value().fd.valid()) {
        // Built field by field: GCC 12 at -O3 took the aggregate's Policy{}
        // temporary for maybe-uninitialized (release_build's -Werror).
        LoadedPolicy defaults;
        defaults.path = path;
        return defaults;
    }
    auto text = read_bounded(file.value().fd.get(), kMaxConfigBytes, "config " + path);
    if (!text) return text.error();
    auto policy = parse_config(text.value());
    if (!policy) return fail(Exit::host, path + ": " + policy.error().message);
    return LoadedPolicy{std::move(policy).value(), path, true, digest_of(text.value())};
}

}  // namespace clihost
