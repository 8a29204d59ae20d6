// socket_pair.hpp: a connected SOCK_SEQPACKET pair, as the helper's
// channels are (unit tests only).
#pragma once

#include <sys/socket.h>

#include "base/unique_fd.hpp"

namespace clihost::testing {

struct SocketPair {
    UniqueFd a, b;
    SocketPair() {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
            a.reset(sv[0]);
            b.reset(sv[1]);
        }
    }
};

}  // namespace clihost::testing
