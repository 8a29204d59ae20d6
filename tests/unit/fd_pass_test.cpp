// One message with descriptors (base/fd_pass.hpp): what is sent arrives
// whole, close-on-exec; more than asked for is marked truncated.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/fd_pass.hpp"
#include "socket_pair.hpp"

using namespace clihost;

namespace {

using Pair = clihost::testing::SocketPair;

ino_t inode_of(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

TEST(FdPass, AMessageAndItsDescriptorsArriveWholeAndCloseOnExec) {
    Pair p;
    ASSERT_TRUE(p.a.valid());
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
    const int fds[3] = {r.get(), w.get(), r.get()};
    ASSERT_TRUE(send_with_fds(p.a.get(), std::string("words\0more", 10), fds));
    Received got = receive_with_fds(p.b.get(), 64);
    EXPECT_EQ(got.n, 10);
    EXPECT_EQ(got.data, std::string("words\0more", 10));
    EXPECT_FALSE(got.truncated);
    ASSERT_EQ(got.fds.size(), 3U);
    EXPECT_EQ(inode_of(got.fds[0].get()), inode_of(r.get()));
    EXPECT_EQ(inode_of(got.fds[1].get()), inode_of(w.get()));
    for (const auto& fd : got.fds) EXPECT_EQ(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
}

TEST(FdPass, MoreThanAskedForIsTruncated) {
    Pair p;
    ASSERT_TRUE(send_with_fds(p.a.get(), std::string(100, 'x'), {}));
    Received got = receive_with_fds(p.b.get(), 10);
    EXPECT_TRUE(got.truncated);
    EXPECT_EQ(got.data.size(), 10U);
    // Exactly as long as asked for: whole. (Control.)
    ASSERT_TRUE(send_with_fds(p.a.get(), std::string(10, 'x'), {}));
    EXPECT_FALSE(receive_with_fds(p.b.get(), 10).truncated);
    // More descriptors than one message carries are not sent at all.
    const int four[4] = {0, 0, 0, 0};
    EXPECT_FALSE(send_with_fds(p.a.get(), "x", four));
}

TEST(FdPass, EndOfFileAndNothingYetAreTold) {
    Pair p;
    Received none = receive_with_fds(p.b.get(), 10, MSG_DONTWAIT);
    EXPECT_EQ(none.n, -1);
    EXPECT_EQ(none.error, EAGAIN);
    p.a.reset();
    EXPECT_EQ(receive_with_fds(p.b.get(), 10).n, 0);
}

TEST(FdPass, TheBufferIsTheMessagesLengthNotTheMostAskedFor) {
    // A waiting stub asks for up to 128 KiB: it must not hold (zeroed,
    // so resident) 128 KiB for a message of a few bytes.
    Pair p;
    ASSERT_TRUE(send_with_fds(p.a.get(), "short", {}));
    Received got = receive_with_fds(p.b.get(), std::size_t{1} << 20);
    EXPECT_EQ(got.data, "short");
    EXPECT_LT(got.data.capacity(), 4096U);
}

TEST(FdPass, TheLengthsPeekTakesNoDescriptor) {
    // Each descriptor sent arrives once: the peek that reads the length
    // installs none of its own (open descriptors counted).
    auto open_fds = [] {
        int n = 0;
        for (int fd = 0; fd < 1024; ++fd) n += ::fcntl(fd, F_GETFD) >= 0 ? 1 : 0;
        return n;
    };
    Pair p;
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
    const int fds[2] = {r.get(), w.get()};
    ASSERT_TRUE(send_with_fds(p.a.get(), "x", fds));
    const int before = open_fds();
    Received got = receive_with_fds(p.b.get(), 64);
    ASSERT_EQ(got.fds.size(), 2U);
    EXPECT_EQ(open_fds(), before + 2);
}

}  // namespace
