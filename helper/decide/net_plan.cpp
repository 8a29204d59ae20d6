// net_plan.cpp: see net_plan.hpp.
#include "decide/net_plan.hpp"

namespace clihost {

std::vector<std::string> user_net_argv() {
    return {std::string(kSlirp),
            // It configures tap0 in the jail (10.0.2.100/24, via 10.0.2.2,
            // DNS 10.0.2.3, IPv6 fd00::100/64) itself.
            "--configure", "--mtu=65520",
            // 10.0.2.2 is not the host's 127.0.0.1 (slirp's default).
            "--disable-host-loopback", "--enable-ipv6",
            // Its own seccomp filter. (--enable-sandbox needs a joinable
            // user namespace by pid: it fails on the paths used here.)
            "--enable-seccomp", "--ready-fd=5", "--exit-fd=6", "--userns-path=/proc/self/fd/3",
            "--netns-type=path", "/proc/self/fd/4", "tap0"};
}

}  // namespace clihost
