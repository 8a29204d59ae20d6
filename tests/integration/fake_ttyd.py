#!/usr/bin/env python3
"""A stand-in for ttyd (Debian 12 has no package), with ttyd 1.7's listening
semantics and wire protocol, so that the proxy's calls and connections can be
tested as they would run against the real one.

Listening (ttyd's server.c and libwebsockets' lws_socket_bind):
- `-i/--interface PATH` ending in ".sock" or ".socket" listens on a UNIX
  socket (the port is then unused); a path starting with "@" is an abstract
  socket. Whatever exists at PATH is unlinked first (lws does that, with no
  check of what it is); a PATH of 108 bytes or more is refused.
- `-U/--socket-owner USER:GROUP` (needs the colon; the group and the user
  must exist) chowns the socket to them and makes it 0660. Without -U the
  socket is still made 0660 (lws chowns to ttyd's own uid:gid, -1:-1, a
  no-op); with a uid or gid of 0 (root) neither happens (lws: `uid && gid`).
- otherwise TCP on `-p/--port` (default 7681; 0: any) at `-i` (an address
  here; ttyd also takes an interface name, which the stand-in refuses).
- on SIGTERM/SIGINT every connection's command gets ttyd's signal (SIGHUP
  unless -s says otherwise) and the socket file is removed.

Serving: GET / (index), GET /token ({"token": ""}), and the websocket /ws
(subprotocol "tty"): the client's first message is JSON
({"AuthToken": "", "columns": C, "rows": R}); then ttyd runs the command on a
new pseudo-terminal (session leader, the pty its controlling terminal,
TERM=xterm-256color added to ttyd's environment), sends '1' + title and
'2' + preferences, then '0' + output. The client sends '0' + input (ignored
unless -W/--writable), '1' + {"columns","rows"} (resize), '2'/'3' (pause,
resume). A closed connection sends the command's process group ttyd's
signal (a failure is ignored, and the pty stays open until the command
exits); the command's exit closes the websocket (1000 for status 0, else
1006). ttyd keeps serving
after a command ends: every connection gets a command of its own.

Options of ttyd that the stand-in does not implement are refused, so a test
cannot pass on an option that would change the real ttyd's behaviour."""
import base64
import fcntl
import grp
import hashlib
import json
import os
import pwd
import select
import signal
import socket
import struct
import sys
import termios
import threading

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
WITH_ARG = {"-p": "port", "--port": "port", "-i": "interface", "--interface": "interface",
            "-U": "socket_owner", "--socket-owner": "socket_owner", "-s": "signal", "--signal": "signal",
            "-T": "terminal_type", "--terminal-type": "terminal_type"}
FLAGS = {"-W": "writable", "--writable": "writable"}


def fail(msg, code=1):
    print(f"fake_ttyd: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse(argv):
    opts = {"port": "7681", "interface": "", "socket_owner": "", "signal": "SIGHUP",
            "terminal_type": "xterm-256color", "writable": False}
    args = list(argv)
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        value = None
        if opt.startswith("--") and "=" in opt:
            opt, value = opt.split("=", 1)
        if opt in FLAGS and value is None:
            opts[FLAGS[opt]] = True
        elif opt in WITH_ARG:
            if value is None:
                if not args:
                    fail(f"option {opt} needs an argument")
                value = args.pop(0)
            opts[WITH_ARG[opt]] = value
        else:
            fail(f"option {opt} is not implemented by the stand-in")
    if not args:
        fail("missing start command")
    sig = opts["signal"]
    opts["signal"] = int(sig) if sig.isdigit() else signal.Signals[sig if sig.startswith("SIG") else "SIG" + sig]
    return opts, args


def user_colon_group_to_ids(spec):
    """lws_plat_user_colon_group_to_ids: USER:GROUP, user 1..32 bytes."""
    if ":" not in spec:
        return None
    user, group = spec.split(":", 1)
    if not 1 <= len(user) <= 32:
        return None
    try:
        gid = grp.getgrnam(group).gr_gid
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return None
    return uid, gid


def listen(opts):
    """The listening socket and the path to remove at exit (None if none)."""
    iface = opts["interface"]
    if iface.endswith(".sock") or iface.endswith(".socket"):
        if len(iface.encode()) >= 108:
            fail(f'"{iface}" too long for UNIX domain socket')
        abstract = iface.startswith("@")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if abstract:
            address = "\0" + iface[1:]
        else:
            address = iface
            try:
                os.unlink(iface)
            except OSError:
                pass
        try:
            s.bind(address)
        except OSError as e:
            fail(f"ERROR on binding to {iface}: {e.strerror} (errno {e.errno})")
        uid, gid = -1, -1  # ttyd's own (-u/-g unset)
        if opts["socket_owner"]:
            ids = user_colon_group_to_ids(opts["socket_owner"])
            if ids is None:
                fail(f"Failed to translate {opts['socket_owner']}")
            uid, gid = ids
        if not abstract and uid != 0 and gid != 0:
            try:
                os.chown(iface, uid, gid)
            except OSError:
                fail(f"failed to set {iface} perms {uid}:{gid}")
            try:
                os.chmod(iface, 0o660)
            except OSError:
                fail(f"failed to set {iface} to 0600 mode")
        s.listen(16)
        print("Listening on port: 0", file=sys.stderr, flush=True)
        return s, None if abstract else iface
    try:
        port = int(opts["port"])
    except ValueError:
        fail(f"invalid port: {opts['port']}")
    host = iface or "0.0.0.0"
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        socket.inet_pton(family, host)
    except OSError:
        fail(f"interface names are not implemented by the stand-in: {iface}")
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError as e:
        fail(f"ERROR on binding to port {port}: {e.strerror} (errno {e.errno})")
    s.listen(16)
    print(f"Listening on port: {s.getsockname()[1]}", file=sys.stderr, flush=True)
    return s, None


class Connection:
    def __init__(self, server, conn):
        self.server, self.conn = server, conn
        self.send_lock = threading.Lock()
        self.pid = None
        self.master = -1
        self.closed = False

    # --- HTTP -----------------------------------------------------------------
    def read_request(self):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.conn.recv(4096)
            if not chunk or len(data) > 65536:
                return None, None, b""
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        return parts, headers, rest

    def respond(self, status, ctype, body):
        head = (f"HTTP/1.1 {status}\r\nServer: ttyd/1.7.3-stand-in\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        self.conn.sendall(head.encode() + body)

    def serve(self):
        try:
            parts, headers, rest = self.read_request()
            if parts is None or len(parts) != 3:
                return
            method, path = parts[0], parts[1].split("?", 1)[0]
            if path == "/ws" and headers.get("upgrade", "").lower() == "websocket":
                self.websocket(headers, rest)
            elif method != "GET":
                self.respond("405 Method Not Allowed", "text/plain", b"")
            elif path == "/":
                self.respond("200 OK", "text/html", b"<!DOCTYPE html><title>ttyd</title><p>ttyd stand-in</p>\n")
            elif path == "/token":
                self.respond("200 OK", "application/json;charset=utf-8", b'{"token": ""}')
            else:
                self.respond("404 Not Found", "text/plain", b"")
        except OSError:
            pass
        finally:
            self.hang_up()
            try:
                self.conn.close()
            except OSError:
                pass
            self.server.forget(self)

    # --- websocket ------------------------------------------------------------------
    def send_frame(self, opcode, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
        with self.send_lock:
            self.conn.sendall(head + payload)

    def recv_exact(self, n):
        while len(self.buf) < n:
            chunk = self.conn.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_message(self):
        """One whole message (fragments joined): (opcode, payload)."""
        message, first_opcode = b"", None
        while True:
            b0, b1 = self.recv_exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self.recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self.recv_exact(8))[0]
            mask = self.recv_exact(4) if b1 & 0x80 else None
            payload = self.recv_exact(n)
            if mask:
                payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
            if opcode >= 0x8:  # control frames may come between fragments
                if opcode == 0x9:
                    self.send_frame(0xA, payload)
                    continue
                if opcode == 0xA:
                    continue
                return opcode, payload
            if first_opcode is None:
                first_opcode = opcode
            message += payload
            if b0 & 0x80:
                return first_opcode, message

    def websocket(self, headers, rest):
        protocols = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",")]
        key = headers.get("sec-websocket-key", "")
        if "tty" not in protocols or not key:
            self.respond("400 Bad Request", "text/plain", b"")
            return
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.conn.sendall((f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: tty\r\n\r\n").encode())
        self.buf = rest
        try:
            while True:
                opcode, msg = self.read_message()
                if opcode == 0x8:
                    try:
                        self.send_frame(0x8, msg[:2])
                    except OSError:
                        pass
                    return
                if not msg:
                    continue
                command = msg[:1]
                if command == b"{":
                    if self.pid is None:
                        init = json.loads(msg.decode())
                        self.spawn(int(init.get("columns", 0)), int(init.get("rows", 0)))
                elif command == b"0":
                    if self.server.opts["writable"] and self.master >= 0:
                        os.write(self.master, msg[1:])
                elif command == b"1":
                    if self.master >= 0:
                        size = json.loads(msg[1:].decode())
                        self.set_size(self.master, int(size.get("columns", 0)), int(size.get("rows", 0)))
        except (EOFError, OSError, ValueError):
            return

    @staticmethod
    def set_size(fd, columns, rows):
        if columns > 0 and rows > 0:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def spawn(self, columns, rows):
        master, slave = os.openpty()
        self.set_size(slave, columns or 80, rows or 24)
        argv, env = self.server.command, {**os.environ, "TERM": self.server.opts["terminal_type"]}
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(slave, fd)
                os.closerange(3, 65536)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        os.close(slave)
        self.pid, self.master = pid, master
        title = f"{' '.join(argv)} ({socket.gethostname()})"
        self.send_frame(0x2, b"1" + title.encode())
        self.send_frame(0x2, b"2" + b"{}")
        threading.Thread(target=self.pump, daemon=True).start()

    def pump(self):
        """The command's output to the client; its exit closes the websocket."""
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            try:
                self.send_frame(0x2, b"0" + data)
            except OSError:
                break
        _, status = os.waitpid(self.pid, 0)
        code = 1000 if os.waitstatus_to_exitcode(status) == 0 else 1006
        try:
            self.send_frame(0x8, struct.pack("!H", code))
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def hang_up(self):
        """The connection is gone: ttyd sends its signal to the command's
        process group (pty.c pty_kill: uv_kill(-pid, sig)) and ignores a
        failure (EPERM when the command is a setuid program that is no
        longer the caller's to signal). The pty stays open until the command
        exits, or ttyd does."""
        if self.pid is not None and not self.closed:
            self.closed = True
            try:
                os.kill(-self.pid, self.server.opts["signal"])
            except OSError:
                pass


class Server:
    def __init__(self, opts, command):
        self.opts, self.command = opts, command
        self.lock = threading.Lock()
        self.connections = set()

    def forget(self, c):
        with self.lock:
            self.connections.discard(c)

    def run(self):
        sock, path = listen(self.opts)
        r, w = os.pipe()

        def on_signal(*_):
            os.write(w, b"x")

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        while True:
            ready, _, _ = select.select([sock, r], [], [])
            if r in ready:
                break
            conn, _ = sock.accept()
            c = Connection(self, conn)
            with self.lock:
                self.connections.add(c)
            threading.Thread(target=c.serve, daemon=True).start()
        # ttyd's exit: every connection closes (its command gets the signal),
        # then the socket file is removed (vhost destroy, server_free).
        with self.lock:
            for c in list(self.connections):
                c.hang_up()
        sock.close()
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass
        return 0


def main():
    opts, command = parse(sys.argv[1:])
    return Server(opts, command).run()


if __name__ == "__main__":
    sys.exit(main())
