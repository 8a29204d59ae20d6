"""network = isolated (issue 9): a tenant's jail reaches the internet, and
nothing of the host or of other tenants.

The only network peers are the ones made here (netpeer.py): the test
"internet" is a network namespace behind a veth pair (198.51.100.0/24,
2001:db8:c7::/64) running a TCP banner server, a UDP echo and a DNS resolver
for a test name; the host-side targets are listeners of tenant B and of root
on the host's loopback, on 0.0.0.0 (reached through the host's own veth
address), abstract unix sockets, and B's session jail's own listener.

Every unreachable case is probed in one batch from A's jail, together with
the test internet (so "unreachable" is never "this jail has no network at
all"), and the same batch from A's jail with `network = host` must reach
every one of them: that is the positive control showing each probe would
see the hole.
"""
import grp
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import uuid

import pytest

import netpeer
from conftest import (PROXY, REPO, RUNTIME_DIR, TENANTS, attach_clients, front_and_supervisor_lines, install_faults_bin,
                      new_session, pid_lines, pids, prepared_oneoff_jails, proc_status, routes_closed, start_as,
                      wait_until)
from ptyutil import PtyProcess

NET_GROUP = "clihost-jail-net"
RULES = os.path.join(REPO, "install", "nftables", "clihost-jail.nft")
RULES_TABLE = ("inet", "clihost_jail")
TUN = "/dev/net/tun"
SLIRP = "/usr/bin/slirp4netns"
PROBE = "ctj-netpeer.py"        # netpeer.py, copied into each tenant's home

# The refusals, exactly as the helper words them (helper/proc/net.cpp).
MISSING_GROUP = (f"network = isolated needs the group {NET_GROUP} "
                 "(install/quickstart.sh and the .deb create it)")
MISSING_RULES_PREFIX = (f"network = isolated, but the host-address rules are not in force: the group {NET_GROUP} "
                        "reached ")
MISSING_RULES_SUFFIX = " (load /usr/share/clihost-jail/clihost-jail.nft; install/quickstart.sh does)"
TUN_DENIED = ("/dev/net/tun cannot be opened by the jails' network process (permission denied): "
              "make it mode 0666, as Debian's udev does")
# check's network section (helper/verbs/check.cpp): "KEY: VALUE" lines.
CHECK_HOST = ("network: host (WARNING: the jails share the host's network: services on its loopback and addresses, "
              "other tenants' listeners and abstract sockets are reachable from them, and they can take "
              "the host's ports)")


def check_isolated_ok(tenant):
    return ["network: isolated (a namespace of each jail's own, outbound only through slirp4netns)",
            f"slirp4netns: {SLIRP}: ok (root-owned, not writable by group/others)",
            f"network group: {NET_GROUP}: ok (gid {grp.getgrnam(NET_GROUP).gr_gid})",
            "/dev/net/tun: ok (the jails' network process can open it)",
            f"host-address rules: ok (the group {NET_GROUP} is refused the host's loopback and own addresses)",
            f"network trial: ok (/bin/true ran in an isolated jail with slirp4netns as {tenant})"]


def sh(*argv, check=True):
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


def table_loaded():
    return sh("nft", "list", "table", *RULES_TABLE, check=False).returncode == 0


def load_rules():
    sh("nft", "-f", RULES)
    assert table_loaded()


# ---------------------------------------------------------------- fixtures --

class Net:
    """What the module's tests share: the test internet, the listeners of B
    and root on the host, configs for both network modes."""

    def __init__(self, host, work):
        self.host = host
        self.work = work
        self.isolated = host.config_variant(replace={"jail": {"network": "isolated"}})
        self.hostnet = host.config_variant(replace={"jail": {"network": "host"}})
        self.procs = []

    def config(self, mode):
        return {"isolated": self.isolated, "host": self.hostnet}[mode]

    def listen(self, user, specs, token):
        """netpeer listen as `user` (None: root); returns the bound ports."""
        out_dir = self.host.home(user) if user else self.work
        out = os.path.join(out_dir, f"ctj-listen-{uuid.uuid4().hex[:8]}.json")
        p = start_as(user, ["/usr/bin/python3", os.path.join(self.work, "netpeer.py"), "listen", out, *specs],
                     env={"PATH": "/usr/bin:/bin", "CTJ_TOKEN": token}, stdin=subprocess.DEVNULL)
        self.procs.append(p)
        assert wait_until(lambda: os.path.exists(out) or p.poll() is not None, 10), specs
        assert p.poll() is None, f"listener {specs} ended with {p.returncode}"
        with open(out) as f:
            ports = json.load(f)
        os.unlink(out)
        return ports

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def net(host):
    """The host set up the way a normal Debian host with clihost-jail is (the
    group, the rules loaded, /dev/net/tun 0666 as udev makes it), the test
    internet, and the listeners. Whatever this changed is put back."""
    made_group = False
    if not _group_exists():
        sh("groupadd", "--system", NET_GROUP)
        made_group = True
    loaded_rules = False
    if not table_loaded():
        load_rules()
        loaded_rules = True
    tun_mode = stat.S_IMODE(os.stat(TUN).st_mode)
    os.chmod(TUN, 0o666)
    work = tempfile.mkdtemp(prefix="ctj-net-")
    os.chmod(work, 0o755)
    shutil.copy(os.path.join(os.path.dirname(__file__), "netpeer.py"), os.path.join(work, "netpeer.py"))
    os.chmod(os.path.join(work, "netpeer.py"), 0o644)
    internet = netpeer.Internet(work)
    n = Net(host, work)
    try:
        internet.start()
        for tenant in TENANTS:
            dst = os.path.join(host.home(tenant), PROBE)
            shutil.copy(os.path.join(work, "netpeer.py"), dst)
            pw = pwd.getpwnam(tenant)
            os.chown(dst, pw.pw_uid, pw.pw_gid)
        yield n
    finally:
        n.stop()
        host.stop_all()
        internet.stop()
        shutil.rmtree(work, ignore_errors=True)
        os.chmod(TUN, tun_mode)
        if loaded_rules:
            sh("nft", "delete", "table", *RULES_TABLE, check=False)
        if made_group:
            sh("groupdel", NET_GROUP, check=False)


def _group_exists():
    try:
        grp.getgrnam(NET_GROUP)
        return True
    except KeyError:
        return False


@pytest.fixture(scope="module")
def targets(net, host):
    """B's and root's listeners on the host, and what reaching each looks like."""
    bob = TENANTS[1]
    tok_b, tok_r = "CTJ-BOB-" + uuid.uuid4().hex[:8], "CTJ-ROOT-" + uuid.uuid4().hex[:8]
    abs_b, abs_r = "ctj-bob-" + uuid.uuid4().hex[:8], "ctj-root-" + uuid.uuid4().hex[:8]
    b = net.listen(bob, ["tcp:127.0.0.1:0", "tcp:[::1]:0", "udp:127.0.0.1:0", f"abstract:{abs_b}",
                         f"unix:{host.home(bob)}/ctj-bob.sock"], tok_b)
    r = net.listen(None, ["tcp:0.0.0.0:0", "tcp:[::]:0", f"abstract:{abs_r}", "udp:0.0.0.0:0"], tok_r)
    return {
        "tokens": (tok_b, tok_r),
        "abstract": (abs_b, abs_r),
        "bob_path": f"{host.home(bob)}/ctj-bob.sock",
        "bob_tcp4": b[0],
        "probes": {
            "B tcp 127.0.0.1": ({"kind": "tcp", "host": "127.0.0.1", "port": b[0]}, tok_b),
            "B tcp ::1": ({"kind": "tcp", "host": "::1", "port": b[1]}, tok_b),
            "B udp 127.0.0.1": ({"kind": "udp", "host": "127.0.0.1", "port": b[2]}, tok_b + ":ping"),
            "B abstract": ({"kind": "abstract", "name": abs_b}, tok_b),
            "root abstract": ({"kind": "abstract", "name": abs_r}, tok_r),
            "root tcp 0.0.0.0 via the host's veth address":
                ({"kind": "tcp", "host": netpeer.HOST_V4, "port": r[0]}, tok_r),
            "root tcp [::] via the host's veth address":
                ({"kind": "tcp", "host": netpeer.HOST_V6, "port": r[1]}, tok_r),
            "root udp 0.0.0.0 via the host's veth address":
                ({"kind": "udp", "host": netpeer.HOST_V4, "port": r[3]}, tok_r + ":ping"),
        },
    }


# ------------------------------------------------------------------ probing --

INTERNET = {
    "internet tcp v4": ({"kind": "tcp", "host": netpeer.PEER_V4, "port": netpeer.TCP_PORT}, netpeer.PEER_TOKEN),
    "internet tcp v6": ({"kind": "tcp", "host": netpeer.PEER_V6, "port": netpeer.TCP_PORT}, netpeer.PEER_TOKEN),
    "internet udp v4": ({"kind": "udp", "host": netpeer.PEER_V4, "port": netpeer.UDP_PORT},
                        netpeer.PEER_TOKEN + ":ping"),
    "internet udp v6": ({"kind": "udp", "host": netpeer.PEER_V6, "port": netpeer.UDP_PORT},
                        netpeer.PEER_TOKEN + ":ping"),
}


def probe_files(host, tenant):
    tag = uuid.uuid4().hex[:8]
    home = host.home(tenant)
    return os.path.join(home, f"ctj-probe-{tag}.in"), os.path.join(home, f"ctj-probe-{tag}.out")


def write_probes(host, tenant, probes):
    inp, out = probe_files(host, tenant)
    with open(inp, "w") as f:
        json.dump(probes, f)
    pw = pwd.getpwnam(tenant)
    os.chown(inp, pw.pw_uid, pw.pw_gid)
    return inp, out


def read_results(inp, out):
    try:
        with open(out) as f:
            return json.load(f)
    finally:
        for p in (inp, out):
            if os.path.exists(p):
                os.unlink(p)


def probe_argv(host, tenant, inp, out):
    return ["/usr/bin/python3", os.path.join(host.home(tenant), PROBE), "probe", inp, out]


def oneoff(host, tenant, probes, config, user=None, wrap=(), timeout=90):
    """The probes, run in a one-off jail of `tenant` (`run -- python3 ...`)
    started by root with `config` (user=PROXY: by the proxy, with the
    installed default config). wrap: argv put in front (a private mount
    namespace). Returns (results, Ran)."""
    inp, out = write_probes(host, tenant, probes)
    argv = [*wrap, host.bin, "run", "--user", tenant, "--session", new_session(), "--",
            *probe_argv(host, tenant, inp, out)]
    if user:
        r = host.run_as(user, argv, timeout=timeout)
    else:
        r = host.run_root(argv, config=config, timeout=timeout)
    assert r.returncode == 0, r
    return read_results(inp, out), r


def batch(named):
    """{name: (probe, expected)} -> names, probes, expected, in one order."""
    names = list(named)
    return names, [named[n][0] for n in names], [named[n][1] for n in names]


def slirps(tenant):
    """Live slirp4netns processes running as the tenant's uid."""
    uid = pwd.getpwnam(tenant).pw_uid
    return [p for p in pids(uid=uid, exe=SLIRP, live=True)]


def host_netns():
    return os.readlink("/proc/self/ns/net")


# -------------------------------------------------------------------- tests --

def test_the_default_is_isolated_and_the_internet_is_reachable(host, alice, net):
    """Through the proxy with the installed default config (no network key):
    the jail has a network namespace of its own, tap0 with slirp's address,
    and reaches the test host over TCP and UDP, IPv4 and IPv6. The IPv4
    probes run first and never retry: the command starts only once the
    network is up."""
    names, probes, want = batch(INTERNET)
    probes = [probes[0], probes[2], *probes,
              {"kind": "netns"}, {"kind": "read", "path": "/proc/net/if_inet6"},
              {"kind": "read", "path": "/proc/net/route"}, {"kind": "read", "path": "/etc/resolv.conf"},
              {"kind": "read", "path": "/proc/net/fib_trie"}]
    got, _ = oneoff(host, alice, probes, None, user=PROXY)
    assert got[0] == "ok:" + want[0] and got[1] == "ok:" + want[2], got
    assert got[2:6] == ["ok:" + w for w in want], list(zip(names, got[2:6]))
    netns, if6, route, resolv, fib = got[6:]
    assert netns != "ok:" + host_netns()
    routes = [l.split()[:3] for l in route.splitlines()[1:]]
    assert sorted(routes) == [["tap0", "00000000", "0202000A"], ["tap0", "0002000A", "00000000"]], route
    assert "10.0.2.100" in fib, fib   # default via 10.0.2.2 on tap0, 10.0.2.0/24, address 10.0.2.100
    # IPv6 by slirp's router advertisement: a global fd00::/64 address on tap0.
    assert any(l.split()[0].startswith("fd00000000000000") and l.split()[3] == "00" and l.split()[-1] == "tap0"
               for l in if6.removeprefix("ok:").splitlines()), if6
    assert resolv.splitlines()[-1] == "nameserver 10.0.2.3", resolv
    assert wait_until(lambda: not slirps(alice), 5), slirps(alice)


@pytest.mark.parametrize("mode", ["isolated", "host"])
def test_nothing_of_the_host_or_of_other_tenants_is_reachable(host, alice, bob, net, targets, mode):
    """isolated: B's listeners on 127.0.0.1 and ::1 (TCP, UDP), root's on
    0.0.0.0 and :: through the host's own veth address, B's and root's
    abstract sockets: none answers; /proc/net shows none of B's sockets.
    host (the positive control): the same probes reach every one."""
    names, probes, want = batch({**INTERNET, **targets["probes"]})
    extra = [{"kind": "read", "path": "/proc/net/unix"}, {"kind": "read", "path": "/proc/net/tcp"}]
    got, _ = oneoff(host, alice, probes + extra, net.config(mode))
    results = dict(zip(names, got))
    unix, tcp = got[len(names):]
    port_hex = f":{targets['bob_tcp4']:04X} "
    for n, w in zip(names, want):
        if n.startswith("internet") or mode == "host":
            assert results[n] == "ok:" + w, (n, results)
        else:
            assert not results[n].startswith("ok"), (n, results)
            assert results[n] in ("err:ECONNREFUSED", "err:ENOENT", "err:ENETUNREACH", "err:EHOSTUNREACH",
                                  "err:EACCES", "timeout"), (n, results)
    b_abs, r_abs = targets["abstract"]
    listed = [("@" + b_abs) in unix, ("@" + r_abs) in unix, targets["bob_path"] in unix, port_hex in tcp]
    assert listed == ([True] * 4 if mode == "host" else [False] * 4), (listed, unix[-2000:])


@pytest.mark.parametrize("mode", ["isolated", "host"])
def test_another_tenants_session_jail_is_unreachable(host, alice, bob, net, mode):
    """B's session jail listens on its own loopback (TCP v4, v6) and on an
    abstract socket; A's jail reaches none of them when isolated, and all of
    them when both share the host's network (the control)."""
    host.run_root([host.bin, "stop", "--user", bob])
    tok = "CTJ-BOBJAIL-" + uuid.uuid4().hex[:8]
    abstract = "ctj-bobjail-" + uuid.uuid4().hex[:8]
    ready = f"{host.home(bob)}/ctj-sj-{uuid.uuid4().hex[:8]}.json"
    t = PtyProcess([host.bin, "run", "--user", bob, "--session", new_session()],
                   env={"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_CONFIG": net.config(mode)})
    try:
        t.write(f"CTJ_TOKEN={tok} python3 ~/{PROBE} listen {ready} tcp:127.0.0.1:0 tcp:[::1]:0 "
                f"abstract:{abstract} & echo STARTED_$((6*7))\r")
        assert t.wait_for("STARTED_42", 20), t.output()[-2000:]
        assert wait_until(lambda: os.path.exists(ready), 10), t.output()[-2000:]
        with open(ready) as f:
            ports = json.load(f)
        names, probes, want = batch({
            **INTERNET,
            "B's jail tcp 127.0.0.1": ({"kind": "tcp", "host": "127.0.0.1", "port": ports[0]}, tok),
            "B's jail tcp ::1": ({"kind": "tcp", "host": "::1", "port": ports[1]}, tok),
            "B's jail abstract": ({"kind": "abstract", "name": abstract}, tok)})
        got, _ = oneoff(host, alice, probes, net.config(mode))
        for n, w, g in zip(names, want, got):
            if n.startswith("internet") or mode == "host":
                assert g == "ok:" + w, (n, got)
            else:
                assert not g.startswith("ok"), (n, got)
    finally:
        t.close()
        host.run_root([host.bin, "stop", "--user", bob])
        if os.path.exists(ready):
            os.unlink(ready)


def _hand_made_slirp_probe(host, user, probes, flags):
    """The probes run in a network namespace made here (unshare -Urn as
    `user`) with slirp4netns attached by hand with `flags`, as `user` with
    its own groups: what the helper's slirp4netns would do without the
    flags it is given."""
    inp, out = write_probes(host, user, probes)
    ns = start_as(user, ["/usr/bin/unshare", "-Urn", "/bin/sleep", "60"], stdin=subprocess.DEVNULL)
    slirp = None
    try:
        assert wait_until(lambda: os.readlink(f"/proc/{ns.pid}/ns/net") != host_netns(), 5)
        ready_r, ready_w = os.pipe()
        slirp = start_as(user, [SLIRP, "--configure", "--mtu=65520", *flags, f"--ready-fd={ready_w}",
                                str(ns.pid), "tap0"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, pass_fds=(ready_w,))
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"1"
        os.close(ready_r)
        r = subprocess.run(["nsenter", "-t", str(ns.pid), "-U", "-n",
                            *probe_argv(host, user, inp, out)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r
        return read_results(inp, out)
    finally:
        for p in (slirp, ns):
            if p is not None:
                p.kill()
                p.wait()


def test_slirps_gateway_does_not_lead_to_the_hosts_loopback(host, alice, bob, net, targets):
    """slirp's gateway (10.0.2.2, fd00::2) is the host's loopback unless
    slirp4netns has --disable-host-loopback: B's loopback listeners through
    it are unreachable from A's jail. Control: a slirp4netns attached by hand
    without that flag reaches them by the same probes."""
    tok_b = targets["tokens"][0]
    p4 = targets["probes"]["B tcp 127.0.0.1"][0]["port"]
    p6 = targets["probes"]["B tcp ::1"][0]["port"]
    pu = targets["probes"]["B udp 127.0.0.1"][0]["port"]
    # IPv6 first (it waits for slirp's router advertisement), so that
    # fd00::2 is tried with IPv6 up and is not retried.
    probes = [INTERNET["internet tcp v6"][0], {"kind": "tcp", "host": "10.0.2.2", "port": p4},
              {"kind": "udp", "host": "10.0.2.2", "port": pu}, {"kind": "tcp", "host": "fd00::2", "port": p6,
                                                                "v6_wait": 0}]
    got, _ = oneoff(host, alice, probes, net.isolated)
    assert got[0] == "ok:" + netpeer.PEER_TOKEN and not any(g.startswith("ok") for g in got[1:]), got
    control = _hand_made_slirp_probe(host, alice, probes, ["--enable-ipv6"])
    assert control == ["ok:" + netpeer.PEER_TOKEN, "ok:" + tok_b, "ok:" + tok_b + ":ping", "ok:" + tok_b], control


@pytest.mark.parametrize("mode", ["isolated", "host"])
def test_binding_a_port_inside_takes_no_port_of_the_host(host, alice, net, mode):
    with socket.socket() as s:      # a port free on the host right now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = host.home(alice)
    hold, release = f"{home}/ctj-hold-{port}", f"{home}/ctj-release-{port}"
    inp, out = write_probes(host, alice, [{"kind": "bind", "host": "127.0.0.1", "port": port,
                                           "hold": hold, "release": release}])
    argv = [host.bin, "run", "--user", alice, "--session", new_session(), "--", *probe_argv(host, alice, inp, out)]
    p = start_as(None, argv, env={"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": net.config(mode)},
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(lambda: os.path.exists(hold) or p.poll() is not None, 30)
        assert os.path.exists(hold), p.returncode
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                outcome = "bound"
            except OSError as e:
                outcome = socket.errno.errorcode[e.errno]
        assert outcome == ("bound" if mode == "isolated" else "EADDRINUSE")
    finally:
        open(release, "w").close()
        p.wait(30)
        assert read_results(inp, out) == ["ok:bound"]
        for f in (hold, release):
            if os.path.exists(f):
                os.unlink(f)


def _private_resolv(path):
    """argv prefix: the helper in a private mount namespace of the test's
    where /etc/resolv.conf is the file `path` (the session jail's
    supervisor, and slirp4netns, inherit it)."""
    return ["/usr/bin/unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            'mount --bind "$0" /etc/resolv.conf && exec "$@"', path]


@pytest.mark.parametrize("resolver", [netpeer.PEER_V4, "127.0.0.1", "127.0.0.53"])
def test_dns_works_through_the_forwarder(host, alice, net, resolver):
    """The jail's resolv.conf names slirp's forwarder (10.0.2.3), which asks
    the host's resolver: the test internet's, or one on the host's loopback
    (systemd-resolved's 127.0.0.53, a local cache's 127.0.0.1) that the
    host-address rules let through on port 53 only."""
    procs = []
    resolv = os.path.join(net.work, f"resolv-{uuid.uuid4().hex[:6]}.conf")
    with open(resolv, "w") as f:
        f.write(f"nameserver {resolver}\n")
    os.chmod(resolv, 0o644)
    try:
        if resolver.startswith("127."):
            p = subprocess.Popen(["/usr/bin/python3", os.path.join(net.work, "netpeer.py"), "dns", resolver, "53",
                                  netpeer.TEST_NAME, netpeer.PEER_V4, netpeer.PEER_V6],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
            procs.append(p)
            assert p.stdout.readline().strip() == "READY"
        probes = [{"kind": "resolve", "name": netpeer.TEST_NAME},
                  {"kind": "dns", "server": "10.0.2.3", "name": netpeer.TEST_NAME},
                  {"kind": "dns", "server": "10.0.2.3", "name": netpeer.TEST_NAME, "qtype": 28},
                  {"kind": "tcp", "host": netpeer.TEST_NAME, "port": netpeer.TCP_PORT},
                  {"kind": "read", "path": "/etc/resolv.conf"}]
        # The name resolved and connected to by name, as a tool inside would.
        probes[3]["host"] = netpeer.TEST_NAME
        got, _ = oneoff(host, alice, probes, net.isolated, wrap=_private_resolv(resolv))
        assert netpeer.PEER_V4 in got[0].removeprefix("ok:").split(","), got
        assert got[1:3] == ["ok:" + netpeer.PEER_V4, "ok:" + netpeer.PEER_V6], got
        assert got[3] == "ok:" + netpeer.PEER_TOKEN, got
        assert got[4].splitlines()[-1] == "nameserver 10.0.2.3", got
    finally:
        for p in procs:
            p.kill()
            p.wait()
        os.unlink(resolv)


def _session(host, tenant, terms, config=None, fault=None):
    """A connection on a pty, its shell answering: as the proxy, or as root
    with `config`; with `fault`, the faults build's (as root)."""
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm"}
    if config:
        env["CLIHOST_JAIL_CONFIG"] = config
    if fault:
        env["CLIHOST_JAIL_FAULT"] = fault
    binary = install_faults_bin(host) if fault else host.bin
    t = PtyProcess([binary, "run", "--user", tenant, "--session", new_session()],
                   user=None if config or fault else PROXY, env=env)
    terms.append(t)
    t.write("echo READY_$((40+2))\r")
    assert t.wait_for("READY_42", 20), t.output()[-2000:]
    return t


def _probe_in_session(host, tenant, t, probes, timeout=30):
    inp, out = write_probes(host, tenant, probes)
    tag = uuid.uuid4().hex[:6]
    t.write(f"python3 ~/{PROBE} probe {inp} {out}; echo DONE{tag}_$((6*7))\r")
    assert t.wait_for(f"DONE{tag}_42", timeout), t.output()[-2000:]
    return read_results(inp, out)


def _supervisor_of(host, tenant):
    with open(os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.state")) as f:
        return int(f.read().split()[3])


def test_the_network_process_belongs_to_the_session_jail(host, alice, net, terms):
    """One slirp4netns per session jail: a child of its root supervisor,
    running as the tenant with the network group as its only group (never
    root); after `stop` none is left."""
    host.run_root([host.bin, "stop", "--user", alice])
    t = _session(host, alice, terms)
    got = _probe_in_session(host, alice, t, [INTERNET["internet tcp v4"][0]])
    assert got == ["ok:" + netpeer.PEER_TOKEN]
    procs = slirps(alice)
    assert len(procs) == 1, procs
    slirp = procs[0]
    uid, gid = pwd.getpwnam(alice).pw_uid, grp.getgrnam(NET_GROUP).gr_gid
    assert proc_status(slirp, "PPid") == [str(_supervisor_of(host, alice))]
    assert proc_status(slirp, "Uid") == [str(uid)] * 4
    assert proc_status(slirp, "Gid") == [str(gid)] * 4
    assert proc_status(slirp, "Groups") == [str(gid)]
    assert proc_status(slirp, "CapEff") == ["0000000000000000"]
    # The connection goes first (a connected client would start a new
    # session jail after `stop`, by the attach's retry): `stop` then ends
    # a session jail that nothing reattaches to.
    t.hangup()
    assert t.wait(10) is not None
    assert slirps(alice) == [slirp]
    r = host.run_root([host.bin, "stop", "--user", alice])
    assert r.returncode == 0, r
    assert wait_until(lambda: not slirps(alice), 10), slirps(alice)


def test_a_killed_network_process_leaves_the_jail_without_network(host, alice, net, terms):
    """SIGKILL to A's slirp4netns: A's jail then has no network at all (its
    own namespace, only lo), never the host's."""
    host.run_root([host.bin, "stop", "--user", alice])
    t = _session(host, alice, terms)
    probes = [INTERNET["internet tcp v4"][0], {"kind": "netns"}, {"kind": "read", "path": "/proc/net/dev"}]
    before = _probe_in_session(host, alice, t, probes)
    assert before[0] == "ok:" + netpeer.PEER_TOKEN and "tap0" in before[2], before
    (slirp,) = slirps(alice)
    os.kill(slirp, 9)
    assert wait_until(lambda: not slirps(alice), 5)
    after = _probe_in_session(host, alice, t, probes)
    assert not after[0].startswith("ok"), after
    assert after[1] == before[1] and after[1] != "ok:" + host_netns(), (before, after)
    ifaces = [l.split(":")[0].strip() for l in after[2].removeprefix("ok:").splitlines()[2:]]
    assert ifaces == ["lo"], after[2]


def _ifaces(pid):
    with open(f"/proc/{pid}/net/dev") as f:
        return [l.split(":")[0].strip() for l in f.read().splitlines()[2:]]


@pytest.mark.parametrize("mode", ["isolated", "host"])
def test_the_attach_jail_has_no_network(host, alice, net, terms, mode):
    """The attach jail (a tmux client) needs no network, in either mode: a
    namespace of its own with only lo. The session jail's shell, in the same
    pty, has tap0 (isolated) or the host's namespace (host): the control
    that the probe reads the right processes."""
    host.run_root([host.bin, "stop", "--user", alice])
    t = _session(host, alice, terms, config=net.config(mode))
    got = _probe_in_session(host, alice, t, [{"kind": "netns"}, {"kind": "read", "path": "/proc/net/dev"}])
    clients = attach_clients(alice)
    assert len(clients) == 1, clients
    client = clients[0]
    assert os.readlink(f"/proc/{client}/ns/net") not in (host_netns(), got[0].removeprefix("ok:"))
    assert _ifaces(client) == ["lo"]
    jail_ifaces = [l.split(":")[0].strip() for l in got[1].removeprefix("ok:").splitlines()[2:]]
    if mode == "host":
        assert got[0] == "ok:" + host_netns(), got
        assert netpeer.HOST_IF in jail_ifaces, jail_ifaces
    else:
        assert got[0] != "ok:" + host_netns() and sorted(jail_ifaces) == ["lo", "tap0"], got


def _held_netns(host, tenant):
    """The tenant's empty network namespace its supervisor holds for the
    attach jails (a descriptor: no name, no mount): the one network
    namespace among the supervisor's descriptors, as (path, readlink)."""
    fds = f"/proc/{_supervisor_of(host, tenant)}/fd"
    held = {}
    for fd in os.listdir(fds):
        try:
            link = os.readlink(os.path.join(fds, fd))
        except OSError:
            continue
        if link.startswith("net:["):
            held[link] = os.path.join(fds, fd)
    assert len(held) == 1, held
    ((link, path),) = held.items()
    return path, link


def _attach_netns(host, tenant):
    """The held namespace as readlink shows it."""
    return _held_netns(host, tenant)[1]


def _ns_holders(ns):
    """Every process in network namespace `ns` or holding a descriptor of it."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            links = [os.readlink(f"/proc/{pid}/ns/net")]
            links += [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if ns in links:
            out.append(int(pid))
    return out


def _netns_cookie(path):
    """The kernel's cookie of the network namespace at `path` (SO_NETNS_COOKIE,
    Linux 5.14): unlike the inode number readlink shows, which the kernel
    hands to a new namespace once the old one is gone, a cookie is never
    reused while the machine runs."""
    probe = ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
             "print(int.from_bytes(s.getsockopt(socket.SOL_SOCKET, 71, 8), 'little'))")
    r = sh("nsenter", f"--net={path}", sys.executable, "-c", probe, check=False)
    assert r.returncode == 0 and r.stdout.strip().isdigit(), r
    return int(r.stdout)


def _nsfs_mounts():
    """Mounts of namespace files on the host (`ip netns`' kind, or ours)."""
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f if " - nsfs " in l]


def _addresses(pid):
    """The addresses of the network namespace of pid (ip, as root)."""
    return sh("nsenter", f"--net=/proc/{pid}/ns/net", "ip", "-o", "addr", "show").stdout.strip()


def test_a_tenants_attach_jails_share_one_empty_namespace_that_reaches_nothing(host, alice, bob, net, targets,
                                                                                 terms):
    """An attach jail joins the empty network namespace its tenant's session
    jail holds (RUNTIME_DIR/UID.netns) instead of making one per connection:
    both of alice's connections are in hers, bob's in his, none in the
    host's. From inside it (the tenant's tmux server makes its client run
    a command: detach-client -E), nothing of the host or of bob answers, the
    loopback has no address, and the tenant cannot bring it up. The
    controls: the same probes from the session jail, which shares the
    host's network here (network = host), reach every target; the tenant
    brings up the loopback of a namespace it owns. The supervisor holds the
    namespace as a descriptor: no name, no mount on the host (a mount per
    tenant would make every bwrap's start, which copies the host's mounts,
    cost more with each tenant). After `stop` nothing holds it any more."""
    conf = net.config("host")
    for t in (alice, bob):
        host.run_root([host.bin, "stop", "--user", t])
    t1 = _session(host, alice, terms, config=conf)
    t2 = _session(host, alice, terms, config=conf)
    tb = _session(host, bob, terms, config=conf)
    mounts = _nsfs_mounts()
    ns, bns = _attach_netns(host, alice), _attach_netns(host, bob)
    assert not [m for m in mounts if m.startswith(RUNTIME_DIR)], mounts
    clients = attach_clients(alice)
    assert len(clients) == 2, clients
    assert [os.readlink(f"/proc/{c}/ns/net") for c in clients] == [ns, ns]
    (bclient,) = attach_clients(bob)
    assert os.readlink(f"/proc/{bclient}/ns/net") == bns and bns != ns
    assert host_netns() not in (ns, bns)
    assert _ifaces(clients[0]) == ["lo"] and _addresses(clients[0]) == ""

    names, probes, want = batch(targets["probes"])
    # The control: the session jail (network = host) reaches all of them.
    control = _probe_in_session(host, alice, t2, probes)
    assert control == ["ok:" + w for w in want], list(zip(names, control))
    # The attach jail of t1, running the probes in place of its tmux client.
    inp, out = write_probes(host, alice, probes + [{"kind": "netns"}, {"kind": "read", "path": "/proc/net/dev"}])
    lo = os.path.join(host.home(alice), f"ctj-lo-{uuid.uuid4().hex[:8]}")
    cmd = (f"python3 {host.home(alice)}/{PROBE} probe {inp} {out}; "
           f"ip link set lo up >{lo} 2>&1; echo status=$? >>{lo}")
    t1.write(f"tmux detach-client -E '{cmd}'\r")
    assert t1.wait(20) == 0, t1.output()[-2000:]
    got = read_results(inp, out)
    results = dict(zip(names, got))
    for n in names:
        assert not results[n].startswith("ok"), (n, results)
    assert got[len(names)] == "ok:" + ns, got
    assert [l.split(":")[0].strip() for l in got[len(names) + 1].removeprefix("ok:").splitlines()[2:]] == ["lo"]
    with open(lo) as f:
        said = f.read()
    os.unlink(lo)
    assert "Operation not permitted" in said and "status=2" in said, said
    assert _addresses(clients[1]) == ""
    # The control for that probe: the tenant, outside any jail, in a network
    # namespace of its own user namespace, brings its loopback up.
    r = host.run_as(alice, ["unshare", "--user", "--map-root-user", "--net", "sh", "-c",
                            "ip link set lo up; echo status=$?"])
    assert r.stdout.strip() == "status=0", r

    for t in (t2, tb):
        t.hangup()
    host.run_root([host.bin, "stop", "--user", alice])
    assert wait_until(lambda: not _ns_holders(ns), 5), _ns_holders(ns)
    assert _supervisor_of(host, bob) in _ns_holders(bns), _ns_holders(bns)
    host.run_root([host.bin, "stop", "--user", bob])
    assert wait_until(lambda: not _ns_holders(bns), 5), _ns_holders(bns)


def test_an_attach_jail_without_the_tenants_namespace_makes_its_own(host, alice, net, terms):
    """The supervisor could not make the tenant's empty namespace (fault
    `attach_netns`): it says so in an audit warning, and a connection still
    attaches, in a namespace of its own (not the host's), and says so in
    its audit line. Never a client with the host's network. The control:
    without the fault, the client is in the namespace the supervisor holds."""
    host.run_root([host.bin, "stop", "--user", alice])
    # The log holds earlier tests' lines: only those written after now count.
    warning, started = "cannot make the attach jails' network namespace", "attach jail started by supervisor"
    warned_before = len(host.audit_lines(warning, want=0, timeout=0))
    started_before = len(host.audit_lines(started, want=0, timeout=0))
    _session(host, alice, terms, config=net.isolated, fault="attach_netns")
    warned = host.audit_lines(warning, want=warned_before + 1)[warned_before:]
    assert warned and "every attach jail makes its own" in warned[-1], warned
    (client,) = attach_clients(alice)
    own = os.readlink(f"/proc/{client}/ns/net")
    assert own != host_netns()
    assert _ifaces(client) == ["lo"]
    lines = host.audit_lines(started, want=started_before + 1)[started_before:]
    assert lines and ", network none" in lines[-1] and "empty namespace" not in lines[-1], lines
    host.run_root([host.bin, "stop", "--user", alice])
    started_before += len(lines)
    # The control.
    _session(host, alice, terms, config=net.isolated)
    (client,) = attach_clients(alice)
    assert os.readlink(f"/proc/{client}/ns/net") == _attach_netns(host, alice)
    lines = host.audit_lines(started, want=started_before + 1)[started_before:]
    assert lines and "empty namespace" in lines[-1], lines


def test_a_killed_supervisors_namespace_ends_with_its_jails(host, alice, net, terms):
    """SIGKILL to the supervisor leaves nothing of its namespace on the host
    (no name, no mount): it ends once its attach jails have; the next
    session jail's supervisor holds a new one, and `stop` on the dead
    record finds nothing to remove."""
    host.run_root([host.bin, "stop", "--user", alice])
    t = _session(host, alice, terms, config=net.isolated)
    ns = _attach_netns(host, alice)
    cookie = _netns_cookie(_held_netns(host, alice)[0])
    os.kill(_supervisor_of(host, alice), 9)
    assert t.wait(20) is not None
    assert wait_until(lambda: not _ns_holders(ns), 20), _ns_holders(ns)
    assert not os.path.exists(os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(alice).pw_uid}.netns"))
    _session(host, alice, terms, config=net.isolated)
    renewed = _attach_netns(host, alice)
    # Not `renewed != ns`: the dead namespace's inode number may be the new one's.
    renewed_cookie = _netns_cookie(_held_netns(host, alice)[0])
    assert renewed_cookie != cookie
    (client,) = attach_clients(alice)
    assert os.readlink(f"/proc/{client}/ns/net") == renewed
    # The probe's control: one namespace, reached two ways, has one cookie.
    assert _netns_cookie(f"/proc/{client}/ns/net") == renewed_cookie
    os.kill(_supervisor_of(host, alice), 9)
    assert wait_until(lambda: not attach_clients(alice), 20)
    assert wait_until(lambda: not _ns_holders(renewed), 20), _ns_holders(renewed)
    r = host.run_root([host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and "no session jail was running" in r.stdout, r


@pytest.mark.parametrize("pam", ["true", "false"])
def test_one_off_jails_leave_no_network_process(host, alice, net, pam):
    """A one-off jail, with or without a PAM session (the tenant's
    supervisor starts its slirp4netns either way): isolated, networked from
    its first instruction, nothing left after."""
    conf = host.config_variant(replace={"jail": {"network": "isolated"}, "pam": {"session": pam}})
    assert not slirps(alice)
    got, _ = oneoff(host, alice, [INTERNET["internet udp v4"][0], {"kind": "netns"}], conf)
    assert got[0] == "ok:" + netpeer.PEER_TOKEN + ":ping" and got[1] != "ok:" + host_netns(), got
    assert wait_until(lambda: not slirps(alice), 5), slirps(alice)


def test_a_prepared_isolated_one_off_jail_has_a_network_of_its_own(host, alice, net, terms):
    """The one-off jail a supervisor prepares for the tenant's next one-off
    (while a long one-off keeps it) gets its own namespace and slirp4netns,
    attached before its stub waits: the one-off handed to it reaches the
    internet from its first instruction, in a namespace that is neither the
    host's nor the keeper's, and its slirp4netns is the one that waited
    with it. `stop` leaves no slirp4netns."""
    host.run_root([host.bin, "stop", "--user", alice])
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_CONFIG": net.isolated}
    keeper = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sleep", "4350"],
                        user=None, env=env)
    terms.append(keeper)
    uid = pwd.getpwnam(alice).pw_uid
    assert wait_until(lambda: prepared_oneoff_jails(uid) and len(slirps(alice)) == 2, 15), host.processes_of(alice)
    waiting = [p for p in prepared_oneoff_jails(uid) if os.readlink(f"/proc/{p}/exe") == host.supervisor_bin]
    assert len(waiting) == 1, waiting
    before = set(slirps(alice))
    got, r = oneoff(host, alice, [INTERNET["internet udp v4"][0], {"kind": "netns"}], net.isolated)
    assert got[0] == "ok:" + netpeer.PEER_TOKEN + ":ping", got
    sleeper = [p for p in pids(uid=uid, live=True) if open(f"/proc/{p}/cmdline", "rb").read().startswith(b"/bin/sleep\0")]
    assert got[1] not in ("ok:" + host_netns(), "ok:" + os.readlink(f"/proc/{sleeper[0]}/ns/net")), got
    # The supervisor's lines hold the keeper's too: this one-off's is the newest.
    lines = front_and_supervisor_lines(host, r, want=2, until=lambda l: "one-off jail started by supervisor" in l)
    started = [l for l in lines if "one-off jail started by supervisor" in l][-1]
    assert f", watcher {waiting[0]}," in started, (started, waiting)
    # Its slirp4netns waited with it (alive before the request), and ends
    # with it; the keeper's goes on.
    slirp = int(started.split("(slirp4netns ")[1].split(")")[0])
    assert slirp in before and len(before) == 2, (slirp, before)
    assert wait_until(lambda: slirp not in slirps(alice), 5), slirps(alice)
    assert keeper.proc.poll() is None and before - {slirp} <= set(slirps(alice)), (before, slirps(alice))
    host.run_root([host.bin, "stop", "--user", alice], config=net.isolated)
    assert keeper.wait(10) is not None
    assert wait_until(lambda: not slirps(alice), 5), slirps(alice)


def test_the_network_process_ends_when_the_supervisor_is_killed(host, alice, net, terms):
    """SIGKILL to the session jail's root supervisor (no cleanup code runs):
    slirp4netns still ends, by its exit pipe, which only the supervisor
    held."""
    host.run_root([host.bin, "stop", "--user", alice])
    _session(host, alice, terms)
    (slirp,) = slirps(alice)
    os.kill(_supervisor_of(host, alice), 9)
    assert wait_until(lambda: not slirps(alice), 10), slirps(alice)


def test_host_mode_keeps_the_host_network_with_a_warning(host, alice, net):
    got, r = oneoff(host, alice, [{"kind": "netns"}], net.hostnet)
    assert got == ["ok:" + host_netns()]
    lines = front_and_supervisor_lines(host, r, until=lambda l: "network = host" in l)
    assert any("network = host" in l for l in lines), lines


# ----------------------------------------------------------------- refusals --

# What `run` says (its one stderr line and audit reason), and what `check`
# says in its network section, for each piece missing.
RUN_REFUSAL = {
    "rules": MISSING_RULES_PREFIX + "127.0.0.1" + MISSING_RULES_SUFFIX,   # its probe tries the loopback first
    "group": MISSING_GROUP,
    # run does not probe /dev/net/tun before starting: slirp4netns's own error, quoted.
    "tun": "the jail's network did not start: slirp4netns: open('/dev/net/tun'): Permission denied; child failed(1)",
}
CHECK_REFUSAL = {"rules": "host-address rules: FAIL: " + RUN_REFUSAL["rules"],
                 "group": "network group: FAIL: " + MISSING_GROUP,
                 "tun": "/dev/net/tun: FAIL: " + TUN_DENIED}


@pytest.mark.parametrize("missing", ["rules", "tun", "group"])
def test_isolated_refuses_when_its_isolation_is_incomplete(host, alice, net, missing):
    """Without the host-address rules, with /dev/net/tun 0600 as on a host
    without udev, or without the network group, `network = isolated` never
    runs half-isolated: run and check exit 3 with one line naming what is
    missing, and run writes it as its audit line. Afterwards (restored) the
    same run starts: the refusal was this cell's doing."""
    gid = grp.getgrnam(NET_GROUP).gr_gid
    tun_mode = stat.S_IMODE(os.stat(TUN).st_mode)
    try:
        if missing == "rules":
            sh("nft", "delete", "table", *RULES_TABLE)
        elif missing == "tun":
            os.chmod(TUN, 0o600)
        else:
            sh("groupdel", NET_GROUP)
        msg = RUN_REFUSAL[missing]
        # tun: slirp4netns fails only once bwrap waits for its go-ahead, so
        # a refusal that released bwrap's --block-fd (end of file is a go)
        # would run the command: tried often enough to see such a race.
        for _ in range(40 if missing == "tun" else 1):
            r = host.run_root(host.jail(alice, "echo RAN_$((6*7))"), config=net.isolated)
            assert r.returncode == 3, r
            assert "RAN_42" not in r.stdout, r
            assert r.stderr == f"clihost-jail: {msg}\n", r
        failed = lambda l: l.rstrip("\n").endswith(f'decision=fail reason="{msg}"')
        # The supervisor writes the refusal, naming this request; the front
        # only says it on stderr (one decision line per request).
        lines = front_and_supervisor_lines(host, r, until=failed)
        assert any(failed(l) for l in lines), lines
        c = host.run_root([host.bin, "check", "--user", alice], config=net.isolated)
        assert c.returncode == 3, c
        assert CHECK_REFUSAL[missing] in c.stdout.splitlines(), c.stdout
        assert c.stdout.splitlines()[-1].startswith("result: refused: a jail cannot start ("), c.stdout
        assert not slirps(alice)
    finally:
        if missing == "rules":
            load_rules()
        elif missing == "tun":
            os.chmod(TUN, tun_mode)
        elif not _group_exists():
            sh("groupadd", "--system", "-g", str(gid), NET_GROUP)
    r = host.run_root(host.jail(alice, "echo RAN_$((6*7))"), config=net.isolated)
    assert r.returncode == 0 and "RAN_42" in r.stdout, r


def test_check_reports_the_network(host, alice, net):
    """With everything in place, check's network section passes for
    isolated, and for host says what that mode exposes."""
    with routes_closed(alice):
        r = host.run_root([host.bin, "check", "--user", alice], config=net.isolated)
        assert r.returncode == 0, r.stdout + r.stderr
        for line in check_isolated_ok(alice):
            assert line in r.stdout.splitlines(), (line, r.stdout)
        assert CHECK_HOST not in r.stdout.splitlines()
        h = host.run_root([host.bin, "check", "--user", alice], config=net.hostnet)
    assert CHECK_HOST in h.stdout.splitlines(), h.stdout
    assert not any(l.startswith(("slirp4netns:", "host-address rules:")) for l in h.stdout.splitlines()), h.stdout
