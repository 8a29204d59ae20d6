// validate.hpp: the syntax rules every layer leans on (account, variable and
// session names, clean absolute paths, numeric ids). The bottom of the
// project: pure, and it includes nothing of the project, so that config, cli,
// identity, plan and sanitize can all use the same rule without depending on
// one another.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

namespace clihost {

// A passwd/group name (also the PAM service name, which becomes a file name
// under /etc/pam.d): [A-Za-z0-9_.-]{1,32}, not starting with '-' (it would be
// read as an option by the tools that get it).
bool is_valid_account_name(std::string_view name);

// An environment variable name: [A-Za-z0-9_]{1,64}, not starting with a digit.
bool is_valid_env_name(std::string_view name);

// Absolute, no "." or ".." components, no empty components, no trailing '/',
// no control characters, at most 1024 bytes. "/" itself is clean.
bool is_clean_absolute_path(std::string_view path);

// extra_env values (decide/plan.cpp's environment, the front's request) must look like a terminal type or locale: no '/', no
// spaces, no control characters (a TERM or LANG with '/' is a path
// traversal into terminfo or locale files).
bool is_well_formed_env_value(std::string_view value);

// Names the jail sets itself or that change how programs load code: never
// passed through from the caller, whatever extra_env says.
bool is_reserved_env_name(std::string_view name);

// A tmux session name: [A-Za-z0-9_.-]{1,64}, not starting with '-' or '.'
// (clihost-jail(8), OPTIONS).
bool is_valid_session_name(std::string_view name);

// A decimal uid or gid: digits only, no sign, no spaces, below 4294967295
// ((uid_t)-1 is the "no change" sentinel of set*id, never a real id).
std::optional<uid_t> parse_id(std::string_view text);

}  // namespace clihost
