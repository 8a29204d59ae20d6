"""Issue 9, item 5: ttyd off TCP. The example proxy (install/clihost/
proxy_example.py) serves each terminal with ttyd on a UNIX socket in a 0700
directory of the proxy's own under /run; a tenant cannot connect to it,
neither its own terminal's nor another tenant's: not from its session jail
(typed into its terminal, which the proxy drives through the socket), not
from a one-off jail, and not as a plain process on the host. Each refusal is
asserted by its errno (ENOENT inside: the jail's /run is a tmpfs of its own,
and its /proc has no host process; EACCES on the host: the directory, and
ttyd's /proc/PID/root, are closed to the tenant). Controls: the proxy user
connects and drives the terminal through the socket; the same probe connects
inside the jail to a socket the jail can reach; on the host it connects to
the ttyd socket once the directory is opened up, so the probe would catch a
reachable socket.

Issue 9 makes the jail's network a policy choice (`network = host|isolated`).
A path-bound UNIX socket does not depend on the network namespace, and this
must hold whatever the network: every jail test runs under each entry of
NETWORK_VARIANTS."""
import contextlib
import grp
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BASE_CONFIG, PROXY, REPO, TEST_CONFIG, new_session, spawn, start_as

sys.dont_write_bytecode = True  # leave no __pycache__ in install/clihost
sys.path.insert(0, os.path.join(REPO, "install", "clihost"))
import proxy_example as px  # noqa: E402

# The jail policies every jail test runs under. "replace": the
# config_variant replace argument (None: the base test config). "tcp_ttyd":
# what the probe gets from inside the jail on a ttyd started the old way, on
# 127.0.0.1:PORT (a control: the probe catches a reachable ttyd; with the
# host's network it is reachable, which is why ttyd left TCP). Today the
# jail shares the host's network. Issue 9's `network` key adds e.g.
#     {"id": "network-isolated", "replace": {"jail": {"network": "isolated"}}, "tcp_ttyd": "ECONNREFUSED"},
# and "replace": {"jail": {"network": "host"}} for network-host once the
# base config no longer means host.
NETWORK_VARIANTS = [
    # The default: the jail's own network namespace, where 127.0.0.1 is its
    # own loopback; the old TCP ttyd on the host's loopback is out of reach.
    {"id": "network-isolated", "replace": None, "tcp_ttyd": "ECONNREFUSED"},
    # The host's network: the TCP ttyd is reached (the attack), the
    # UNIX socket still is not.
    {"id": "network-host", "replace": {"jail": {"network": "host"}}, "tcp_ttyd": "ok"},
]

PROBE = textwrap.dedent("""\
    # Connects to each LABEL=PATH (a UNIX socket path, or ADDRESS:PORT for
    # TCP) and prints PROBE:LABEL:ok or PROBE:LABEL:ERRNO. "self=" first
    # binds a socket of its own in /tmp: the probe can connect.
    import errno, os, socket, sys, tempfile
    print("PROBE:uid:%d" % os.getuid(), flush=True)
    print("PROBE:sandbox:%s" % os.environ.get("TTYD_SANDBOX", "unset"), flush=True)
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        if label == "self":
            path = os.path.join(tempfile.mkdtemp(dir="/tmp"), "s.sock")
            server = socket.socket(socket.AF_UNIX)
            server.bind(path)
            server.listen(1)
        tcp = not path.startswith("/") and ":" in path
        s = socket.socket(socket.AF_INET if tcp else socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect((path.rsplit(":", 1)[0], int(path.rsplit(":", 1)[1])) if tcp else path)
            result = "ok"
        except OSError as e:
            result = errno.errorcode.get(e.errno, str(e.errno))
        print("PROBE:%s:%s" % (label, result), flush=True)
    print("PROBE:done:%d" % (6 * 7), flush=True)
""")

DRIVE = textwrap.dedent("""\
    # As the proxy: connect to ttyd's socket, wait for the tenant's prompt,
    # type one line, read until DONE is shown.
    import json, sys
    sys.dont_write_bytecode = True
    sys.path.insert(0, sys.argv[1])
    import proxy_example as px
    sock, tenant, line, done = sys.argv[2:6]
    status = px.http_get(sock, "/")[0]
    t = px.TerminalConnection(sock, columns=220, rows=50)
    res = {"http": status, "prompt": t.wait_for(tenant + "@", 30)}
    t.send_input(line + "\\r")
    res["done"] = t.wait_for(done, 30)
    res["output"] = bytes(t.output).decode(errors="replace")
    t.close()
    print(json.dumps(res))
""")


def probe_results(text):
    return dict(re.findall(r"PROBE:(\w+):(\w+)", text))


@pytest.fixture(params=NETWORK_VARIANTS, ids=[v["id"] for v in NETWORK_VARIANTS])
def policy(request, host):
    """The test config, for the test's duration, is the variant: the proxy
    calls the setuid helper, which reads only the compiled-in config."""
    replace = request.param["replace"]
    if replace is not None:
        with open(host.config_variant(replace=replace)) as f:
            host._write(TEST_CONFIG, f.read())
    try:
        yield request.param
    finally:
        host._write(TEST_CONFIG, BASE_CONFIG)


@pytest.fixture
def deployment(host):
    """The proxy's side, as install/clihost/README.md sets it up: the socket
    directory made the way tmpfiles.d makes it (0700, the proxy's), under a
    name of the tests' own (a real /run/clihost is left alone; the parent is
    the same /run), the stand-in ttyd, the probe and the proxy's driver."""
    s = new_session()
    work = os.path.join(host.prefix, "ttydsock-" + s)
    os.makedirs(work)
    os.chmod(work, 0o755)
    ttyd = os.path.join(work, "ttyd")
    shutil.copy(os.path.join(REPO, "tests", "integration", "fake_ttyd.py"), ttyd)
    os.chmod(ttyd, 0o755)
    drive = os.path.join(work, "drive.py")
    with open(drive, "w") as f:
        f.write(DRIVE)
    with open(os.path.join(work, "probe.py"), "w") as f:  # for the proxy (a tenant's home is closed to it)
        f.write(PROBE)
    sockdir = f"/run/ctj-clihost-{s}"
    proxy = pwd.getpwnam(PROXY)
    os.mkdir(sockdir, 0o700)
    os.chown(sockdir, proxy.pw_uid, proxy.pw_gid)
    d = Deployment(host, ttyd, drive, sockdir)
    d.proxy_probe = os.path.join(work, "probe.py")
    try:
        yield d
    finally:
        d.close()
        shutil.rmtree(sockdir, ignore_errors=True)


class Deployment:
    def __init__(self, host, ttyd, drive, sockdir):
        self.host, self.ttyd, self.drive, self.sockdir = host, ttyd, drive, sockdir
        self.procs, self.tenants = [], set()
        self.owner = f"{PROXY}:{grp.getgrgid(pwd.getpwnam(PROXY).pw_gid).gr_name}"

    def serve(self, tenant, session):
        """ttyd for TENANT's SESSION, started as the proxy with the example's
        exact argv and environment; returns (Popen, socket path)."""
        argv = px.terminal_argv(self.host.bin, tenant, session, ttyd=self.ttyd, socket_dir=self.sockdir,
                                owner=self.owner)
        p = start_as(PROXY, argv, env=dict(px.CHILD_ENV), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        self.tenants.add(tenant)
        path = px.socket_path(tenant, session, self.sockdir)
        assert px.wait_listening(p, path), f"ttyd for {tenant} does not listen on {path}"
        return p, path

    def serve_tcp(self, tenant, session):
        """ttyd the way clihost and these docs used to start it, on
        127.0.0.1 (a port of its choosing); returns (Popen, port)."""
        argv = [self.ttyd, "--port", "0", "--interface", "127.0.0.1", "--writable",
                self.host.bin, "run", "--user", tenant, "--session", session]
        p = start_as(PROXY, argv, env=dict(px.CHILD_ENV), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE, start_new_session=True, text=True)
        self.procs.append(p)
        self.tenants.add(tenant)
        line = p.stderr.readline()
        assert line.startswith("Listening on port: "), line
        return p, int(line.split(": ")[1])

    def drive_terminal(self, sock, tenant, line, done="PROBE:done:42"):
        """As the proxy user: type LINE into the terminal behind SOCK."""
        r = spawn(["/usr/bin/python3", self.drive, os.path.join(REPO, "install", "clihost"), sock, tenant, line, done],
                  user=PROXY, timeout=90)
        assert r.returncode == 0, r
        return json.loads(r.stdout)

    def install_probe(self, tenant):
        """The probe in the tenant's home (visible in its jails); its path."""
        pw = pwd.getpwnam(tenant)
        path = os.path.join(pw.pw_dir, "ctj-socket-probe.py")
        with open(path, "w") as f:
            f.write(PROBE)
        os.chown(path, pw.pw_uid, pw.pw_gid)
        return path

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for tenant in self.tenants:
            self.host.run_root([self.host.bin, "stop", "--user", tenant], timeout=30)


def test_the_tenant_cannot_reach_a_ttyd_socket_from_its_session_jail(host, alice, bob, policy, deployment):
    a_proc, a_sock = deployment.serve(alice, new_session())
    _, b_sock = deployment.serve(bob, new_session())
    probe = deployment.install_probe(bob)
    line = (f"python3 {probe} alice={a_sock} own={b_sock} alice_proc=/proc/{a_proc.pid}/root{a_sock} "
            "self= tmux=$HOME/.cache/tmux/clihost.sock")
    res = deployment.drive_terminal(b_sock, bob, line)
    # Control: the proxy user reached bob's terminal through the socket and
    # drove it; what it typed ran as bob in his session jail.
    assert res["http"] == 200 and res["prompt"] and res["done"], res
    got = probe_results(res["output"])
    assert got["uid"] == str(pwd.getpwnam(bob).pw_uid) and got["sandbox"] == "true", res["output"]
    # Controls: inside the jail the probe connects to a socket it may reach.
    assert got["self"] == "ok" and got["tmux"] == "ok", res["output"]
    # The jail's /run is a tmpfs of its own, its /proc shows no host process.
    assert (got["alice"], got["own"], got["alice_proc"]) == ("ENOENT", "ENOENT", "ENOENT"), res["output"]


def test_the_tenant_cannot_reach_a_ttyd_socket_from_a_one_off_jail(host, alice, bob, policy, deployment):
    a_proc, a_sock = deployment.serve(alice, new_session())
    _, tcp_port = deployment.serve_tcp(alice, new_session())
    probe = deployment.install_probe(bob)
    r = spawn([host.bin, "run", "--user", bob, "--session", new_session(), "--",
               "/usr/bin/python3", probe, f"alice={a_sock}", f"alice_proc=/proc/{a_proc.pid}/root{a_sock}",
               f"dir={deployment.sockdir}", "self=", f"tcp=127.0.0.1:{tcp_port}"], user=PROXY, timeout=60)
    assert r.returncode == 0, r
    got = probe_results(r.stdout)
    assert got["uid"] == str(pwd.getpwnam(bob).pw_uid) and got["sandbox"] == "true", r
    assert got["self"] == "ok", r  # control: the probe connects where it may
    assert got["tcp"] == policy["tcp_ttyd"], r  # control: alice's ttyd on TCP, as it used to be served
    assert (got["alice"], got["alice_proc"], got["dir"]) == ("ENOENT", "ENOENT", "ENOENT"), r
    assert got["done"] == "42", r


def test_the_tenant_cannot_reach_a_ttyd_socket_on_the_host(host, alice, bob, deployment):
    """No jail at all: bob as a plain process on the host (as if he had a
    shell there) meets the proxy's 0700 directory."""
    a_proc, a_sock = deployment.serve(alice, new_session())
    probe = deployment.install_probe(bob)
    targets = [f"alice={a_sock}", f"alice_proc=/proc/{a_proc.pid}/root{a_sock}"]
    r = spawn(["/usr/bin/python3", probe, *targets], user=bob)
    assert r.returncode == 0, r
    got = probe_results(r.stdout)
    assert got["uid"] == str(pwd.getpwnam(bob).pw_uid) and got["sandbox"] == "unset", r
    assert (got["alice"], got["alice_proc"]) == ("EACCES", "EACCES"), r
    # Control: the proxy user reaches the same socket with the same probe.
    r = spawn(["/usr/bin/python3", deployment.proxy_probe, *targets], user=PROXY)
    assert probe_results(r.stdout)["alice"] == "ok", r
    # Control: with the directory opened to others, bob's probe gets through
    # (ttyd's socket itself is 0660; opened too, as a careless -U would leave it).
    with opened(deployment.sockdir, 0o711), opened(a_sock, 0o666):
        r = spawn(["/usr/bin/python3", probe, f"alice={a_sock}"], user=bob)
    assert probe_results(r.stdout)["alice"] == "ok", r


def test_the_socket_is_the_proxys_and_goes_away_with_the_terminal(host, alice, deployment):
    s = new_session()
    p, sock = deployment.serve(alice, s)
    st = os.lstat(sock)
    proxy = pwd.getpwnam(PROXY)
    assert (st.st_mode & 0o170000, st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0o140000, proxy.pw_uid,
                                                                                    proxy.pw_gid, 0o660)
    dst = os.lstat(deployment.sockdir)
    assert (dst.st_uid, dst.st_mode & 0o7777) == (proxy.pw_uid, 0o700)
    # ttyd listens on no TCP port: no socket of the ttyd process is inet.
    def link(fd):
        try:
            return os.readlink(f"/proc/{p.pid}/fd/{fd}")
        except FileNotFoundError:  # closed since the listing (ttyd's own start-up)
            return ""
    inodes = {link(fd) for fd in os.listdir(f"/proc/{p.pid}/fd")} - {""}
    tcp = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            tcp |= {f"socket:[{line.split()[9]}]" for line in f.readlines()[1:]}
    assert not inodes & tcp, inodes & tcp
    assert any(i.startswith("socket:[") for i in inodes)  # control: it has sockets, the UNIX one
    # DELETE: ttyd stopped, its socket removed (also after a SIGKILL, which
    # leaves it behind), the session ended.
    p.kill()
    p.wait()
    assert os.path.lexists(sock)
    res = px.delete_terminal(p, alice, s, helper=host.bin, socket_dir=deployment.sockdir)
    assert not os.path.lexists(sock)
    # No websocket ever connected, so no session jail was started.
    assert res == (False, f"refused by policy: clihost-jail: tenant {alice} has no session jail"), res


@contextlib.contextmanager
def opened(path, mode):
    old = os.lstat(path).st_mode & 0o7777
    os.chmod(path, mode)
    try:
        yield
    finally:
        os.chmod(path, old)
