// config_file.cpp: trusted open + bounded read + pure parse.
#include "config_file.hpp"

#include <unistd.h>

#include <cerrno>

#include "trusted_path.hpp"

namespace clihost {

Result<LoadedPolicy> load_policy(const std::string& path, bool explicit_path) {
    auto file = open_trusted(path, explicit_path ? Trust::must_exist : Trust::missing_ok);
    if (!file) return fail(Exit::host, "config " + file.error().message);
    if (!file.value().fd.valid()) return LoadedPolicy{Policy{}, path, false};
    std::string text;
    char buf[4096];
    while (true) {
        const ssize_t n = ::read(file.value().fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(Exit::host, "cannot read config " + path);
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > std::size_t{64} * 1024) return fail(Exit::host, "config " + path + " is too large");
    }
    auto policy = parse_config(text);
    if (!policy) return fail(Exit::host, path + ": " + policy.error().message);
    return LoadedPolicy{std::move(policy).value(), path, true};
}

}  // namespace clihost
