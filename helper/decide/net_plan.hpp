// net_plan.hpp: what the plan says of the isolated network (network =
// isolated): the user-mode network's command line and the names it relies
// on. Pure; the process that runs it is proc/net.hpp's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace clihost {

inline constexpr std::string_view kSlirp = "/usr/bin/slirp4netns";
inline constexpr std::string_view kNetGroup = "clihost-jail-net";
inline constexpr std::string_view kNetRules = "/usr/share/clihost-jail/clihost-jail.nft";
// slirp4netns --configure: the jail's side of the link.
inline constexpr std::string_view kJailResolvConf =
    "# clihost-jail: the jail's DNS is slirp4netns's forwarder, which asks the host's resolver\n"
    "nameserver 10.0.2.3\n";

// slirp4netns's command line (pure; `print` shows it). The descriptors are
// placed at fixed numbers in its process: 3 the user namespace, 4 the
// network namespace, 5 its readiness pipe, 6 the pipe whose closing ends it.
std::vector<std::string> user_net_argv();

}  // namespace clihost
