// container_check.hpp: what a container (Docker, Dokku, any OCI runtime)
// takes away from the jail, named exactly. The namespace trial (probe.hpp)
// and the jail trial decide whether a jail can start; this only explains a
// failure in the operator's terms (which setting, which Docker option) and
// refuses, before bwrap does with a less precise message, the one case the
// trials cannot reach in every /proc mode: a read-only /proc/sys.
// The parsers and the wording are pure; read_container_facts reads /proc.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace clihost {

// What this process can observe about the container it runs in.
struct ContainerFacts {
    std::string seccomp;                    // "Seccomp:" of /proc/self/status: 0, 1 or 2 ("" unreadable)
    bool no_new_privs{false};               // "NoNewPrivs: 1" in /proc/self/status
    std::string max_user_namespaces;        // /proc/sys/user/max_user_namespaces ("" unreadable)
    std::string unprivileged_userns_clone;  // Debian's kernel.unprivileged_userns_clone ("" absent)
    std::string mountinfo;                  // /proc/self/mountinfo ("" unreadable or too large)
};

// Reads the files above; an unreadable one leaves its field empty (then
// nothing is explained from it: these facts never allow anything).
ContainerFacts read_container_facts();

// The value of the "KEY:" line of a /proc/PID/status text, trimmed ("" if absent).
std::string status_field(std::string_view status, std::string_view key);

// Mount points below /proc (not /proc itself), in mountinfo order: Docker's
// masked paths (/dev/null or an empty tmpfs over /proc/kcore, /proc/acpi, ...)
// and read-only paths (/proc/sys, ...). Any one of them makes the kernel
// refuse a fresh procfs in a new user namespace ("mount too revealing"),
// except one on a permanently empty directory such as the host's
// /proc/sys/fs/binfmt_misc, which is left out.
std::vector<std::string> mounts_over_proc(std::string_view mountinfo);

// Is `path` on a read-only mount: the mount with the deepest mount point
// that contains it (the last such line wins among equal ones) has "ro" in
// its mount or superblock options?
bool read_only_at(std::string_view mountinfo, std::string_view path);

// Why the namespace trial found no user namespaces, when the facts say:
// a seccomp filter (with the sysctls allowing user namespaces), or a sysctl
// turning them off. "" when the facts explain nothing.
std::string why_no_userns(const ContainerFacts& f);

// Why a fresh procfs cannot be mounted: the mounts over part of /proc.
// "" when there are none.
std::string why_no_fresh_proc(const ContainerFacts& f);

// Why the helper has no root privileges, when no_new_privs explains it
// (the kernel ignores the setuid bit under no_new_privs). "" otherwise.
std::string why_not_root(const ContainerFacts& f);

// require_root's refusal: "not running with root privileges (...)", naming
// no_new_privs when it is why.
std::string not_root_message(const ContainerFacts& f);

// bwrap --disable-userns (every attach and kill jail; a work jail unless
// nested_sandbox = true) writes /proc/sys/user/max_user_namespaces through
// the /proc it was started with; on a read-only /proc/sys bwrap dies with
// "Read-only file system" after the tenant's namespaces exist, whatever the
// proc mode (so the hidepid fallback cannot help). Refuse first (exit 3),
// naming the mount and the Docker option. disable_userns: the jail about to
// start uses --disable-userns.
Status check_proc_sys_writable(bool disable_userns, const ContainerFacts& f);

// check_proc_sys_writable for the launch paths: statvfs first, the facts
// only when it says the mount is read-only (or cannot tell).
Status require_proc_sys_writable(bool disable_userns);

// check's FAIL lines for what a container takes away, as (key, problem)
// pairs: no_new_privs on an unprivileged helper, a read-only /proc/sys
// (every attach jail needs it writable). Empty when nothing is missing.
std::vector<std::pair<std::string, std::string>> container_problems(bool unprivileged, const ContainerFacts& f);

}  // namespace clihost
