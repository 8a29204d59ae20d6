// config_file.cpp: trusted open + bounded read + pure parse.
#include "host/config_file.hpp"

#include "base/file_read.hpp"
#include "host/trusted_path.hpp"

namespace clihost {

Result<LoadedPolicy> load_policy(const std::string& path, bool explicit_path) {
    auto file = open_trusted(path, explicit_path ? Trust::must_exist : Trust::missing_ok);
    if (!file) return fail(Exit::host, "config " + file.error().message);
    if (!file.value().fd.valid()) return LoadedPolicy{Policy{}, path, false};
    auto text = read_bounded(file.value().fd.get(), kMaxConfigBytes, "config " + path);
    if (!text) return text.error();
    auto policy = parse_config(text.value());
    if (!policy) return fail(Exit::host, path + ": " + policy.error().message);
    return LoadedPolicy{std::move(policy).value(), path, true};
}

}  // namespace clihost
