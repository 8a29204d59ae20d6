#!/usr/bin/env python3
"""How a multi-tenant proxy (clihost) starts and stops a tenant's terminal
through clihost-jail.

The proxy runs as user `clihost` (helper installed setuid 4750 root:clihost,
or via sudo) or as root. It never needs root for a tenant itself: the helper
checks the caller and tenant, opens the PAM session and starts the jail.

Every command is an argv list passed to exec, never a shell string: a tenant
or session name can then never become shell syntax. Names are also checked
here with the helper's own rules, so that a bad request fails early with a
clear message instead of a refused ttyd start.

    python3 proxy_example.py --dry-run terminal --user alice --session main
    python3 proxy_example.py --dry-run kill --user alice --session main
    python3 proxy_example.py --dry-run delete --user alice --session main
    python3 proxy_example.py --dry-run stop --user alice
    python3 proxy_example.py --dry-run list

The tenant's work lives in its session jail, not in ttyd: the first terminal
starts it, closing a browser tab ends only that connection's attach jail,
and ttyd keeps serving the same session to the next tab. The proxy's three
lifecycle calls:
- DELETE of a terminal: stop its ttyd (SIGTERM, reap it), remove its socket,
  then `kill` the tmux session; the last session's end ends the tenant's
  session jail. From the command line: `delete` ends the ttyd a `terminal`
  process serves (by its pid file; that `terminal` process then exits),
  then kills the session.
- proxy restart: the proxy ends the ttyds it started (on SIGTERM, and at
  its next start those a killed proxy left, by their pid files), which ends
  their connections; the session jails live on. `list --json` says which
  tenants and sessions exist: start ttyd again for each session the proxy
  still knows. Two ttyds never serve one socket path.
- tenant removed or disabled: expire (or remove) the account, so that no new
  attach starts a jail; stop its ttyds (DELETE of each terminal, or
  stop_terminal), then `stop` ends its session jail and everything in it.

ttyd listens on a UNIX socket, /run/clihost/TENANT@SESSION.sock, never on
TCP: ttyd has no authentication of its own here, and a TCP port on
127.0.0.1 is reachable from every tenant's jail that shares the host's
network (a tenant typed into another tenant's terminal that way) and can be
squatted by a tenant that binds it first. The socket's directory is 0700 and
the proxy's own, so no tenant can even find the socket, jailed or not; the
proxy connects to it (http_get, TerminalConnection) and forwards the
browser's connection after it has authenticated the tenant.
"""
import argparse
import base64
import grp
import hashlib
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time

HELPER = "/usr/libexec/clihost-jail/clihost-jail"
# ttyd: --ttyd, else $CLIHOST_TTYD, else `ttyd` on the proxy's PATH
# (find_ttyd). Debian 12 has no ttyd package (install/clihost/README.md).
TTYD = None
TTYD_ENV = "CLIHOST_TTYD"
TTYD_HOWTO = ("Debian 12 has no ttyd package: install upstream's static release binary "
              "(https://github.com/tsl0922/ttyd/releases, e.g. ttyd.x86_64 as /usr/local/bin/ttyd, root-owned, "
              "mode 0755) or build ttyd from source (install/clihost/README.md, 'Getting ttyd')")
SUDO = "/usr/bin/sudo"
# Where ttyd's sockets live: 0700 (or 0750 with a group no tenant is in),
# owned by the proxy user. /run is root's: create it at boot with
# tmpfiles.d (`d /run/clihost 0700 clihost clihost -`) or systemd's
# RuntimeDirectory=clihost with RuntimeDirectoryMode=0700; a root proxy
# creates it itself.
SOCKET_DIR = "/run/clihost"
# sockaddr_un.sun_path holds 108 bytes with the terminating NUL; ttyd
# (libwebsockets) refuses a longer path.
SUN_PATH_MAX = 107

# The helper's rules (clihost-jail(8)): session [A-Za-z0-9_.-]{1,64}, not starting
# with '-' or '.'; account names as the helper accepts them.
SESSION_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")
USER_RE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,31}\Z")

# The environment handed to ttyd and the helper: nothing of the proxy's own
# (tokens, cookies, database URLs must not reach ttyd). The helper keeps only
# TERM LANG LC_ALL COLORTERM (jail.conf extra_env) anyway.
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

# Exit codes of the helper itself; any other code is the jailed command's.
# An attach (run without a command) reports only these, 0, 128 + N (its
# client killed by signal N) and 5 for any other status of the tenant's
# tmux client, which the tenant chooses (README, "Exit codes").
HELPER_EXIT = {1: "refused by policy", 2: "usage error", 3: "host cannot run a safe jail", 4: "internal error"}
ATTACH_CLIENT_FAILED = 5


def _check_names(user, session):
    if not USER_RE.match(user):
        raise ValueError(f"invalid tenant name: {user!r}")
    if not SESSION_RE.match(session):
        raise ValueError(f"invalid session name: {session!r}")


def _helper_prefix(helper, via_sudo):
    # -n: never prompt; a daemon has no terminal, a prompt would hang.
    return [SUDO, "-n", helper] if via_sudo else [helper]


class TtydNotFound(Exception):
    """No ttyd where the proxy was told, or none on its PATH."""


def find_ttyd(explicit=None, env=None):
    """The ttyd to run, as an absolute path: `explicit` (--ttyd), else
    $CLIHOST_TTYD, else `ttyd` on PATH. Each is a path (it has a '/') or a
    name looked up on PATH, and must be an executable file; TtydNotFound says
    which one was missing and where to get ttyd."""
    env = os.environ if env is None else env
    search = env.get("PATH", os.defpath)
    for source, value in (("--ttyd", explicit), ("$" + TTYD_ENV, env.get(TTYD_ENV)), ("PATH", "ttyd")):
        if not value:
            continue
        if "/" in value:
            found = value if os.path.isfile(value) and os.access(value, os.X_OK) else None
        else:
            found = shutil.which(value, path=search)
        if found:
            return os.path.abspath(found)
        if source == "PATH":
            raise TtydNotFound(f"ttyd not found: no --ttyd, no ${TTYD_ENV}, and no ttyd on PATH ({search}); "
                               f"{TTYD_HOWTO}")
        where = "no executable file there" if "/" in value else f"not on PATH ({search})"
        raise TtydNotFound(f"ttyd not found: {source} {value}: {where}; {TTYD_HOWTO}")
    raise AssertionError("unreachable")


class SocketDirError(Exception):
    """The socket directory is missing and cannot be made, or is not safe."""


def socket_path(user, session, socket_dir=SOCKET_DIR):
    """Where ttyd serves the terminal SESSION of USER: SOCKET_DIR/USER@SESSION.sock
    ('@' is in neither name, so two terminals never share a path; ttyd takes
    --interface as a UNIX socket because it ends in .sock)."""
    _check_names(user, session)
    path = os.path.join(socket_dir, f"{user}@{session}.sock")
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        raise ValueError(f"socket path longer than {SUN_PATH_MAX} bytes: {path!r}")
    return path


def socket_owner():
    """ttyd's --socket-owner: the proxy's own user:group."""
    return f"{pwd.getpwuid(os.geteuid()).pw_name}:{grp.getgrgid(os.getegid()).gr_name}"


def ensure_socket_dir(path=SOCKET_DIR):
    """Make sure PATH is a directory only the proxy can enter; returns PATH.

    Made 0700 if absent. An existing one must be a real directory (not a
    symlink: an attacker's link would put the sockets where the attacker
    can reach them), owned by the proxy's uid (someone else's directory,
    pre-created by a tenant in a writable parent, would let its owner swap
    the sockets) and mode 0700 or 0750. Its parent must not be writable by
    others (they could rename the directory away and put their own there).
    Nothing is changed on an existing directory: it is refused instead."""
    if not os.path.isabs(path):
        raise SocketDirError(f"{path} is not an absolute path")
    euid = os.geteuid()
    parent = os.path.dirname(os.path.normpath(path))
    try:
        pst = os.lstat(parent)
    except OSError as e:
        raise SocketDirError(f"{parent}: {e.strerror}") from None
    if not stat.S_ISDIR(pst.st_mode) or pst.st_uid not in (0, euid) or pst.st_mode & 0o022:
        raise SocketDirError(f"{parent} is not a directory owned by root or the proxy and closed to others")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except PermissionError:
        raise SocketDirError(f"{path} does not exist and the proxy cannot create it: make it 0700 owned by "
                             f"the proxy (tmpfiles.d or RuntimeDirectory=)") from None
    lst = os.lstat(path)
    if stat.S_ISLNK(lst.st_mode):
        raise SocketDirError(f"{path} is a symlink")
    if not stat.S_ISDIR(lst.st_mode):
        raise SocketDirError(f"{path} is not a directory")
    # The checks below are made on the opened directory itself (O_NOFOLLOW:
    # a symlink swapped in after the lstat is not followed).
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise SocketDirError(f"{path} changed while it was checked: {e.strerror}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if st.st_uid != euid:
        raise SocketDirError(f"{path} is owned by uid {st.st_uid}, not by the proxy (uid {euid})")
    if stat.S_IMODE(st.st_mode) not in (0o700, 0o750):
        raise SocketDirError(f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, not 0700 or 0750")
    return path


def remove_socket(path):
    """Remove ttyd's socket file (ttyd removes it on a clean exit, not when
    it is killed). Only a socket is removed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISSOCK(st.st_mode):
        os.unlink(path)


def terminal_argv(helper, user, session, ttyd="ttyd", socket_dir=SOCKET_DIR, owner=None, via_sudo=False):
    """argv that serves one tenant terminal on its UNIX socket: ttyd runs the
    helper. ttyd as given (launch_terminal and the CLI pass find_ttyd()'s)."""
    path = socket_path(user, session, socket_dir)
    return [
        ttyd,
        # A UNIX socket (the path ends in .sock), never TCP: only the proxy
        # can reach it (its directory is the proxy's, 0700), and the proxy
        # authenticates the tenant first. ttyd (libwebsockets) chowns the
        # socket to --socket-owner and makes it 0660.
        "--interface", path,
        "--socket-owner", owner or socket_owner(),
        # No --once: each browser connection gets an attach jail of its own,
        # and closing a tab (ttyd's SIGHUP to its command) ends only that one;
        # the session itself lives in the tenant's session jail.
        # ttyd >= 1.7 is read-only unless told otherwise.
        "--writable",
        *_helper_prefix(helper, via_sudo),
        "run", "--user", user, "--session", session,
    ]


def kill_argv(helper, user, session, via_sudo=False):
    """argv that ends the tenant's tmux session NAME (tmux kill-session, as the tenant)."""
    _check_names(user, session)
    return [*_helper_prefix(helper, via_sudo), "kill", "--user", user, "--session", session]


def stop_argv(helper, user, via_sudo=False):
    """argv that ends the tenant's session jail and everything in it."""
    _check_names(user, "x")
    return [*_helper_prefix(helper, via_sudo), "stop", "--user", user]


def list_argv(helper, user=None, via_sudo=False):
    """argv that lists the live session jails (of one tenant), as JSON Lines."""
    if user is not None:
        _check_names(user, "x")
    return [*_helper_prefix(helper, via_sudo), "list", "--json", *(["--user", user] if user is not None else [])]


def parse_list(text):
    """`list --json` output -> {tenant: [session, ...] or None}: one JSON
    object per session jail; None when its tenant's tmux did not answer in
    time or it is no longer a tenant ("sessions_state" says which). Session
    names are the caller's own; one a tenant made itself shows every byte
    outside [A-Za-z0-9_.-] as \\xNN, so it never matches a name the proxy
    asked for by accident. A tenant listed twice is refused (ValueError):
    the helper never writes one twice, so it would be a forgery."""
    out = {}
    for line in text.splitlines():
        entry = json.loads(line)
        tenant, sessions = entry["tenant"], entry["sessions"]
        if not isinstance(tenant, str) or not (sessions is None or isinstance(sessions, list)):
            raise ValueError(f"malformed list entry: {line!r}")
        if tenant in out:
            raise ValueError(f"tenant {tenant!r} listed twice")
        out[tenant] = None if sessions is None else [str(x) for x in sessions]
    return out


def _pid_file(sock_path):
    return sock_path[:-len(".sock")] + ".pid"


def _start_ticks(pid):
    """Field 22 of /proc/PID/stat (counted after the last ')'), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def end_ttyd(proc_or_pid, timeout=10.0):
    """SIGTERM, then SIGKILL after TIMEOUT: a Popen (reaped) or a pid."""
    if isinstance(proc_or_pid, subprocess.Popen):
        if proc_or_pid.poll() is None:
            proc_or_pid.terminate()
            try:
                proc_or_pid.wait(timeout)
            except subprocess.TimeoutExpired:
                proc_or_pid.kill()
                proc_or_pid.wait()
        return
    pid = proc_or_pid
    ticks = _start_ticks(pid)
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _start_ticks(pid) != ticks:
            return
        time.sleep(0.05)
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def end_previous_ttyd(sock_path):
    """The ttyd a previous proxy process started on SOCK_PATH (its pid file:
    pid and start time, so a reused pid is never signalled) is ended, and
    its socket removed: a second ttyd never binds a path one still serves,
    and the old one, ending later, never unlinks the new one's socket."""
    pid_file = _pid_file(sock_path)
    try:
        with open(pid_file) as f:
            pid, ticks = f.read().split()
        pid = int(pid)
    except (OSError, ValueError):
        pid = ticks = None
    if pid is not None and pid > 1 and _start_ticks(pid) == ticks:
        end_ttyd(pid)
    if pid is not None:
        os.unlink(pid_file)
    remove_socket(sock_path)


def launch_terminal(user, session, helper=HELPER, ttyd=TTYD, via_sudo=False, socket_dir=SOCKET_DIR):
    """Start ttyd for the tenant; returns the Popen (the proxy reaps it),
    with .socket_path where it listens. ttyd: find_ttyd(ttyd) (TtydNotFound
    before anything is made). A ttyd an earlier proxy process started on
    that path is ended first (end_previous_ttyd)."""
    ttyd = find_ttyd(ttyd)
    ensure_socket_dir(socket_dir)
    argv = terminal_argv(helper, user, session, ttyd=ttyd, socket_dir=socket_dir, via_sudo=via_sudo)
    path = socket_path(user, session, socket_dir)
    end_previous_ttyd(path)
    # start_new_session: the proxy's own signals (Ctrl-C in a dev shell) do
    # not hit running terminals; the proxy ends them explicitly (stop_terminal,
    # and on SIGTERM: main).
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=CHILD_ENV, close_fds=True, start_new_session=True)
    proc.socket_path = path
    ticks = _start_ticks(proc.pid)
    if ticks is not None:
        tmp = _pid_file(path) + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{proc.pid} {ticks}\n")
        os.replace(tmp, _pid_file(path))
    return proc


def stop_terminal(ttyd_proc, socket_dir=None):
    """End a ttyd this process started (its connections end; the session
    jail lives on), and remove its socket and pid file."""
    end_ttyd(ttyd_proc)
    remove_socket(ttyd_proc.socket_path)
    try:
        os.unlink(_pid_file(ttyd_proc.socket_path))
    except FileNotFoundError:
        pass


def connect_ttyd(path, timeout=10.0):
    """A stream connected to ttyd's UNIX socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError:
        s.close()
        raise
    return s


def wait_listening(ttyd_proc, path, timeout=10.0):
    """Wait until ttyd accepts connections on PATH; False if it exited or
    the time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ttyd_proc.poll() is not None:
            return False
        try:
            connect_ttyd(path, timeout=1.0).close()
            return True
        except (FileNotFoundError, ConnectionRefusedError):
            time.sleep(0.05)
    return False


def _read_head(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("ttyd closed the connection in the response head")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    return status, headers, rest


def http_get(path, target="/", timeout=10.0):
    """GET TARGET from ttyd over its UNIX socket: (status, headers, body)."""
    with connect_ttyd(path, timeout) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        status, headers, body = _read_head(s)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    if "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return status, headers, body


class TerminalConnection:
    """A browser's connection to ttyd's terminal, made by the proxy over the
    UNIX socket: the websocket /ws (subprotocol "tty") and ttyd's messages
    ('0' input/output, '1' resize/title, '2' preferences; the first client
    message is JSON with the terminal size)."""

    def __init__(self, path, columns=100, rows=30, timeout=10.0):
        self.sock = connect_ttyd(path, timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: tty\r\n\r\n").encode())
        status, headers, self._buf = _read_head(self.sock)
        want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        if status != 101 or headers.get("sec-websocket-accept", "").encode() != want:
            self.sock.close()
            raise ConnectionError(f"ttyd refused the websocket: HTTP {status}")
        self.output = bytearray()
        self.title = None
        self.close_code = None
        self._send(0x2, json.dumps({"AuthToken": "", "columns": columns, "rows": rows}).encode())

    def _send(self, opcode, payload):
        n = len(payload)
        head = bytes([0x80 | opcode])
        # A client masks every frame (RFC 6455 5.3).
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))

    def send_input(self, text):
        self._send(0x2, b"0" + text.encode())

    def resize(self, columns, rows):
        self._send(0x2, b"1" + json.dumps({"columns": columns, "rows": rows}).encode())

    def _read_frame(self):
        """The next whole frame (opcode, payload); nothing is consumed until
        all of it arrived, so a timeout never cuts one in two."""
        while True:
            buf = self._buf
            if len(buf) >= 2:
                n, at = buf[1] & 0x7F, 2
                if n == 126 and len(buf) >= 4:
                    n, at = struct.unpack("!H", buf[2:4])[0], 4
                elif n == 127 and len(buf) >= 10:
                    n, at = struct.unpack("!Q", buf[2:10])[0], 10
                if (buf[1] & 0x7F) < 126 or at > 2:
                    if len(buf) >= at + n:
                        self._buf = buf[at + n:]
                        return buf[0] & 0x0F, buf[at:at + n]
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self._buf += chunk

    def wait_for(self, text, timeout=10.0):
        """Read the terminal until TEXT was shown; False at the timeout or
        when ttyd closed the websocket first."""
        want = text.encode()
        deadline = time.monotonic() + timeout
        while want not in self.output:
            left = deadline - time.monotonic()
            if left <= 0 or self.close_code is not None:
                return False
            self.sock.settimeout(left)
            try:
                opcode, payload = self._read_frame()
            except (socket.timeout, EOFError, OSError):
                return want in self.output
            if opcode == 0x8:
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
            elif payload[:1] == b"0":
                self.output += payload[1:]
            elif payload[:1] == b"1":
                self.title = payload[1:].decode(errors="replace")
        return True

    def wait_closed(self, timeout=10.0):
        """Read until ttyd closes the websocket (the command ended); its code or None."""
        self.wait_for("\0never\0", timeout)
        return self.close_code

    def close(self):
        """The browser goes away: ttyd sends its command SIGHUP."""
        try:
            self._send(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()


def kill_session(user, session, helper=HELPER, via_sudo=False, timeout=30):
    """End the tenant's session; returns (ok, message)."""
    argv = kill_argv(helper, user, session, via_sudo=via_sudo)
    r = _run_helper(argv, timeout)
    if r.returncode == 0:
        return True, "session ended"
    # A refusal always prints one line starting with "clihost-jail: "; without
    # it, the code is tmux's (1: no such session).
    refusal = [line for line in r.stderr.splitlines() if line.startswith("clihost-jail: ")]
    if refusal:
        return False, f"{HELPER_EXIT.get(r.returncode, 'error')}: {refusal[0]}"
    return False, f"tmux exited {r.returncode} (no such session?)"


def delete_terminal(ttyd_proc, user, session, helper=HELPER, via_sudo=False, socket_dir=SOCKET_DIR):
    """What the proxy does on DELETE: stop ttyd first (no new connection can
    start an attach), remove its socket (left behind if ttyd was killed),
    then end the tmux session (its last one ends the tenant's session jail)."""
    ttyd_proc.socket_path = socket_path(user, session, socket_dir)
    stop_terminal(ttyd_proc)
    return kill_session(user, session, helper=helper, via_sudo=via_sudo)


def _run_helper(argv, timeout=30):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, env=CHILD_ENV, capture_output=True, text=True,
                          timeout=timeout, check=False)


def stop_tenant(user, helper=HELPER, via_sudo=False, timeout=60):
    """End the tenant's session jail; returns (ok, message)."""
    r = _run_helper(stop_argv(helper, user, via_sudo=via_sudo), timeout)
    if r.returncode == 0:
        return True, r.stdout.strip()
    return False, f"{HELPER_EXIT.get(r.returncode, 'error')}: {r.stderr.strip()}"


def list_sessions(helper=HELPER, user=None, via_sudo=False, timeout=10):
    """{tenant: [session, ...] or None} of the live session jails (the
    helper answers within a few seconds: each tenant's tmux is asked with a
    deadline of its own)."""
    r = _run_helper(list_argv(helper, user, via_sudo=via_sudo), timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{HELPER_EXIT.get(r.returncode, 'error')}: {r.stderr.strip()}")
    return parse_list(r.stdout)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--helper", default=HELPER, help="path of clihost-jail (default %(default)s)")
    p.add_argument("--ttyd", default=TTYD,
                   help=f"path or name of ttyd (default: ${TTYD_ENV}, else ttyd on PATH)")
    p.add_argument("--sudo", action="store_true", help="call the helper through sudo -n")
    p.add_argument("--socket-dir", default=SOCKET_DIR, help="directory of ttyd's sockets (default %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="print the argv instead of running it")
    sub = p.add_subparsers(dest="action", required=True)
    t = sub.add_parser("terminal", help="serve a terminal with ttyd")
    k = sub.add_parser("kill", help="end a tmux session")
    d = sub.add_parser("delete", help="end a terminal's ttyd (its `terminal` process exits), then its tmux session")
    st = sub.add_parser("stop", help="end a tenant's session jail")
    ls = sub.add_parser("list", help="list the live session jails")
    for s in (t, k, d):
        s.add_argument("--user", required=True)
        s.add_argument("--session", required=True)
    st.add_argument("--user", required=True)
    ls.add_argument("--user")
    a = p.parse_args(argv)
    try:
        if a.action == "terminal":
            _check_names(a.user, a.session)
            try:
                ttyd = find_ttyd(a.ttyd)
            except TtydNotFound as e:
                print(f"proxy_example: {e}", file=sys.stderr)
                return 1
            cmd = terminal_argv(a.helper, a.user, a.session, ttyd=ttyd, socket_dir=a.socket_dir, via_sudo=a.sudo)
        elif a.action in ("kill", "delete"):
            cmd = kill_argv(a.helper, a.user, a.session, via_sudo=a.sudo)
        elif a.action == "stop":
            cmd = stop_argv(a.helper, a.user, via_sudo=a.sudo)
        else:
            cmd = list_argv(a.helper, a.user, via_sudo=a.sudo)
    except ValueError as e:
        print(f"proxy_example: {e}", file=sys.stderr)
        return 2
    if a.dry_run:
        print(shlex.join(cmd))
        return 0
    if a.action == "terminal":
        try:
            proc = launch_terminal(a.user, a.session, helper=a.helper, ttyd=ttyd, via_sudo=a.sudo,
                                   socket_dir=a.socket_dir)
        except SocketDirError as e:
            print(f"proxy_example: {e}", file=sys.stderr)
            return 1

        # A proxy stopped (SIGTERM: systemd, a restart) ends its ttyd, and
        # with it the ttyd's connections; never the session jail. The
        # handler only notes it (a Popen.wait in a handler would deadlock
        # with one in progress).
        stopping = []
        signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
        while proc.poll() is None and not stopping:
            time.sleep(0.1)
        if stopping:
            stop_terminal(proc)
            return 0
        return proc.returncode
    if a.action == "list":
        r = _run_helper(cmd)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        return r.returncode
    if a.action == "delete":
        # The ttyd first (SIGTERM, then SIGKILL; by its pid file and start
        # time, never a reused pid): no new connection attaches while the
        # session ends. Its socket and pid file go with it.
        end_previous_ttyd(socket_path(a.user, a.session, a.socket_dir))
    if a.action == "stop":
        ok, msg = stop_tenant(a.user, helper=a.helper, via_sudo=a.sudo)
    else:
        ok, msg = kill_session(a.user, a.session, helper=a.helper, via_sudo=a.sudo)
    print(msg, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
