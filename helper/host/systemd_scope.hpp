// systemd_scope.hpp: the tenant's transient scope, asked of systemd where it
// is PID 1 (decide/systemd_scope.hpp has the unit; this sends it). Root only.
//
// libsystemd is loaded with dlopen, from the absolute path the build
// configured (CLIHOST_JAIL_LIBSYSTEMD), only when systemd runs: a host or
// container without systemd never maps it, a build needs neither its
// headers nor the library (the prototypes are declared here, the sd-bus ABI
// being stable), and nothing the caller sets (LD_LIBRARY_PATH is gone
// anyway, PATH is not read) chooses the file. The library and the
// directories above it must be root's (open_trusted). It talks to systemd's
// private socket /run/systemd/private (root only, no dbus-daemon needed),
// as systemctl does as root.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.hpp"
#include "decide/systemd_scope.hpp"

namespace clihost {

// systemd is PID 1 here: /run/systemd/system is a directory (sd_booted()'s test).
bool systemd_booted();

// StartTransientUnit(name, "fail", props): `started`, or `exists` where
// systemd has a unit of that name already (UnitExists); any other failure
// is Exit::host, one line naming `what`.
enum class UnitStart { started, exists };
Result<UnitStart> start_unit(const std::string& name, const std::vector<UnitProperty>& props,
                             const std::string& what);

// StartTransientUnit(name, "fail", props) for a scope whose cgroup is
// `cgroup` (decide/systemd_scope.hpp: the tenant's, a lock holder's), then
// waits (5 s at most) until /proc/self/cgroup shows this process there in
// systemd's own hierarchy. `what` names the scope and `who` this process in
// the failure's line ("the tenant's scope", "the supervisor"). Any failure
// is Exit::host, one line.
Status enter_scope(const std::string& name, const std::string& cgroup, const std::vector<UnitProperty>& props,
                   const std::string& what, const std::string& who);

// This process is at `cgroup` in systemd's own hierarchy (a service's main
// process, started there by PID 1). Exit::host.
Status check_in_unit(const std::string& cgroup, const std::string& who);

// Waits (5 s at most) until /proc/self/cgroup shows this process at
// `cgroup` in the v1 hierarchy of `controller`. systemd moves a scope's
// process into its own hierarchy first and into each controller's after
// that: a leaf entered before the move would be undone by it. Exit::host.
Status wait_moved(const std::string& controller, const std::string& cgroup, const std::string& who);

}  // namespace clihost
