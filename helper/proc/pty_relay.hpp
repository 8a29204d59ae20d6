// pty_relay.hpp: the front's terminal relay. A jail never gets the caller's
// terminal: each attach (and each one-off whose stdin is a terminal) gets a
// fresh pseudo-terminal pair of the helper's own; the jail is handed only
// the slave, and the front relays bytes between the caller's terminal and
// the master (as sudo's use_pty and su --pty do). When the front closes the
// master, a slave the tenant kept (passed over a unix socket to its
// session jail, say) is hung up: it reaches no later connection.
#pragma once

#include <poll.h>
#include <termios.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "base/unique_fd.hpp"

namespace clihost {

class PtyRelay {
public:
    // How the caller's terminal is set while relaying: raw (an attach: the
    // tmux client reads every key), or raw but with ISIG (a one-off: ^C and
    // ^Z still signal the front, which relays them to the jail as before).
    enum class Mode { attach, oneoff };

    // The pair, its slave set to the caller's terminal's modes and size (the
    // caller's terminal is stdin, which must be one; output goes to stdout's
    // terminal, else stderr's, else stdin's), then the caller's terminal
    // set raw. Each caller terminal is reopened (an open file description
    // of the relay's own, non-blocking: a caller or a tenant that stops
    // reading never blocks the front).
    static Result<std::unique_ptr<PtyRelay>> open(Mode mode);
    PtyRelay(const PtyRelay&) = delete;
    PtyRelay& operator=(const PtyRelay&) = delete;
    // finish()
    ~PtyRelay();

    // The jail's three descriptors: the slave for each of 0, 1, 2 that is
    // a terminal (all three for an attach), the caller's own otherwise.
    std::vector<int> jail_fds() const;
    // Our copy of the slave, closed once it has been sent.
    void close_slave() { slave_.reset(); }

    // Appends the relay's three pollfds to `p` (an fd of -1 for a side
    // that waits for nothing now).
    void want(std::vector<pollfd>& p);
    // Moves what poll found ready (the entries want() appended from `at`).
    // False when the caller's terminal has just hung up (read 0 or EIO).
    bool on_ready(const std::vector<pollfd>& p, std::size_t at);
    // The caller's terminal's size, to the master (at the start and on
    // SIGWINCH). False only when the master refused a size there was.
    bool resize();
    // The jail's last output (what its tmux client wrote as it ended),
    // written to the caller within a bound (500 ms, 1 MiB); the master
    // closed (the slave hung up, wherever it is); the caller's modes back.
    void finish();

private:
    PtyRelay() = default;
    struct Pipe {
        std::vector<char> buf = std::vector<char>(16384);
        std::size_t off{0}, len{0};
        bool empty() const { return off == len; }
    };
    // Reads `from` into `p` (empty), false at its end (0 or an error but EAGAIN).
    static bool fill(int from, Pipe& p);
    // Writes what `p` holds to `to`, false on an error but EAGAIN.
    static bool flush(int to, Pipe& p);

    Mode mode_{Mode::attach};
    UniqueFd in_;      // the caller's terminal (stdin's), reopened
    UniqueFd out_;     // where the jail's output goes, reopened
    UniqueFd master_;
    UniqueFd slave_;
    bool tty_[3] = {false, false, false};
    termios saved_{};
    bool raw_{false};
    bool in_open_{true}, master_open_{true};
    Pipe to_jail_, to_caller_;
};

}  // namespace clihost
