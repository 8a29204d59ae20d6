#!/usr/bin/python3
"""tests/bench/netbench.py: what `network = isolated` costs (issue 9).

  sudo tests/bench/netbench.py --bin build/ci/clihost-jail [--quick] [--json OUT]

Runs as root on a Debian 12 host with slirp4netns; stdlib only. The peer is
a host of the bench's own (tests/integration/netpeer.py: a network
namespace behind a veth pair, 198.51.100.2), nothing outside the machine.

  start       session jail start to the tenant's prompt on a new pty (a
              unique PS1), network = isolated against network = host, `stop`
              between runs; the two modes alternate, in a random order per
              pair.
  throughput  100 MiB (--mib) TCP from the peer to a client inside an
              isolated one-off jail, against the same client as the tenant
              outside any jail; each pair back to back, alternating order.
              The client times from its connect to the last byte, so the
              jail's start is not in it. Target: inside >= 0.5x outside.
  connect     TCP connect to the peer's first byte (banner), inside an
              isolated jail against outside, 20 connects per sample.
  --by-hand   (information) the same transfer through slirp4netns with the
              helper's flags and through pasta, each attached by hand to a
              namespace of the tenant's, against outside.

Every figure is a median over pairs with the spread (p10..p90) of the
per-pair ratios. The helper is run by root with a config of the bench's
(root is a caller; the config names the mode). Everything made (tenant,
groups, rules, /dev/net/tun mode, the namespace, configs) is put back.
"""
import argparse
import grp
import json
import os
import pwd
import random
import select
import shutil
import stat
import statistics
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
import netpeer  # noqa: E402
from benchsetup import HostChanges  # noqa: E402

NET_GROUP = "clihost-jail-net"
RULES = os.path.join(REPO, "install", "nftables", "clihost-jail.nft")
TUN = "/dev/net/tun"


def eprint(*a):
    print("[netbench]", *a, file=sys.stderr, flush=True)


def run(*argv, check=True, **kw):
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, **kw)


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = (len(xs) - 1) * q
    lo, hi = int(i), min(int(i) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def summary(xs):
    return {"n": len(xs), "median": statistics.median(xs), "p10": pct(xs, 0.1), "p90": pct(xs, 0.9)}


class Bench(HostChanges):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.bin = os.path.abspath(a.bin)
        self.tenant = "ctjnb" + uuid.uuid4().hex[:6]
        self.group = "ctjnb-tenants"

    # ------------------------------------------------------------ set-up --
    def setup(self):
        if not any(g.gr_name == NET_GROUP for g in grp.getgrall()):
            run("groupadd", "--system", NET_GROUP)
            self.undo.append(lambda: run("groupdel", NET_GROUP, check=False))
        if run("nft", "list", "table", "inet", "clihost_jail", check=False).returncode != 0:
            run("nft", "-f", RULES)
            self.undo.append(lambda: run("nft", "delete", "table", "inet", "clihost_jail", check=False))
        tun_mode = stat.S_IMODE(os.stat(TUN).st_mode)
        os.chmod(TUN, 0o666)
        self.undo.append(lambda: os.chmod(TUN, tun_mode))
        self.install_pam_file()
        self.work = self.make_work_dir("ctjnb.")
        shutil.copy(netpeer.__file__, os.path.join(self.work, "netpeer.py"))   # the test internet's servers
        os.chmod(os.path.join(self.work, "netpeer.py"), 0o644)
        run("groupadd", "-f", self.group)
        run("useradd", "-m", "-s", "/bin/sh", "-G", self.group, self.tenant)
        self.undo.append(self._drop_tenant)
        pw = pwd.getpwnam(self.tenant)
        self.home, self.uid, self.gid = pw.pw_dir, pw.pw_uid, pw.pw_gid
        self.prompt = f"{self.tenant}-ready$"
        with open(os.path.join(self.home, ".profile"), "w") as f:
            f.write(f"PS1='{self.prompt} '\n")
        os.chown(os.path.join(self.home, ".profile"), self.uid, self.gid)
        # The client, where the jail sees it (the tenant's home).
        self.client = os.path.join(self.home, "netpeer.py")
        shutil.copy(netpeer.__file__, self.client)
        os.chown(self.client, self.uid, self.gid)
        self.conf = {}
        for mode in ("isolated", "host"):
            path = os.path.join(self.work, f"{mode}.conf")
            with open(path, "w") as f:
                f.write(f"[tenants]\ngroup = {self.group}\n[jail]\nallow_caller_command = true\n"
                        f"network = {mode}\n[pam]\nsession = true\n")
            os.chmod(path, 0o644)
            self.conf[mode] = path
        self.inet = netpeer.Internet(self.work)
        self.undo.append(self.inet.stop)
        self.inet.start()

    def _drop_tenant(self):
        for mode in ("isolated", "host"):
            self.helper(mode, "stop", "--user", self.tenant, check=False)
        run("pkill", "-KILL", "-u", self.tenant, check=False)
        run("userdel", "-r", "-f", self.tenant, check=False)
        run("groupdel", self.group, check=False)

    # ----------------------------------------------------------- running --
    def helper(self, mode, *args, check=True, timeout=60):
        env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": self.conf[mode]}
        r = subprocess.run([self.bin, *args], env=env, cwd="/", capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"clihost-jail {' '.join(args)} ({mode}): {r.returncode} {r.stderr.strip()}")
        return r

    def probe_inside(self, mode, probes):
        inp, out = self._probe_files(probes)
        self.helper(mode, "run", "--user", self.tenant, "--session", "nb" + uuid.uuid4().hex[:8], "--",
                    "/usr/bin/python3", self.client, "probe", inp, out, timeout=300)
        return self._results(inp, out)

    def probe_outside(self, probes):
        """The same client as the tenant, in the host's namespaces."""
        inp, out = self._probe_files(probes)
        r = subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--",
                            "/usr/bin/python3", self.client, "probe", inp, out],
                           env={"PATH": "/usr/bin:/bin"}, cwd="/", capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"outside probe: {r.stderr}")
        return self._results(inp, out)

    def _probe_files(self, probes):
        tag = uuid.uuid4().hex[:8]
        inp, out = os.path.join(self.home, f"nb-{tag}.in"), os.path.join(self.home, f"nb-{tag}.out")
        with open(inp, "w") as f:
            json.dump(probes, f)
        os.chown(inp, self.uid, self.gid)
        return inp, out

    def _results(self, inp, out):
        with open(out) as f:
            got = json.load(f)
        os.unlink(inp)
        os.unlink(out)
        for g in got:
            if not g.startswith("ok:"):
                raise RuntimeError(f"probe failed: {got}")
        return [g[3:] for g in got]

    def session_start(self, mode):
        """Seconds from the fork of `run` on a new pty to the prompt."""
        self.helper(mode, "stop", "--user", self.tenant)
        master, slave = os.openpty()
        t0 = time.perf_counter()
        p = subprocess.Popen([self.bin, "run", "--user", self.tenant, "--session", "main"],
                             env={"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_CONFIG": self.conf[mode]},
                             cwd="/", stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        buf = b""
        deadline = t0 + 30
        took = None
        try:
            while time.perf_counter() < deadline:
                r, _, _ = select.select([master], [], [], 0.5)
                if r:
                    try:
                        data = os.read(master, 65536)
                    except OSError:
                        break
                    if not data:
                        break
                    buf += data
                    if self.prompt.encode() in buf:
                        took = time.perf_counter() - t0
                        break
        finally:
            p.kill()
            p.wait()
            os.close(master)
            self.helper(mode, "stop", "--user", self.tenant)
        if took is None:
            raise RuntimeError(f"no prompt ({mode}): {buf[-500:]!r}")
        return took

    # ------------------------------------------------------ measurements --
    def bench_start(self, pairs):
        out = {"isolated": [], "host": []}
        ratios = []
        for _ in range(2):                                  # warm-up, not counted
            for mode in ("isolated", "host"):
                self.session_start(mode)
        for i in range(pairs):
            order = random.sample(["isolated", "host"], 2)
            got = {m: self.session_start(m) for m in order}
            for m in got:
                out[m].append(got[m])
            ratios.append(got["isolated"] / got["host"])
            eprint(f"start pair {i + 1}/{pairs}: isolated {got['isolated'] * 1000:.0f} ms, "
                   f"host {got['host'] * 1000:.0f} ms")
        return {"isolated_s": summary(out["isolated"]), "host_s": summary(out["host"]),
                "ratio_isolated_over_host": summary(ratios)}

    def bench_throughput(self, pairs, mib):
        nbytes = mib << 20
        probe = [{"kind": "bulk", "host": netpeer.PEER_V4, "port": netpeer.BULK_PORT, "bytes": nbytes}]
        inside, outside, ratios = [], [], []
        self.probe_inside("isolated", probe)                 # warm-up
        self.probe_outside(probe)
        for i in range(pairs):
            got = {}
            for where in random.sample(["inside", "outside"], 2):
                res = self.probe_inside("isolated", probe) if where == "inside" else self.probe_outside(probe)
                got[where] = mib / float(res[0])
            inside.append(got["inside"])
            outside.append(got["outside"])
            ratios.append(got["inside"] / got["outside"])
            eprint(f"throughput pair {i + 1}/{pairs}: inside {got['inside']:.0f} MiB/s, "
                   f"outside {got['outside']:.0f} MiB/s")
        return {"mib": mib, "inside_mib_s": summary(inside), "outside_mib_s": summary(outside),
                "ratio_inside_over_outside": summary(ratios)}

    def by_hand(self, tool, probe):
        """The probe in a network namespace made here (unshare -Urn as the
        tenant) with `tool` attached by hand as the tenant: what the same
        transfer costs through slirp4netns with the helper's flags, or
        through pasta (information; the helper runs slirp4netns)."""
        cred = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--"]
        ns = subprocess.Popen([*cred, "unshare", "-Urn", "sleep", "120"], stdin=subprocess.DEVNULL)
        att = None
        try:
            deadline = time.time() + 5
            while os.readlink(f"/proc/{ns.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
                if time.time() > deadline:
                    raise RuntimeError("unshare did not start")
                time.sleep(0.02)
            if tool == "slirp4netns":
                argv = ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-ipv6",
                        "--enable-seccomp", str(ns.pid), "tap0"]
            else:
                argv = ["pasta", "--config-net", "-f", "--no-map-gw", "-T", "none", "-U", "none",
                        "--netns", f"/proc/{ns.pid}/ns/net", "--userns", f"/proc/{ns.pid}/ns/user"]
            att = subprocess.Popen([*cred, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            inp, out = self._probe_files([{"kind": "tcp", "host": netpeer.PEER_V4, "port": netpeer.TCP_PORT,
                                           "v6_wait": 0}] + probe)
            deadline = time.time() + 10
            while True:     # until the link is up (the banner answers)
                r = subprocess.run(["nsenter", "-t", str(ns.pid), "-U", "-n", "/usr/bin/python3", self.client,
                                    "probe", inp, out], capture_output=True, text=True, timeout=300)
                with open(out) as f:
                    got = json.load(f)
                if got[0].startswith("ok:") or time.time() > deadline:
                    break
                time.sleep(0.2)
            os.chown(inp, self.uid, self.gid)
            return self._results(inp, out)[1:]
        finally:
            for p in (att, ns):
                if p is not None:
                    p.kill()
                    p.wait()

    def bench_by_hand(self, pairs, mib):
        probe = [{"kind": "bulk", "host": netpeer.PEER_V4, "port": netpeer.BULK_PORT, "bytes": mib << 20}]
        got = {"slirp4netns": [], "pasta": [], "outside": []}
        for _ in range(pairs):
            for where in random.sample(list(got), 3):
                res = self.probe_outside(probe) if where == "outside" else self.by_hand(where, probe)
                got[where].append(mib / float(res[0]))
        ratios = {k: summary([a / b for a, b in zip(got[k], got["outside"])]) for k in ("slirp4netns", "pasta")}
        return {"mib_s": {k: summary(v) for k, v in got.items()}, "ratio_over_outside": ratios}

    def bench_connect(self, pairs, per):
        probe = [{"kind": "connect", "host": netpeer.PEER_V4, "port": netpeer.TCP_PORT, "n": per}]
        inside, outside, ratios = [], [], []
        for i in range(pairs):
            got = {}
            for where in random.sample(["inside", "outside"], 2):
                res = self.probe_inside("isolated", probe) if where == "inside" else self.probe_outside(probe)
                got[where] = statistics.median(float(x) for x in res[0].split(","))
            inside.append(got["inside"] * 1e6)
            outside.append(got["outside"] * 1e6)
            ratios.append(got["inside"] / got["outside"])
        return {"connects_per_sample": per, "inside_us": summary(inside), "outside_us": summary(outside),
                "ratio_inside_over_outside": summary(ratios)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the built clihost-jail")
    ap.add_argument("--quick", action="store_true", help="fewer pairs (a smoke run)")
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--by-hand", action="store_true",
                    help="also: the transfer through slirp4netns and pasta attached by hand (needs passt)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("netbench: run as root")
    pairs = 3 if a.quick else 10
    b = Bench(a)
    try:
        b.setup()
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        res = {"helper": b.bin, "loadavg_start": load, "nproc": os.cpu_count()}
        res["start"] = b.bench_start(pairs)
        res["throughput"] = b.bench_throughput(pairs, a.mib)
        res["connect"] = b.bench_connect(pairs, 20)
        if a.by_hand:
            res["by_hand"] = b.bench_by_hand(pairs, a.mib)
        with open("/proc/loadavg") as f:
            res["loadavg_end"] = f.read().split()[:3]
    finally:
        b.teardown()
    text = json.dumps(res, indent=2)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
