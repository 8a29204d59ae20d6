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
  --fairness  (this part alone, instead of the three above; issue 24) N
              tenants (--tenants, 4), --rounds rounds (5; 2 with --quick),
              each in random order: one tenant alone downloading --mib MiB
              from the peer in its isolated one-off jail (the tenant rotates
              by round), and all N at once, each in its own isolated one-off
              jail; the same two as the tenants outside any jail, the peer's
              control. Every client connects only when a gate (a FIFO per
              client) opens for all of them at once, and times from its
              connect to its last byte. Per round: each tenant's MiB/s, their
              sum, sum / alone (target >= 0.90), min / max (target >= 0.80),
              the CPU of each slirp4netns, each client and the peer over the
              window, and the cpu cgroup each one is in.

Every figure is a median over pairs with the spread (p10..p90) of the
per-pair ratios. The helper is run by root with a config of the bench's
(root is a caller; the config names the mode). Everything made (tenant,
groups, rules, /dev/net/tun mode, the namespace, configs) is put back.
"""
import argparse
import errno
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
        self.group = "ctjnb-tenants"
        n = a.tenants if a.fairness else 1
        self.tenants = [{"name": "ctjnb" + uuid.uuid4().hex[:6]} for _ in range(n)]
        self.tenant = self.tenants[0]["name"]

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
        self.undo.append(self._drop_tenants)
        for t in self.tenants:
            run("useradd", "-m", "-s", "/bin/sh", "-G", self.group, t["name"])
            t["made"] = True
            pw = pwd.getpwnam(t["name"])
            t.update(home=pw.pw_dir, uid=pw.pw_uid, gid=pw.pw_gid)
            with open(os.path.join(t["home"], ".profile"), "w") as f:
                f.write(f"PS1='{t['name']}-ready$ '\n")
            os.chown(os.path.join(t["home"], ".profile"), t["uid"], t["gid"])
            # The client, where the jail sees it (the tenant's home).
            t["client"] = os.path.join(t["home"], "netpeer.py")
            shutil.copy(netpeer.__file__, t["client"])
            os.chown(t["client"], t["uid"], t["gid"])
        t0 = self.tenants[0]
        self.home, self.uid, self.gid, self.client = t0["home"], t0["uid"], t0["gid"], t0["client"]
        self.prompt = f"{self.tenant}-ready$"
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

    def _drop_tenants(self):
        for t in self.tenants:
            if not t.get("made"):
                continue
            for mode in getattr(self, "conf", {}):
                self.helper(mode, "stop", "--user", t["name"], check=False)
            run("pkill", "-KILL", "-u", t["name"], check=False)
            run("userdel", "-r", "-f", t["name"], check=False)
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

    def _probe_files(self, probes, t=None):
        t = t or self.tenants[0]
        tag = uuid.uuid4().hex[:8]
        inp, out = os.path.join(t["home"], f"nb-{tag}.in"), os.path.join(t["home"], f"nb-{tag}.out")
        with open(inp, "w") as f:
            json.dump(probes, f)
        os.chown(inp, t["uid"], t["gid"])
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

    # ---------------------------------------------------------- fairness --
    def _cpu_ticks(self, pid):
        """utime + stime of a process in clock ticks, None once it is gone."""
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return None

    @staticmethod
    def _host_ticks():
        """(busy, all) clock ticks of every CPU of the host (/proc/stat)."""
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + v[4]
        return sum(v) - idle, sum(v)

    def _procs(self, uids, comm):
        """The pids of the processes named `comm` running as these tenants
        (slirp4netns runs as its tenant; so does the client)."""
        out = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/comm") as f:
                    if f.read().strip() != comm:
                        continue
                uid = os.stat(f"/proc/{d}").st_uid
            except OSError:
                continue
            if uid in uids:
                out[int(d)] = uid
        return out

    def fair_group(self, where, tenants, mib):
        """`tenants` download `mib` MiB each at once: inside ("inside", each in
        an isolated one-off jail of its own) or as themselves outside any jail
        ("outside"). Every client connects when its gate opens; the gates open
        together once every client is waiting. Returns each one's MiB/s, the
        start skew and span (wall clock), and the CPU over the window of each
        slirp4netns, the peer and the host."""
        probes = []
        for t in tenants:
            tag = uuid.uuid4().hex[:8]
            ready, gate = os.path.join(t["home"], f"nf-{tag}.ready"), os.path.join(t["home"], f"nf-{tag}.gate")
            os.mkfifo(gate, 0o600)
            os.chown(gate, t["uid"], t["gid"])
            inp, out = self._probe_files([{"kind": "bulk_gated", "host": netpeer.PEER_V4, "port": netpeer.BULK_PORT,
                                           "bytes": mib << 20, "ready": ready, "gate": gate}], t)
            if where == "inside":
                argv = [self.bin, "run", "--user", t["name"], "--session", "nf" + tag, "--",
                        "/usr/bin/python3", t["client"], "probe", inp, out]
                env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": self.conf["isolated"]}
            else:
                argv = ["setpriv", f"--reuid={t['uid']}", f"--regid={t['gid']}", "--init-groups", "--",
                        "/usr/bin/python3", t["client"], "probe", inp, out]
                env = {"PATH": "/usr/bin:/bin"}
            err = open(os.path.join(self.work, f"nf-{tag}.err"), "w+")
            proc = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err)
            probes.append({"t": t, "ready": ready, "gate": gate, "in": inp, "out": out, "proc": proc, "err": err})
        gates = []
        try:
            deadline = time.time() + 120
            for p in probes:                 # every client waiting at its gate
                fd = None
                while fd is None:
                    if p["proc"].poll() is not None:
                        p["err"].seek(0)
                        raise RuntimeError(f"{where} client of {p['t']['name']} ended before its gate: "
                                           f"{p['proc'].returncode} {p['err'].read().strip()}")
                    if time.time() > deadline:
                        raise RuntimeError(f"{where} client of {p['t']['name']} never reached its gate")
                    if os.path.exists(p["ready"]):
                        try:
                            fd = os.open(p["gate"], os.O_WRONLY | os.O_NONBLOCK)
                        except OSError as e:
                            if e.errno != errno.ENXIO:   # ENXIO: not reading yet
                                raise
                    if fd is None:
                        time.sleep(0.01)
                gates.append(fd)
            uids = {p["t"]["uid"] for p in probes}
            slirps = self._procs(uids, "slirp4netns") if where == "inside" else {}
            if where == "inside" and len(slirps) != len(probes):
                raise RuntimeError(f"expected {len(probes)} slirp4netns of the tenants, found {len(slirps)}")
            clients = self._procs(uids, "python3")
            name = {t["uid"]: t["name"] for t in self.tenants}
            watched = {pid: f"slirp4netns:{name[uid]}" for pid, uid in slirps.items()}
            watched.update({pid: f"client:{name[uid]}" for pid, uid in clients.items()})
            watched[self.inet.proc.pid] = "peer"
            cgroups = {}                     # where each one's CPU is accounted (the cpu controller)
            for pid in watched:
                try:
                    with open(f"/proc/{pid}/cgroup") as f:
                        line = [x for x in f.read().splitlines() if x.split(":")[1] in ("", "cpu,cpuacct", "cpu")]
                    cgroups[watched[pid]] = line[0].split(":", 2)[2] if line else "?"
                except (OSError, IndexError):
                    cgroups[watched[pid]] = "?"
            first = {pid: self._cpu_ticks(pid) for pid in watched}
            last = dict(first)
            h0, h1 = self._host_ticks(), None
            for fd in gates:                 # open every gate at once
                os.write(fd, b"g")
            for fd in gates:
                os.close(fd)
            gates = []
            deadline = time.time() + 300
            while any(p["proc"].poll() is None for p in probes):
                if time.time() > deadline:
                    raise RuntimeError(f"{where} clients still running after 300 s")
                for pid in watched:
                    v = self._cpu_ticks(pid)
                    if v is not None:
                        last[pid] = v
                if h1 is None and all(os.path.exists(p["out"]) for p in probes):
                    h1 = self._host_ticks()  # every transfer done; the jails are ending
                time.sleep(0.02)
            h1 = h1 or self._host_ticks()
            res = []
            for p in probes:
                if p["proc"].returncode != 0:
                    p["err"].seek(0)
                    raise RuntimeError(f"{where} client of {p['t']['name']}: {p['proc'].returncode} "
                                       f"{p['err'].read().strip()}")
                got = [float(x) for x in self._results(p["in"], p["out"])[0].split(",")]
                res.append({"tenant": p["t"]["name"], "s": got[0], "start": got[1], "marks": got[2:],
                            "end": got[-1]})
        finally:
            for fd in gates:
                os.close(fd)
            for p in probes:
                if p["proc"].poll() is None:
                    p["proc"].kill()
                    p["proc"].wait()
                p["err"].close()
                for f in (p["ready"], p["gate"]):
                    if os.path.exists(f):
                        os.unlink(f)
        hz = os.sysconf("SC_CLK_TCK")
        starts, ends = [r["start"] for r in res], [r["end"] for r in res]
        span = max(ends) - min(starts)
        # Each one's rate over the time all of them ran (last start to first
        # end), its bytes at either end interpolated between its sixteenths.
        lo, hi = max(starts), min(ends)

        def got_at(r, when):
            pts = [(r["start"], 0.0)] + [(m, (k + 1) / 16) for k, m in enumerate(r["marks"])]
            for (ta, fa), (tb, fb) in zip(pts, pts[1:]):
                if ta <= when <= tb:
                    return fa + (fb - fa) * ((when - ta) / (tb - ta) if tb > ta else 1.0)
            return 1.0 if when > pts[-1][0] else 0.0
        common = [mib * (got_at(r, hi) - got_at(r, lo)) / (hi - lo) for r in res] if hi > lo else []
        busy, total = h1[0] - h0[0], h1[1] - h0[1]
        return {"mib_s": [mib / r["s"] for r in res], "tenants": [r["tenant"] for r in res],
                "common_mib_s": common, "common_s": max(hi - lo, 0.0), "cgroups": cgroups,
                "start_skew_s": max(starts) - min(starts), "span_s": span,
                "last_start_before_first_end": max(starts) < min(ends),
                "cpu_cores": {watched[pid]: (last[pid] - first[pid]) / hz / span for pid in watched},
                "host_busy": busy / total if total else float("nan")}

    def bench_fairness(self, rounds, mib):
        n = len(self.tenants)
        rows = {"inside": [], "outside": []}
        for where in ("inside", "outside"):      # warm-up, not counted
            self.fair_group(where, self.tenants[:1], mib)
            self.fair_group(where, self.tenants, mib)
        for r in range(rounds):
            alone_t = self.tenants[r % n]
            got = {}
            for kind in random.sample([("inside", 1), ("inside", n), ("outside", 1), ("outside", n)], 4):
                got[kind] = self.fair_group(kind[0], [alone_t] if kind[1] == 1 else self.tenants, mib)
            for where in ("inside", "outside"):
                alone, many = got[(where, 1)], got[(where, n)]
                each = many["mib_s"]
                row = {"alone_mib_s": alone["mib_s"][0], "alone_tenant": alone_t["name"], "each_mib_s": each,
                       "sum_mib_s": sum(each), "sum_over_alone": sum(each) / alone["mib_s"][0],
                       "min_over_max": min(each) / max(each), "start_skew_ms": many["start_skew_s"] * 1000,
                       "overlapped": many["last_start_before_first_end"],
                       "aggregate_mib_s": n * mib / many["span_s"],
                       "common_each_mib_s": many["common_mib_s"], "common_s": many["common_s"],
                       "common_min_over_max": (min(many["common_mib_s"]) / max(many["common_mib_s"])
                                               if many["common_mib_s"] else float("nan")),
                       "cpu_cores_together": many["cpu_cores"], "host_busy_together": many["host_busy"],
                       "cpu_cgroups_together": many["cgroups"],
                       "cpu_cores_alone": alone["cpu_cores"], "host_busy_alone": alone["host_busy"]}
                cpu = many["cpu_cores"]
                for part in ("slirp4netns", "client"):
                    row[f"cpu_cores_{part}_all"] = sum(v for k, v in cpu.items() if k.startswith(part + ":"))
                rows[where].append(row)
                eprint(f"fairness round {r + 1}/{rounds} {where}: alone {row['alone_mib_s']:.0f} MiB/s, "
                       f"each {' '.join(f'{x:.0f}' for x in each)}, sum {row['sum_mib_s']:.0f} "
                       f"({row['sum_over_alone']:.2f}x alone), min/max {row['min_over_max']:.2f}, "
                       f"while all ran ({row['common_s']:.2f} s) min/max {row['common_min_over_max']:.2f}, "
                       f"aggregate {row['aggregate_mib_s']:.0f}, skew {row['start_skew_ms']:.1f} ms, host busy {row['host_busy_together']:.2f}, cores: "
                       f"peer {many['cpu_cores'].get('peer', 0):.2f} slirp4netns "
                       + " ".join(f"{v:.2f}" for k, v in sorted(cpu.items()) if k.startswith("slirp4netns:"))
                       + f" clients {row['cpu_cores_client_all']:.2f}")
        out = {"tenants": n, "rounds": rounds, "mib": mib, "rows": rows}
        for where in ("inside", "outside"):
            rs = rows[where]
            cpu_keys = sorted({k for x in rs for k in x["cpu_cores_together"]})
            out[where] = {k: summary([x[k] for x in rs]) for k in
                          ("alone_mib_s", "sum_mib_s", "sum_over_alone", "min_over_max", "aggregate_mib_s",
                           "common_min_over_max", "common_s",
                           "start_skew_ms", "host_busy_together", "host_busy_alone", "cpu_cores_slirp4netns_all",
                           "cpu_cores_client_all")}
            # slirp4netns processes differ per round (one per jail): by tenant.
            out[where]["cpu_cores_together"] = {k: summary([x["cpu_cores_together"][k] for x in rs
                                                            if k in x["cpu_cores_together"]]) for k in cpu_keys}
            out[where]["overlapped_rounds"] = sum(1 for x in rs if x["overlapped"])
        med = out["inside"]
        out["targets"] = {"sum_over_alone_ge_0.90": med["sum_over_alone"]["median"] >= 0.90,
                          "min_over_max_ge_0.80": med["min_over_max"]["median"] >= 0.80}
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the built clihost-jail")
    ap.add_argument("--quick", action="store_true", help="fewer pairs (a smoke run)")
    ap.add_argument("--mib", type=int, default=100)
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--by-hand", action="store_true",
                    help="also: the transfer through slirp4netns and pasta attached by hand (needs passt)")
    ap.add_argument("--fairness", action="store_true",
                    help="only: N tenants downloading at once against one alone (issue 24)")
    ap.add_argument("--tenants", type=int, default=4, help="--fairness: how many tenants (default 4)")
    ap.add_argument("--rounds", type=int, help="--fairness: rounds (default 5, 2 with --quick)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("netbench: run as root")
    if a.tenants < 2:
        sys.exit("netbench: --tenants must be at least 2")
    pairs = 3 if a.quick else 10
    b = Bench(a)
    try:
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        b.setup()
        res = {"helper": b.bin, "loadavg_start": load, "nproc": os.cpu_count()}
        if a.fairness:
            res["fairness"] = b.bench_fairness(a.rounds or (2 if a.quick else 5), a.mib)
        else:
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
