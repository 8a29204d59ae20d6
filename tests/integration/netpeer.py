#!/usr/bin/env python3
"""The network peers of test_network.py and tests/bench/netbench.py: the only
hosts those tests talk to are the ones made here (stdlib only).

As a module (root):
  Internet      a network namespace standing in for the internet: a veth pair
                to the host (198.51.100.0/24 and 2001:db8:c7::/64, documentation
                ranges no interface or route of these machines uses; never
                192.0.2.0/24, the real uplink), running `serve` in it.
  Listeners     `listen` started as some user (a tenant, root) on the host.

As a program:
  serve DIR     in the test "internet": a TCP banner server, a UDP echo, a
                bulk sender and a DNS resolver for NAME (A and AAAA), on the
                addresses given; writes DIR/serve.json (its ports) when ready.
  listen OUT SPEC...
                binds each SPEC (tcp:ADDR:PORT, udp:ADDR:PORT, abstract:NAME, unix:PATH;
                port 0 = any), answers every TCP connection with the token
                "<TOKEN>" and every UDP datagram with it, writes the bound
                ports to OUT (JSON) once every socket is bound, then serves
                until killed. TOKEN is the env CTJ_TOKEN.
  dns ADDR PORT NAME A AAAA
                only a DNS resolver (UDP and TCP) on ADDR:PORT.
  probe IN OUT  (run inside a jail) reads a JSON list of probes from IN and
                writes one result per probe to OUT: "ok:<what came back>" or
                "err:<errno name>" or "timeout". Kinds: tcp, udp, abstract
                (connect and read the answer), resolve (getaddrinfo), dns
                (one query to a given server), bind (hold a port), read (a
                file), netns; for the benchmark bulk, bulk_gated and
                connect (timings).
"""
import errno
import json
import os
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time

NETNS = "ctj-inet"
HOST_IF, PEER_IF = "ctj-veth0", "ctj-veth1"
HOST_V4, PEER_V4 = "198.51.100.1", "198.51.100.2"
HOST_V6, PEER_V6 = "2001:db8:c7::1", "2001:db8:c7::2"
TEST_NAME = "peer.ctj-test.example"     # what the test resolver answers
TCP_PORT, UDP_PORT, BULK_PORT, DNS_PORT = 7001, 7002, 7003, 53
PEER_TOKEN = "CTJ-PEER-7f3a"


# ---------------------------------------------------------------- DNS wire --

def _qname(data, off):
    labels = []
    while True:
        n = data[off]
        off += 1
        if n == 0:
            return ".".join(labels), off
        if n & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(data[off:off + n].decode("ascii", "replace"))
        off += n


def dns_answer(query, name, a, aaaa):
    """The response to one DNS query: A/AAAA for `name`, NXDOMAIN for any
    other name (so nothing resolves by accident)."""
    qid, flags, qd = struct.unpack("!HHH", query[:6])
    qn, off = _qname(query, 12)
    qtype, qclass = struct.unpack("!HH", query[off:off + 4])
    question = query[12:off + 4]
    answers = b""
    rcode = 0
    if qn.rstrip(".").lower() == name.lower():
        if qtype == 1 and a:
            answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 5, 4) + socket.inet_pton(socket.AF_INET, a)
        elif qtype == 28 and aaaa:
            answers = b"\xc0\x0c" + struct.pack("!HHIH", 28, 1, 5, 16) + socket.inet_pton(socket.AF_INET6, aaaa)
    else:
        rcode = 3
    an = 1 if answers else 0
    rflags = 0x8000 | (flags & 0x0100) | 0x0400 | 0x0080 | rcode
    return struct.pack("!HHHHHH", qid, rflags, 1, an, 0, 0) + question + answers


def dns_query(qid, name, qtype):
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack("!HH", qtype, 1)


def parse_a_answers(resp):
    """The addresses of the A/AAAA records of a response (answer section)."""
    qd, an = struct.unpack("!HH", resp[4:8])
    off = 12
    for _ in range(qd):
        _, off = _qname(resp, off)
        off += 4
    out = []
    for _ in range(an):
        if resp[off] & 0xC0:
            off += 2
        else:
            _, off = _qname(resp, off)
        rtype, _, _, rdlen = struct.unpack("!HHIH", resp[off:off + 10])
        off += 10
        rdata = resp[off:off + rdlen]
        off += rdlen
        if rtype == 1:
            out.append(socket.inet_ntop(socket.AF_INET, rdata))
        elif rtype == 28:
            out.append(socket.inet_ntop(socket.AF_INET6, rdata))
    return out


# ------------------------------------------------------------------ servers --

def _family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def _serve_tcp(sock, handler):
    def loop():
        while True:
            try:
                c, _ = sock.accept()
            except OSError:
                return
            threading.Thread(target=handler, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def _banner(token):
    def handle(c):
        with c:
            try:
                c.sendall(token.encode() + b"\n")
                c.settimeout(5)
                data = c.recv(4096)
                if data:
                    c.sendall(b"echo:" + data)
            except OSError:
                pass
    return handle


def _bulk(c):
    """Reads an 8-byte big-endian count, sends that many bytes, closes."""
    with c:
        try:
            want = b""
            while len(want) < 8:
                more = c.recv(8 - len(want))
                if not more:
                    return
                want += more
            left = struct.unpack("!Q", want)[0]
            chunk = b"\xa5" * (1 << 20)
            while left > 0:
                n = c.send(chunk[:min(left, len(chunk))])
                left -= n
        except OSError:
            pass


def _serve_udp(sock, reply):
    def loop():
        while True:
            try:
                data, peer = sock.recvfrom(65535)
                out = reply(data)
                if out is not None:
                    sock.sendto(out, peer)
            except OSError:
                continue
    threading.Thread(target=loop, daemon=True).start()


def _dns_tcp(name, a, aaaa):
    def handle(c):
        with c:
            try:
                c.settimeout(5)
                n = struct.unpack("!H", c.recv(2))[0]
                q = b""
                while len(q) < n:
                    q += c.recv(n - len(q))
                r = dns_answer(q, name, a, aaaa)
                c.sendall(struct.pack("!H", len(r)) + r)
            except (OSError, ValueError, struct.error):
                pass
    return handle


def _bound(kind, addr, port):
    fam = _family(addr)
    s = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    if kind == "tcp":
        s.listen(64)
    return s


def run_dns(addrs, port, name, a, aaaa):
    for addr in addrs:
        _serve_udp(_bound("udp", addr, port), lambda q: _safe_answer(q, name, a, aaaa))
        _serve_tcp(_bound("tcp", addr, port), _dns_tcp(name, a, aaaa))


def _safe_answer(q, name, a, aaaa):
    try:
        return dns_answer(q, name, a, aaaa)
    except (ValueError, IndexError, struct.error):
        return None


def cmd_serve(out_dir):
    for addr in (PEER_V4, PEER_V6):
        _serve_tcp(_bound("tcp", addr, TCP_PORT), _banner(PEER_TOKEN))
        _serve_tcp(_bound("tcp", addr, BULK_PORT), _bulk)
        _serve_udp(_bound("udp", addr, UDP_PORT), lambda d: PEER_TOKEN.encode() + b":" + d)
    run_dns([PEER_V4, PEER_V6], DNS_PORT, TEST_NAME, PEER_V4, PEER_V6)
    _ready(os.path.join(out_dir, "serve.json"), {"tcp": TCP_PORT, "udp": UDP_PORT, "bulk": BULK_PORT})
    while True:
        time.sleep(3600)


def _ready(path, what):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(what, f)
    os.rename(tmp, path)


def cmd_listen(out, specs):
    token = os.environ.get("CTJ_TOKEN", "CTJ-LISTENER")
    ports = []
    for spec in specs:
        kind, rest = spec.split(":", 1)
        if kind in ("abstract", "unix"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if kind == "unix" and os.path.exists(rest):
                os.unlink(rest)
            s.bind("\0" + rest if kind == "abstract" else rest)
            s.listen(16)
            _serve_tcp(s, _banner(token))
            ports.append(rest)
            continue
        addr, port = rest.rsplit(":", 1)
        s = _bound(kind, addr.strip("[]"), int(port))
        ports.append(s.getsockname()[1])
        if kind == "tcp":
            _serve_tcp(s, _banner(token))
        else:
            _serve_udp(s, lambda d: token.encode() + b":" + d)
    _ready(out, ports)
    while True:
        time.sleep(3600)


def cmd_dns(addr, port, name, a, aaaa):
    run_dns([addr], int(port), name, a, aaaa)
    print("READY", flush=True)
    while True:
        time.sleep(3600)


# ------------------------------------------------------------------- probes --

def _err(e):
    if isinstance(e, socket.timeout):
        return "timeout"
    return "err:" + errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else "err:" + repr(e)


def _v6_route_wait(addr, deadline):
    """IPv6 inside comes from slirp's router advertisement a moment after the
    jail starts: an IPv6 probe waits for it (ENETUNREACH) up to its deadline."""
    return ":" in addr and time.time() < deadline


def _receive(s, nbytes, t0, w0):
    """Asks the bulk sender on `s` for `nbytes` and reads them into one
    buffer (a fresh 1 MiB object per recv costs the client more CPU than
    slirp4netns spends). Returns the bytes got (fewer: the sender closed)
    and when each sixteenth had come, as w0 + the time since t0."""
    s.sendall(struct.pack("!Q", nbytes))
    buf = memoryview(bytearray(1 << 20))
    got, marks, step = 0, [], nbytes / 16
    while got < nbytes:
        n = s.recv_into(buf)
        if n == 0:
            break
        got += n
        while len(marks) < 16 and got >= step * (len(marks) + 1):
            marks.append(w0 + time.perf_counter() - t0)
    return got, marks


def probe_one(p):
    kind = p["kind"]
    timeout = p.get("timeout", 3.0)
    deadline = time.time() + p.get("v6_wait", 10.0)
    try:
        if kind == "tcp":
            while True:
                s = socket.socket(_family(p["host"]), socket.SOCK_STREAM)
                s.settimeout(timeout)
                try:
                    s.connect((p["host"], p["port"]))
                    break
                except OSError as e:
                    s.close()
                    if e.errno == errno.ENETUNREACH and _v6_route_wait(p["host"], deadline):
                        time.sleep(0.2)
                        continue
                    raise
            with s:
                return "ok:" + s.recv(4096).decode(errors="replace").strip()
        if kind == "udp":
            while True:
                s = socket.socket(_family(p["host"]), socket.SOCK_DGRAM)
                s.settimeout(timeout)
                try:
                    s.connect((p["host"], p["port"]))
                    s.send(b"ping")
                    break
                except OSError as e:
                    s.close()
                    if e.errno == errno.ENETUNREACH and _v6_route_wait(p["host"], deadline):
                        time.sleep(0.2)
                        continue
                    raise
            with s:
                return "ok:" + s.recv(4096).decode(errors="replace")
        if kind == "abstract":
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect("\0" + p["name"])
                return "ok:" + s.recv(4096).decode(errors="replace").strip()
        if kind == "resolve":   # the system resolver: /etc/resolv.conf, nsswitch
            infos = socket.getaddrinfo(p["name"], None, type=socket.SOCK_STREAM)
            return "ok:" + ",".join(sorted({i[4][0] for i in infos}))
        if kind == "dns":       # one UDP query to a given server
            with socket.socket(_family(p["server"]), socket.SOCK_DGRAM) as s:
                s.settimeout(timeout)
                s.connect((p["server"], p.get("port", 53)))
                s.send(dns_query(0x5a5a, p["name"], p.get("qtype", 1)))
                return "ok:" + ",".join(parse_a_answers(s.recv(4096)))
        if kind == "bind":      # binds and holds: HOLD file written, waits for RELEASE
            s = socket.socket(_family(p["host"]), socket.SOCK_STREAM)
            s.bind((p["host"], p["port"]))
            s.listen(1)
            open(p["hold"], "w").close()
            end = time.time() + p.get("max", 20)
            while not os.path.exists(p["release"]) and time.time() < end:
                time.sleep(0.05)
            s.close()
            return "ok:bound"
        if kind == "bulk":      # receives p["bytes"] from the bulk sender: "ok:<seconds>"
            with socket.create_connection((p["host"], p["port"]), timeout=30) as s:
                t0 = time.perf_counter()
                got, _ = _receive(s, p["bytes"], t0, 0.0)
                if got < p["bytes"]:
                    return f"err:short:{got}"
                return f"ok:{time.perf_counter() - t0:.6f}"
        if kind == "bulk_gated":    # bulk, started by a gate: "ok:<seconds>,<start>,<t1>,..,<t16>"
            # Writes READY, then waits on the FIFO GATE until the bench writes
            # a byte to it (every client of a round is released at once); times
            # from its connect to the last byte. start and t1..t16 (when each
            # sixteenth of the bytes had come, t16 the end) are wall-clock: the
            # bench compares the clients over the time they all ran.
            _ready(p["ready"], "ready")
            fd = os.open(p["gate"], os.O_RDONLY)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
            w0, t0 = time.time(), time.perf_counter()
            with socket.create_connection((p["host"], p["port"]), timeout=60) as s:
                got, marks = _receive(s, p["bytes"], t0, w0)
                if got < p["bytes"]:
                    return f"err:short:{got}"
                took = time.perf_counter() - t0
                return f"ok:{took:.6f},{w0:.6f}," + ",".join(f"{m:.6f}" for m in marks)
        if kind == "connect":   # n TCP connects (to the first banner byte): "ok:<s>,<s>,..."
            out = []
            for _ in range(p["n"]):
                t0 = time.perf_counter()
                with socket.create_connection((p["host"], p["port"]), timeout=10) as s:
                    s.recv(1)
                    out.append(time.perf_counter() - t0)
            return "ok:" + ",".join(f"{x:.6f}" for x in out)
        if kind == "read":
            with open(p["path"]) as f:
                return "ok:" + f.read()
        if kind == "netns":
            return "ok:" + os.readlink("/proc/self/ns/net")
        return "err:unknown probe " + kind
    except socket.gaierror as e:
        return "err:gai:" + str(e.args[0])
    except OSError as e:
        return _err(e)


def cmd_probe(inp, out):
    with open(inp) as f:
        probes = json.load(f)
    results = [probe_one(p) for p in probes]
    _ready(out, results)


# ---------------------------------------------------------- the test internet --

def _run(*argv, check=True):
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


class Internet:
    """The test "internet": netns NETNS with the peer end of a veth pair and
    `serve` running in it. start() tears down any leftover of an earlier run
    first; stop() removes everything, whatever state start() reached."""

    def __init__(self, work_dir):
        self.work = work_dir
        self.proc = None

    def start(self):
        self.stop()
        _run("ip", "netns", "add", NETNS)
        _run("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", PEER_IF, "netns", NETNS)
        _run("ip", "addr", "add", f"{HOST_V4}/24", "dev", HOST_IF)
        _run("ip", "-6", "addr", "add", f"{HOST_V6}/64", "dev", HOST_IF, "nodad")
        _run("ip", "link", "set", HOST_IF, "up")
        for argv in (["ip", "addr", "add", f"{PEER_V4}/24", "dev", PEER_IF],
                     ["ip", "-6", "addr", "add", f"{PEER_V6}/64", "dev", PEER_IF, "nodad"],
                     ["ip", "link", "set", PEER_IF, "up"], ["ip", "link", "set", "lo", "up"],
                     ["ip", "route", "add", "default", "via", HOST_V4],
                     ["ip", "-6", "route", "add", "default", "via", HOST_V6]):
            _run("ip", "netns", "exec", NETNS, *argv)
        ready = os.path.join(self.work, "serve.json")
        if os.path.exists(ready):
            os.unlink(ready)
        self.proc = subprocess.Popen(["ip", "netns", "exec", NETNS, sys.executable, os.path.abspath(__file__),
                                      "serve", self.work], stdin=subprocess.DEVNULL)
        deadline = time.time() + 10
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("the test internet's servers did not start")
            time.sleep(0.05)
        return self

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
        _run("ip", "link", "del", HOST_IF, check=False)
        _run("ip", "netns", "del", NETNS, check=False)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        cmd_serve(*args)
    elif cmd == "listen":
        cmd_listen(args[0], args[1:])
    elif cmd == "dns":
        cmd_dns(*args)
    elif cmd == "probe":
        cmd_probe(*args)
    else:
        sys.exit("netpeer: unknown command " + cmd)
