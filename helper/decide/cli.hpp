// cli.hpp: the command line of clihost-jail(8) parsed into a value. Pure (getopt_long
// state is reset on every call), so it is unit-tested and fuzzed directly.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "base/validate.hpp"  // is_valid_session_name lives there now

namespace clihost {

enum class Verb { run, kill, stop, list, check, print, version, help };

struct CommandLine {
    Verb verb{Verb::help};
    std::optional<std::string> user;
    std::optional<std::string> session;
    std::vector<std::string> command;  // after "--"; empty means the default tmux
    bool json{false};                  // list --json: JSON Lines
};

// argv[0] may be absent or anything (pkexec CVE-2021-4034): it is never read.
Result<CommandLine> parse_command_line(const std::vector<std::string>& args);

std::string_view usage_text();

}  // namespace clihost
