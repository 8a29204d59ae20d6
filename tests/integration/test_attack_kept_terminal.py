"""No jail ever holds the caller's terminal (SECURITY.md, "The caller's
terminal"): an attach jail gets a pseudo-terminal of the helper's own, and
the front relays between it and the caller's terminal; when the attach
ends, the front closes the master, so the slave is dead wherever the
tenant keeps it.

The attack (issue 40, finding 1): from its attach jail, the tenant runs
`tmux detach-client -E CMD`; CMD sends its fd 0 (the terminal) over a unix
socket in its home to a process in its session jail (a path socket ignores
the attach jail's empty network namespace), which keeps it. The caller
then runs another tenant's attach on the same terminal (an operator's root
shell, a proxy that reuses ptys): the kept terminal must not reach it. The
terminal is a real pty, the helper its session leader, as ttyd runs it."""
import os
import pwd

from conftest import new_session, wait_until
from ptyutil import ReusedTerminal, shell_ready

# The receiver, in the tenant's session jail (a tmux window): takes one
# descriptor on HOME/grab.sock, says what it got, then, once GO exists,
# writes a marker to it and reads from it for 3 s, saying what each did.
GRAB = r'''
import array, os, socket, sys, time
home = sys.argv[1]
log = open(os.path.join(home, "grab.log"), "a", buffering=1)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(os.path.join(home, "grab.sock"))
s.listen(1)
c, _ = s.accept()
_, anc, _, _ = c.recvmsg(16, socket.CMSG_SPACE(4))
fds = array.array("i")
for level, kind, data in anc:
    fds.frombytes(data[:len(data) - len(data) % 4])
fd = fds[0]
log.write("GOT isatty=%s\n" % os.isatty(fd))
os.set_blocking(fd, False)
stolen = open(os.path.join(home, "stolen.log"), "ab", buffering=0)
while not os.path.exists(os.path.join(home, "go")):
    time.sleep(0.1)
for _ in range(30):
    try:
        os.write(fd, b"\r\nINJECTED" + b"_BY_TENANT\r\n")
        log.write("wrote\n")
    except OSError as e:
        log.write("write errno %d\n" % e.errno)
    try:
        d = os.read(fd, 4096)
        stolen.write(d)
        log.write("read %d\n" % len(d))
    except BlockingIOError:
        pass
    except OSError as e:
        log.write("read errno %d\n" % e.errno)
    time.sleep(0.1)
log.write("DONE\n")
'''

# The sender, run by the tenant's tmux client in the attach jail in its
# place (detach-client -E): its fd 0, over the socket.
SEND = r'''
import array, os, socket, sys
home = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.path.join(home, "grab.sock"))
s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0]).tobytes())])
open(os.path.join(home, "sent.log"), "w").write("SENT isatty=%s\n" % os.isatty(0))
'''


def _plant(home, owner, name, text):
    path = os.path.join(home, name)
    with open(path, "w") as f:
        f.write(text)
    pw = pwd.getpwnam(owner)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    return path


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def test_a_terminal_the_tenant_kept_reaches_no_later_connection(host, alice, bob, terms):
    home = host.home(alice)
    for name in ("grab.sock", "grab.log", "stolen.log", "sent.log", "go"):
        if os.path.lexists(os.path.join(home, name)):
            os.unlink(os.path.join(home, name))
    grab = _plant(home, alice, "grab.py", GRAB)
    send = _plant(home, alice, "send.py", SEND)
    term = ReusedTerminal()
    terms.append(term)
    # Alice's attach: the receiver starts in her session jail, then her
    # client hands its terminal over and ends.
    term.run([host.bin, "run", "--user", alice, "--session", new_session()])
    assert shell_ready(term, "ALICE"), term.output()
    term.write(f"tmux new-window -d 'python3 {grab} {home}'\r")
    assert wait_until(lambda: os.path.exists(os.path.join(home, "grab.sock")), 10), term.output()
    term.write(f"tmux detach-client -E 'python3 {send} {home}'\r")
    assert wait_until(lambda: term.proc.poll() is not None, 15), term.output()
    # Positive control: the tenant kept its end of the attach's terminal.
    assert wait_until(lambda: b"GOT isatty=True" in _read(os.path.join(home, "grab.log")), 5), \
        (_read(os.path.join(home, "grab.log")), _read(os.path.join(home, "sent.log")), term.output())
    # Bob's attach, on the same terminal.
    term.run([host.bin, "run", "--user", bob, "--session", new_session()])
    assert shell_ready(term, "BOB"), term.output()
    open(os.path.join(home, "go"), "w").close()
    for i in range(6):
        term.write(f"echo BOB_SECRET_{i}\r")
        wait_until(lambda: False, 0.4)
    assert wait_until(lambda: b"DONE" in _read(os.path.join(home, "grab.log")), 10), _read(os.path.join(home, "grab.log"))
    log = _read(os.path.join(home, "grab.log")).decode()
    # Nothing of the kept terminal reaches Bob's screen, nothing Bob typed
    # reaches Alice: her end is hung up (every write EIO).
    assert "INJECTED_BY_TENANT" not in term.output(), term.output()[-2000:]
    assert _read(os.path.join(home, "stolen.log")) == b"", _read(os.path.join(home, "stolen.log"))
    assert "wrote" not in log and "write errno 5" in log, log
    term.write("exit\r")
    assert wait_until(lambda: term.proc.poll() is not None, 10), term.output()
