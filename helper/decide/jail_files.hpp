// jail_files.hpp: the files a jail sees whose text its plan holds
// (Plan::data, bwrap --ro-bind-data from kDataFd on): the profile script
// that applies [jail] setenv again in login shells. Pure. plan.hpp declares
// the two every caller of a plan uses, defined in jail_files.cpp:
// profile_script and render_data_files.
#pragma once

#include <string>

#include "decide/plan.hpp"

namespace clihost {

// [jail] setenv in login shells: /etc/profile (Debian's) sets PATH for
// every user, then runs /etc/profile.d/*.sh. In a jail that runs shells,
// /etc/profile.d is the host's entries (probe.profile_d, bound one by one on
// a small tmpfs) and kProfileScript (profile_script), sorted last,
// read-only; inserted before the home's bind. Nothing without setenv, or
// when the host's /etc/profile.d was not listed or is not in the jail.
void plan_profile(Plan& plan, const Policy& policy, const Account& tenant, const HostProbe& probe);

}  // namespace clihost
