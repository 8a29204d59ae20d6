// cgroup_files.hpp: reading the cgroup file system (cgroup_usage.cpp),
// shared by the supervisor's writes (cgroup.cpp) and the front's reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clihost::cgroupfs {

bool exists(const std::string& path);
bool is_fs(const std::string& dir, long magic);
std::optional<std::string> read_file(const std::string& path);
std::optional<std::uint64_t> to_number(std::string_view s);
std::optional<std::uint64_t> read_number(const std::string& path);
// "KEY N" in a flat keyed file (memory.events, memory.oom_control, meminfo).
std::optional<std::uint64_t> keyed(const std::string& text, const std::string& key);

}  // namespace clihost::cgroupfs
