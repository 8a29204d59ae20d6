// fd_pass.cpp: fd_pass.hpp.
#include "base/fd_pass.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace clihost {

bool send_with_fds(int sock, std::string_view data, std::span<const int> fds, int flags) {
    if (fds.size() > kMaxPassedFds) return false;
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))] = {};
    iovec iov{const_cast<char*>(data.data()), data.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (!fds.empty()) {
        mh.msg_control = control;
        mh.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
        cmsghdr* cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        std::memcpy(CMSG_DATA(cm), fds.data(), fds.size() * sizeof(int));
    }
    return ::sendmsg(sock, &mh, MSG_NOSIGNAL | flags) == static_cast<ssize_t>(data.size());
}

Received receive_with_fds(int sock, std::size_t max_bytes, int flags) {
    Received r;
    // The message's length first (a peek, which takes no descriptor): a
    // buffer as long as the message, not as `max_bytes`, so that a process
    // that waits here (a prepared jail's stub) holds no zeroed pages it
    // will never use. One past the most we take shows a longer message.
    ssize_t len = 0;
    while ((len = ::recv(sock, nullptr, 0, flags | MSG_PEEK | MSG_TRUNC)) < 0 && errno == EINTR) {}
    if (len < 0) {
        r.error = errno;
        return r;
    }
    r.data.assign(std::min(static_cast<std::size_t>(len), max_bytes) + 1, '\0');
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
    iovec iov{r.data.data(), r.data.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof control;
    while ((r.n = ::recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {}
    if (r.n < 0) {
        r.error = errno;
        r.data.clear();
        return r;
    }
    for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            r.fds.emplace_back(fd);
        }
    }
    r.truncated = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || static_cast<std::size_t>(r.n) > max_bytes;
    r.data.resize(static_cast<std::size_t>(r.n) > max_bytes ? max_bytes : static_cast<std::size_t>(r.n));
    return r;
}

}  // namespace clihost
