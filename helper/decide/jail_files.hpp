// jail_files.hpp: the files a jail sees that the helper makes: the
// profile script that applies [jail] setenv again in login shells (its
// text in the plan: Plan::data, bwrap --ro-bind-data from kDataFd on), and
// the session jail's jail.json (kJailInfoFile, in a directory of root's
// bound read-only, that its supervisor rewrites). Pure. plan.hpp declares
// the two every caller of a plan uses, defined in jail_files.cpp:
// profile_script and render_data_files.
#pragma once

#include <sys/types.h>

#include <string>

#include "decide/jail_settings.hpp"
#include "decide/plan.hpp"

namespace clihost {

// [jail] setenv in login shells: /etc/profile (Debian's) sets PATH for
// every user, then runs /etc/profile.d/*.sh. In a jail that runs shells,
// /etc/profile.d is the host's entries (probe.profile_d, bound one by one on
// a small tmpfs) and kProfileScript (profile_script), sorted last,
// read-only; inserted before the home's bind. Nothing without setenv, or
// when the host's /etc/profile.d was not listed or is not in the jail.
void plan_profile(Plan& plan, const Policy& policy, const Account& tenant, const HostProbe& probe);

// The tenant's directory of kJailViewRoot: "ROOT/UID".
std::string jail_view_dir(uid_t uid);

// The session jail sees jail_view_dir read-only at kJailInfoDir (after its
// tmpfs mounts, before the home's bind): the directory, not the file, so
// that the supervisor's rename of a new jail.json shows inside.
void plan_jail_info(Plan& plan, const Account& tenant);

// The text of kJailInfoFile: one JSON object, a key a line, for agents and
// people in the jail: the settings the jail started with (`started`: its
// supervisor's start; nested_sandbox, network, tmpfs_size, limits, then
// every setting as `list` names it), `changed` (the keys that differ from
// the config file as it was at `checked`; null: not known, the file could
// not be read), `apply` (what applies them) and `notes` (what a setting
// means for the tenant: nested_sandbox off and bwrap's message).
std::string jail_info_json(const JailSettings& started, long long started_at, const SettingsDrift& drift,
                           long long checked_at);

}  // namespace clihost
