// pty_relay.cpp: the front's terminal relay (pty_relay.hpp).
#include "proc/pty_relay.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

namespace clihost {
namespace {

// The caller's terminal on `fd`, opened again: an open file description of
// the relay's own, so that O_NONBLOCK is ours and not the caller's (ttyd's,
// a shell's). The same device, checked by its number.
Result<UniqueFd> reopen_terminal(int fd) {
    struct stat want {};
    if (::fstat(fd, &want) != 0 || !S_ISCHR(want.st_mode) || ::isatty(fd) != 1)
        return fail(Exit::refused, "an attach hands over a terminal");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    UniqueFd t(::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    struct stat got {};
    if (!t.valid() || ::fstat(t.get(), &got) != 0 || !S_ISCHR(got.st_mode) || got.st_rdev != want.st_rdev)
        return fail(Exit::host, "cannot open the caller's terminal again for the relay");
    return t;
}

// A pair of our own: the master non-blocking (a tenant that stops reading
// never blocks the front), the slave root's 0600 (only its descriptor,
// never its path, reaches a jail), neither ever our controlling terminal.
Status open_pair(UniqueFd& master, UniqueFd& slave) {
    master.reset(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
    if (!master.valid()) return fail(Exit::host, "cannot open a pseudo-terminal (/dev/ptmx)");
    if (::unlockpt(master.get()) != 0) return fail(Exit::host, "cannot unlock a pseudo-terminal");
    slave.reset(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!slave.valid()) return fail(Exit::host, "cannot open a pseudo-terminal's slave (TIOCGPTPEER)");
    if (::fchown(slave.get(), 0, 0) != 0 || ::fchmod(slave.get(), 0600) != 0)
        return fail(Exit::host, "cannot make a pseudo-terminal root's 0600");
    return ok_status();
}

constexpr int kDrainMs = 500;
constexpr int kQuietMs = 50;
constexpr std::size_t kDrainBytes = 1 << 20;

}  // namespace

Result<std::unique_ptr<PtyRelay>> PtyRelay::open(Mode mode) {
    std::unique_ptr<PtyRelay> r(new PtyRelay());
    r->mode_ = mode;
    for (int fd = 0; fd < 3; ++fd) r->tty_[fd] = ::isatty(fd) == 1;
    auto in = reopen_terminal(0);
    if (!in) return in.error();
    r->in_ = std::move(in).value();
    auto out = reopen_terminal(r->tty_[1] ? 1 : r->tty_[2] ? 2 : 0);
    if (!out) return out.error();
    r->out_ = std::move(out).value();
    if (auto st = open_pair(r->master_, r->slave_); !st) return st.error();
    // The jail's side starts as the caller's terminal was: its modes and
    // its size (a tmux client then makes it raw itself, as it did the
    // caller's terminal before).
    if (::tcgetattr(r->in_.get(), &r->saved_) != 0 || ::tcsetattr(r->slave_.get(), TCSANOW, &r->saved_) != 0)
        return fail(Exit::host, "cannot copy the caller's terminal modes to the jail's terminal");
    if (!r->resize()) return fail(Exit::host, "cannot copy the caller's terminal size to the jail's terminal");
    // The caller's terminal raw, so that every byte reaches the jail's
    // terminal, whose modes then apply (sudo's use_pty does the same). A
    // one-off keeps ISIG: ^C and ^Z signal the front, which relays them.
    termios raw = r->saved_;
    ::cfmakeraw(&raw);
    if (mode == Mode::oneoff) raw.c_lflag |= ISIG;
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (::tcsetattr(r->in_.get(), TCSANOW, &raw) != 0) return fail(Exit::host, "cannot set the caller's terminal raw");
    r->raw_ = true;
    return r;
}

PtyRelay::~PtyRelay() { finish(); }

std::vector<int> PtyRelay::jail_fds() const {
    std::vector<int> fds;
    fds.reserve(3);
    for (int fd = 0; fd < 3; ++fd) fds.push_back(mode_ == Mode::attach || tty_[fd] ? slave_.get() : fd);
    return fds;
}

bool PtyRelay::fill(int from, Pipe& p) {
    const ssize_t n = ::read(from, p.buf.data(), p.buf.size());
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) return false;
    p.off = 0;
    p.len = static_cast<std::size_t>(n);
    return true;
}

bool PtyRelay::flush(int to, Pipe& p) {
    const ssize_t n = ::write(to, p.buf.data() + p.off, p.len - p.off);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) {
        p.off = p.len = 0;
        return false;
    }
    p.off += static_cast<std::size_t>(n);
    if (p.empty()) p.off = p.len = 0;
    return true;
}

void PtyRelay::want(std::vector<pollfd>& p) {
    // Each side read only while the other's buffer is empty: a side that
    // stops reading holds at most one buffer (16 KiB), and the front's
    // loop goes on (signals, the supervisor's reply).
    const short in = in_open_ && master_open_ && to_jail_.empty() ? POLLIN : 0;
    const short out = to_caller_.empty() ? 0 : POLLOUT;
    const short master = static_cast<short>((master_open_ && to_caller_.empty() ? POLLIN : 0) |
                                            (master_open_ && !to_jail_.empty() ? POLLOUT : 0));
    p.push_back({in != 0 ? in_.get() : -1, in, 0});
    p.push_back({out != 0 ? out_.get() : -1, out, 0});
    p.push_back({master != 0 ? master_.get() : -1, master, 0});
}

bool PtyRelay::on_ready(const std::vector<pollfd>& p, std::size_t at) {
    const pollfd& in = p[at];
    const pollfd& out = p[at + 1];
    const pollfd& master = p[at + 2];
    bool caller_there = true;
    constexpr short kReadable = POLLIN | POLLHUP | POLLERR;
    if (in.fd >= 0 && (in.revents & kReadable) != 0 && !fill(in_.get(), to_jail_)) {
        // The caller's terminal hung up (ttyd closed its master): the
        // attach ends, as for its SIGHUP.
        in_open_ = false;
        caller_there = false;
    }
    if (out.fd >= 0 && (out.revents & (POLLOUT | POLLHUP | POLLERR)) != 0 && !flush(out_.get(), to_caller_) &&
        in_open_) {
        in_open_ = false;
        caller_there = false;
    }
    if (master.fd >= 0 && (master.revents & POLLOUT) != 0 && !flush(master_.get(), to_jail_)) master_open_ = false;
    // Read 0 or EIO: no slave is open any more (the client ended): the
    // status is the supervisor's to send; nothing more to read.
    if (master.fd >= 0 && (master.revents & kReadable) != 0 && to_caller_.empty() && !fill(master_.get(), to_caller_))
        master_open_ = false;
    return caller_there;
}

bool PtyRelay::resize() {
    winsize ws{};
    if (::ioctl(in_.get(), TIOCGWINSZ, &ws) != 0) return true;  // the caller's terminal has no size to copy
    return ::ioctl(master_.get(), TIOCSWINSZ, &ws) == 0;
}

void PtyRelay::finish() {
    if (master_.valid()) {
        // The jail's last output (its client leaving the alternate screen,
        // the watcher's relayed stderr lines); a tenant still writing to a
        // slave it kept gets no more than the bounds.
        using Clock = std::chrono::steady_clock;
        const auto until = Clock::now() + std::chrono::milliseconds(kDrainMs);
        std::size_t moved = 0;
        while (Clock::now() < until && moved < kDrainBytes) {
            if (to_caller_.empty()) {
                // A slave's writes reach the master through the kernel's
                // work queue, so the last of them may still be on its way:
                // a quiet 50 ms (or end of file: no slave left) ends it.
                pollfd m{master_.get(), POLLIN, 0};
                if (::poll(&m, 1, kQuietMs) == 0) break;
                if (!fill(master_.get(), to_caller_)) break;
                moved += to_caller_.len;
                continue;
            }
            pollfd p{out_.get(), POLLOUT, 0};
            if (::poll(&p, 1, 10) < 0 && errno != EINTR) break;
            if ((p.revents & POLLOUT) != 0 && !flush(out_.get(), to_caller_)) break;
        }
        // The slave hangs up wherever it is (a tenant that kept it reads 0
        // and gets EIO on a write from now on).
        master_.reset();
    }
    slave_.reset();
    if (raw_) {
        (void)::tcsetattr(in_.get(), TCSANOW, &saved_);
        raw_ = false;
    }
}

}  // namespace clihost
