"""From inside the jail, the caller's terminal (which the jail shares: tmux
needs its SIGWINCH) cannot be given another line discipline (TIOCSETD: kernel
code bound to the caller's tty) nor made exclusive (TIOCEXCL: every later
open of the caller's terminal then fails with EBUSY). The helper's seccomp
program returns EPERM for both; the same calls succeed outside the jail."""
import shlex

from attackutil import guard, payloads  # noqa: F401 (fixtures)
from conftest import PROXY, exited, new_session
from ptyutil import PtyProcess

PROBE = r"""
import fcntl, struct, sys, termios
for name, cmd, arg in (("TIOCSETD", termios.TIOCSETD, struct.pack("i", 0)),  # N_TTY, what it has
                       ("TIOCEXCL", termios.TIOCEXCL, 0)):
    try:
        fcntl.ioctl(0, cmd, arg)
        print(sys.argv[1], name, "accepted")
    except OSError as e:
        print(sys.argv[1], name, "refused", e.errno)
"""

# Whether the caller's terminal can still be opened (it cannot while
# exclusive: EBUSY for anyone without CAP_SYS_ADMIN). Through /dev/tty, as the
# caller's programs do: the pty itself belongs to root in this test.
REOPEN = r"""
import os, sys
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    print(sys.argv[1], "REOPEN ok")
except OSError as e:
    print(sys.argv[1], "REOPEN refused", e.errno)
"""

NXCL = "import fcntl, termios; fcntl.ioctl(0, termios.TIOCNXCL, 0)"


def py(code, label):
    return f"python3 -c {shlex.quote(code)} {label}"


def test_tiocsetd_and_tiocexcl_on_the_callers_terminal_fail_inside(host, alice, guard):
    s = new_session()
    jail = shlex.join(host.jail(alice, py(PROBE, "JAIL"), session=s))
    script = "; ".join([
        # Positive control, the caller itself: both succeed, and the terminal
        # is then exclusive (the reopen probe sees EBUSY) until TIOCNXCL.
        py(PROBE, "CONTROL"), py(REOPEN, "CONTROL"), f"python3 -c {shlex.quote(NXCL)}", py(REOPEN, "CLEARED"),
        jail, "echo HELPER_RC=$?", py(REOPEN, "AFTER"), "echo ALL_DONE"])
    t = PtyProcess(["/bin/sh", "-c", script], user=PROXY)
    try:
        assert t.wait_for("ALL_DONE", 30), t.output()
        t.wait(10)
    finally:
        t.close()
    out = t.output()
    for line in ["CONTROL TIOCSETD accepted", "CONTROL TIOCEXCL accepted", "CONTROL REOPEN refused 16",
                 "CLEARED REOPEN ok",
                 "JAIL TIOCSETD refused 1", "JAIL TIOCEXCL refused 1",  # EPERM, from the seccomp program
                 "HELPER_RC=0", "AFTER REOPEN ok"]:
        assert line in out, (line, out)
    lines = host.audit_lines(f"session={s}", want=2, until=exited)
    assert any("decision=allow" in l for l in lines) and any(exited(l) for l in lines), lines
    guard.check()
