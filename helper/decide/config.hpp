// config.hpp: the Policy value and its pure parser. Parsing only validates and
// fills the struct; nothing here touches the system (fuzzable, unit-tested).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "decide/limits.hpp"
#include "base/validate.hpp"  // the shared validators, for the code that included them from here

namespace clihost {

enum class ProcMode { private_only, private_or_hidepid, inherit };

std::string_view proc_mode_name(ProcMode mode);

// The network of the session jail and of one-off jails (client jails never
// have one). isolated: a network namespace of the jail's own with
// outbound-only user-mode networking (net.hpp); host: the host's, shared.
enum class NetworkMode { isolated, host };

std::string_view network_mode_name(NetworkMode mode);

// Size of each tmpfs of a jail (bwrap --size). tmpfs's own default is half
// of the host's RAM, per mount, shared by all tenants: one tenant filling
// /tmp would take the host's memory. 0 would mean "no limit" to tmpfs, so
// the lower bound is a real size; the upper bound keeps the arithmetic and
// bwrap's own parser (size_t, at most SIZE_MAX/2) far from overflow.
inline constexpr std::uint64_t kDefaultTmpfsSize = std::uint64_t{256} << 20;  // 256M
inline constexpr std::uint64_t kMinTmpfsSize = std::uint64_t{64} << 10;       // 64K
inline constexpr std::uint64_t kMaxTmpfsSize = std::uint64_t{1} << 40;        // 1024G

// [jail] setenv: fixed variables the operator gives every tenant's jails.
// At most this many, each value at most kMaxSetenvValue bytes before $HOME
// is expanded.
inline constexpr std::size_t kMaxSetenvItems = 64;
inline constexpr std::size_t kMaxSetenvValue = 1024;
// The PATH every jail gets; a setenv PATH must keep these entries, in this
// order and next to one another, and may add others before or after.
inline constexpr std::string_view kDefaultJailPath = "/usr/local/bin:/usr/bin:/bin";

// One setenv item: NAME and its value as written ("$HOME" not yet expanded).
struct SetEnv {
    std::string name;
    std::string value;
    bool operator==(const SetEnv&) const = default;
};

struct Policy {
    // [callers]
    std::vector<std::string> caller_users{"clihost"};
    std::vector<std::string> caller_groups{"clihost"};
    // [tenants]
    std::string tenant_group{"clihost-tenants"};
    uid_t min_uid{1000};
    uid_t max_uid{60000};
    // A refused attach of a tenant exits only after 1 s, doubling per
    // refusal up to this many seconds (reset by a success), as login and
    // sshd delay a failed login: a page that reconnects at once whenever
    // its connection ends would otherwise make setuid runs, PAM checks and
    // audit lines without end. 0: off. At most kMaxRefusalDelay.
    unsigned refusal_delay_max{30};
    // [jail]
    std::string bwrap{"/usr/bin/bwrap"};
    ProcMode proc{ProcMode::private_only};
    std::vector<std::string> ro_bind{"/usr", "/bin", "/sbin", "/lib", "/lib32",
                                     "/lib64", "/etc", "/opt", "/var/lib"};
    std::vector<std::string> tmpfs{"/tmp", "/var/tmp", "/run"};
    std::uint64_t tmpfs_size{kDefaultTmpfsSize};  // bytes, each tmpfs (and /dev/shm)
    bool allow_caller_command{false};
    // true: no --disable-userns, so the tenant's own tools (AI coding agents'
    // bubblewrap sandboxes) can create nested user namespaces. More kernel
    // surface (SECURITY.md, "Nested sandboxes"), hence off by default.
    bool nested_sandbox{false};
    // isolated by default: with the host's network a jail reaches every
    // service bound on the host's loopback and addresses (other tenants'
    // ttyd, abstract sockets, sshd) and can squat their ports.
    NetworkMode network{NetworkMode::isolated};
    std::vector<std::string> extra_env{"TERM", "LANG", "LC_ALL", "COLORTERM"};
    // Fixed values for every tenant (a site CA bundle for Node, a writable
    // npm prefix, PATH entries in the home): parse_setenv's rules.
    std::vector<SetEnv> setenv{};
    // The shell tmux starts inside the jail (it becomes SHELL, which tmux's
    // default-shell follows). Empty: the tenant's login shell. Setting it
    // lets tenants have /usr/sbin/nologin as their login shell, so that no
    // host service that honours login shells (sshd, su, login) gives them
    // an unjailed shell. Absolute, root-owned, checked like bwrap at launch.
    std::string shell{};
    // [limits]: the tenant's cgroup and its limits (limits.hpp)
    Limits limits{};
    // [pam]
    std::string pam_service{"clihost-jail"};
    bool pam_session{true};
    // Every key: a supervisor's start compares the policy its front read
    // with the file as it is then (session.cpp).
    bool operator==(const Policy&) const = default;
};

inline constexpr unsigned kMaxRefusalDelay = 300;

// Larger files are refused, by the reader and by the parser.
inline constexpr std::size_t kMaxConfigBytes = std::size_t{64} * 1024;

// Parse a whole config file. Unknown sections/keys, duplicates and malformed
// lines are errors (exit 3): a typo must not silently weaken the jail.
Result<Policy> parse_config(std::string_view text);

// A byte count: decimal digits (no sign, no leading zero), optionally one
// binary suffix K, M or G (KiB, MiB, GiB), within [kMinTmpfsSize,
// kMaxTmpfsSize]. "256M", "1G", "65536".
Result<std::uint64_t> parse_tmpfs_size(std::string_view v);

// [jail] setenv's value: NAME=VALUE items separated by blanks. NAME follows
// is_valid_env_name; the variables the helper sets itself (HOME, USER,
// LOGNAME, SHELL, TTYD_SANDBOX) and every other reserved name
// (is_reserved_env_name: LD_*, IFS, TMUX...) are refused, except PATH, whose
// value must be ':'-separated clean absolute paths that keep
// kDefaultJailPath's entries together and in order (no empty or relative
// entry: either puts the current directory in PATH). A VALUE is printable
// ASCII without blanks, quotes or backslashes (nothing is interpreted as a
// shell would), at most kMaxSetenvValue bytes; '$' only as "$HOME", which
// becomes the tenant's home. Each NAME once.
Result<std::vector<SetEnv>> parse_setenv(std::string_view v);

// A setenv value with "$HOME" replaced by `home`.
std::string expand_home(std::string_view value, std::string_view home);

// /usr/sbin/nologin, /bin/false and the like: a login shell that refuses.
bool is_refusing_shell(std::string_view shell);

}  // namespace clihost
