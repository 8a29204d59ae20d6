// fd_pass.hpp: one message with descriptors over a unix socket
// (SCM_RIGHTS): a front's request to its supervisor, an attach's
// connection to its jail's watcher and on to the stub.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hpp"

namespace clihost {

// The most descriptors one message carries; more are cut (truncated).
inline constexpr std::size_t kMaxPassedFds = 3;

// Sends `data` and `fds` (at most kMaxPassedFds) as one message, with
// MSG_NOSIGNAL and `flags`. True if all of `data` went.
bool send_with_fds(int sock, std::string_view data, std::span<const int> fds, int flags = 0);

struct Received {
    ssize_t n{-1};              // recvmsg's: the message's size, 0 at end of file, -1 (errno in `error`)
    int error{0};
    bool truncated{false};      // longer than asked for, or more than kMaxPassedFds descriptors
    std::string data;           // the message
    std::vector<UniqueFd> fds;  // every descriptor that came, close-on-exec
};

// Receives one message of at most `max_bytes` (recvmsg `flags`, and
// MSG_CMSG_CLOEXEC; a SOCK_SEQPACKET or datagram socket), into a buffer as
// long as the message; EINTR is retried.
Received receive_with_fds(int sock, std::size_t max_bytes, int flags = 0);

}  // namespace clihost
