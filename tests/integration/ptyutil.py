"""A real pseudo-terminal standing in for ttyd: the helper runs as the
session leader with the pty slave as its controlling terminal, and a thread
drains the master side."""
import fcntl
import os
import pwd
import signal
import struct
import termios
import threading
import time

from conftest import PROXY, Ran, start_as, wait_until


def _drain(t):
    """A terminal's reader thread: t.master's output into t._buf until EOF or EIO."""
    while True:
        try:
            data = os.read(t.master, 4096)
        except OSError:
            return
        if not data:
            return
        with t._lock:
            t._buf += data


class PtyProcess:
    def __init__(self, argv, user=None, env=None, rows=30, cols=100):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = start_as(user, argv, env=env or {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color"},
                             controlling_tty=True, stdin=slave, stdout=slave, stderr=slave)
        os.close(slave)
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=_drain, args=(self,), daemon=True)
        self._reader.start()

    def output(self):
        with self._lock:
            return self._buf.decode(errors="replace")

    def write(self, text):
        os.write(self.master, text.encode())

    def wait_for(self, text, timeout=10.0):
        return wait_until(lambda: text in self.output(), timeout)

    def hangup(self):
        """What ttyd does when the browser goes away: SIGHUP to its command,
        then the master closed (the terminal hangs up)."""
        try:
            os.kill(self.proc.pid, signal.SIGHUP)
        except ProcessLookupError:
            pass
        self._close_master()

    def _close_master(self):
        # Once only: a second close could hit an fd number reused meanwhile.
        if self.master >= 0:
            try:
                os.close(self.master)
            except OSError:
                pass
            self.master = -1

    def wait(self, timeout=10.0):
        return self.proc.wait(timeout=timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_master()


def attach_once(argv, user=PROXY, env=None, timeout=30.0):
    """An attach on a real pty (one without a terminal is refused before
    anything starts), to its end: it ends by itself (a refusal: its line is
    on the terminal), or once its client has drawn its screen (tmux's
    alternate screen: the session jail runs) it is hung up as ttyd would.
    A Ran: stderr is what the terminal showed, returncode 128 + SIGHUP for
    one that attached (the terminal's CR LF read as LF)."""
    t = PtyProcess(argv, user=user, env=env)
    try:
        wait_until(lambda: t.proc.poll() is not None or "\x1b[?1049h" in t.output(), timeout)
        if t.proc.poll() is None:
            t.hangup()
        rc = t.wait(15)
        t._reader.join(2)
        return Ran(rc, "", t.output().replace("\r\n", "\n"), t.proc.pid, t.proc.started)
    finally:
        t.close()


def attach(host, tenant, session, terms, user=PROXY):
    """A connection the way ttyd makes one: `run` on a new pty, as the proxy."""
    t = PtyProcess([host.bin, "run", "--user", tenant, "--session", session], user=user)
    terms.append(t)
    return t


def shell_ready(t, tag="READY", timeout=15.0, retype=5.0):
    """Types an arithmetic echo and waits for its result: only a shell prints
    it. Typed again every `retype` seconds until the timeout: a line typed
    ahead of a client that is still starting (20 tenants at once under a
    sanitizer) can be lost before it reaches the pane, which says nothing
    about the jail; the shell's answer is what is waited for."""
    deadline = time.monotonic() + timeout
    while True:
        t.write(f"echo {tag}_$((40+2))\r")
        left = deadline - time.monotonic()
        # A connection that has ended gets no shell: stop waiting for one.
        if wait_until(lambda: f"{tag}_42" in t.output() or t.proc.poll() is not None, max(0.0, min(retype, left))):
            if f"{tag}_42" in t.output():
                return True
            if t.proc.poll() is not None:
                return t.wait_for(f"{tag}_42", 0.2)
        if time.monotonic() >= deadline:
            return False


class ReusedTerminal:
    """One pseudo-terminal that runs several commands in turn, the way an
    operator's root shell or a proxy that reuses ptys runs `run` again on
    the same terminal: each command the session leader with the slave as
    its controlling terminal. The test holds the master (drained by a
    thread) and the slave for the whole test."""

    def __init__(self, rows=30, cols=100):
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.proc = None
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._mark = 0
        threading.Thread(target=_drain, args=(self,), daemon=True).start()

    def run(self, argv, user=PROXY):
        """Starts argv on the terminal; output() shows only what comes after."""
        with self._lock:
            self._mark = len(self._buf)
        self.proc = start_as(user, argv, env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color"},
                             controlling_tty=True, stdin=self.slave, stdout=self.slave, stderr=self.slave)
        return self

    def output(self):
        with self._lock:
            return self._buf[self._mark:].decode(errors="replace")

    def write(self, text):
        os.write(self.master, text.encode())

    def wait_for(self, text, timeout=10.0):
        return wait_until(lambda: text in self.output(), timeout)

    def termios(self):
        return termios.tcgetattr(self.slave)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.slave, self.master):
            try:
                os.close(fd)
            except OSError:
                pass
        self.slave = self.master = -1
