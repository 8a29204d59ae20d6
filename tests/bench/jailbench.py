#!/usr/bin/python3
"""Measurement helpers for tests/bench/run.sh (stdlib only, run as root).

  stats      merge hyperfine --export-json files per variant, print medians as JSON
  concurrent start N helper launches at once (behind a FIFO gate), wait, report
  sessions   start M idle jails, measure memory of each chain, then SIGTERM each
             waiting parent and time the teardown with pidfds
  reconnect  time to the prompt on a new pty when the session jail runs
             (`clihost-jail run`) against a plain `tmux attach` as the tenant
  first      time to the prompt when nothing runs: session jail start + attach,
             a one-off jail running tmux, a plain `tmux new-session`
  session-memory
             memory of M idle session jails by process, and of one attach each
  scan       list what is left of the benchmark's tenants (processes, helpers,
             loginuid, mount/user namespaces, runtime records)

Every subcommand prints one JSON object on stdout; diagnostics go to stderr.
"""
import argparse
import fcntl
import json
import os
import pwd
import select
import shlex
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time


# The helper's own processes by comm (15 bytes): the front, and the
# supervisor program's ("clihost-jail-su": the supervisor, its watchers
# before their exec), or a build before the split's fork of the front.
HELPER_COMMS = ("clihost-jail", "clihost-jail-su")

def eprint(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- /proc helpers

def pids():
    for d in os.listdir("/proc"):
        if d.isdigit():
            yield int(d)


def status_fields(pid):
    """/proc/PID/status as a dict, or None if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            out = {}
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
            return out
    except (FileNotFoundError, ProcessLookupError):
        return None


def kib(field):
    # "1234 kB" -> 1234
    return int(field.split()[0]) if field else 0


def rollup_kib(pid):
    """Pss and USS (Private_Clean + Private_Dirty) from smaps_rollup."""
    out = {"Pss": 0, "Private_Clean": 0, "Private_Dirty": 0}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in out:
                    out[k] = int(v.split()[0])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return out["Pss"], out["Private_Clean"] + out["Private_Dirty"]


def group_private_kib(group):
    """Memory only the processes in `group` map, each page counted once: the
    resident pages of their mappings (pagemap, root only) whose total mapping
    count (kpagecount) is the number of times the group itself maps them. What
    ending the group frees; a page shared with any other process (libc, the
    same library in another session) does not count. None if unreadable."""
    seen = {}
    try:
        for pid in group:
            with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pm:
                for line in maps:
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    if lo >= 0xffff800000000000:
                        continue  # [vsyscall]
                    pm.seek(lo // 4096 * 8)
                    raw = pm.read((hi - lo) // 4096 * 8)
                    for (e,) in struct.iter_unpack("<Q", raw):
                        if e >> 63 & 1:  # present
                            pfn = e & ((1 << 55) - 1)
                            if pfn:
                                seen[pfn] = seen.get(pfn, 0) + 1
        own = 0
        with open("/proc/kpagecount", "rb") as kc:
            for pfn, n in seen.items():
                kc.seek(pfn * 8)
                (count,) = struct.unpack("<Q", kc.read(8))
                if count == n:
                    own += 1
        return own * 4
    except (OSError, struct.error):
        return None


def ppid_map():
    m = {}
    for p in pids():
        try:
            with open(f"/proc/{p}/stat") as f:
                s = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # comm may contain spaces/parens: split after the last ')'
        rest = s[s.rfind(")") + 2:].split()
        m[p] = int(rest[1])
    return m


def descendants(root):
    m = ppid_map()
    kids = {}
    for p, pp in m.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for c in sorted(kids.get(p, [])):
            out.append(c)
            todo.append(c)
    return out


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def helper_env(config):
    # Nothing of the bench's own environment reaches the helper: with no
    # TERM/LANG the plan is exactly the one `print` showed for variants A/B.
    return {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": config}


def helper_argv(binary, tenant, session, command):
    return [binary, "run", "--user", tenant, "--session", session, "--"] + command


# ---------------------------------------------------------------------- stats

def cmd_stats(a):
    out = {}
    for spec in a.variant:
        name, _, files = spec.partition("=")
        times, cpu, rounds = [], [], []
        for fn in files.split(","):  # one file per round, in round order
            with open(fn) as f:
                rounds.append([])
                for r in json.load(f)["results"]:
                    times.extend(r["times"])
                    rounds[-1].extend(round(t * 1000, 4) for t in r["times"])
                    # user+system of the command and its reaped children, per run
                    cpu.extend([r["user"] + r["system"]] * len(r["times"]))
        times.sort()
        out[name] = {
            "median_ms": round(statistics.median(times) * 1000, 3),
            "mean_ms": round(statistics.fmean(times) * 1000, 3),
            "p10_ms": round(times[int(0.10 * (len(times) - 1))] * 1000, 3),
            "p90_ms": round(times[int(0.90 * (len(times) - 1))] * 1000, 3),
            "min_ms": round(times[0] * 1000, 3),
            "cpu_ms": round(statistics.fmean(cpu) * 1000, 3),
            "runs": len(times),
            "rounds_ms": rounds,  # every run, by round (for the spreads of the ratios)
        }
    print(json.dumps(out))


def cmd_latency(a):
    """Launch latency, every variant interleaved run by run (A B C D ..., the
    order rotated each run) so that drift and other work on the host fall on
    all of them alike, and run i of one variant sits right next to run i of
    another (the paired ratios). Each run is one posix_spawn (a vfork-style
    clone: no copy of this process) and wait4: wall time from spawn to
    reaped, CPU time from the child's rusage (its reaped descendants
    included). A variant runs as root, or as another user (`as`: uid, gid,
    groups): this process takes that user's real ids (keeping effective uid
    0) and the child resets its effective ids to them before exec
    (POSIX_SPAWN_RESETIDS), so a setuid helper starts exactly as a proxy
    would start it. `policy`: text written to --policy-file before each run
    of that variant (the setuid helper reads its policy only there)."""
    variants = json.load(open(a.variants))
    root_groups = os.getgroups()

    def become(who):
        os.setresuid(0, 0, 0)
        os.setresgid(0, 0, 0)
        if who is None:
            os.setgroups(root_groups)
        else:
            os.setgroups(who[2])
            os.setresgid(who[1], 0, 0)
            os.setresuid(who[0], 0, 0)

    def one(v):
        if v.get("policy") is not None:
            with open(a.policy_file, "w") as f:
                f.write(v["policy"])
        actions = [(os.POSIX_SPAWN_OPEN, int(fd), path, os.O_WRONLY if path == "/dev/null" else os.O_RDONLY, 0)
                   for fd, path in sorted(v.get("fds", {}).items())]
        who = v.get("as")
        become(who)
        try:
            t0 = time.perf_counter_ns()
            pid = os.posix_spawn(v["argv"][0], v["argv"], v["env"], file_actions=actions, resetids=who is not None)
            _, status, ru = os.wait4(pid, 0)
            wall = (time.perf_counter_ns() - t0) / 1e6
        finally:
            become(None)
        if status != 0:
            raise RuntimeError(f"variant {v['name']} exited with {os.waitstatus_to_exitcode(status)}: {v['argv']}")
        return wall, (ru.ru_utime + ru.ru_stime) * 1000

    try:
        for _ in range(a.warmup):
            for v in variants:
                one(v)
        rounds = []
        for r in range(a.rounds):
            per = {v["name"]: [] for v in variants}
            for i in range(a.runs):
                k = (r * a.runs + i) % len(variants)
                order = variants[k:] + variants[:k]
                if i % 2:
                    order = order[::-1]
                for v in order:
                    per[v["name"]].append(one(v))
            rounds.append(per)
    except RuntimeError as e:
        eprint(f"jailbench: {e}")
        return 1
    out = {}
    for v in variants:
        n = v["name"]
        times = sorted(x[0] for r in rounds for x in r[n])
        cpu = [x[1] for r in rounds for x in r[n]]
        out[n] = {"median_ms": round(statistics.median(times), 3), "mean_ms": round(statistics.fmean(times), 3),
                  "p10_ms": round(pctl(times, 0.1), 3), "p90_ms": round(pctl(times, 0.9), 3),
                  "min_ms": round(times[0], 3), "cpu_ms": round(statistics.fmean(cpu), 3), "runs": len(times),
                  "rounds_ms": [[round(x[0], 4) for x in r[n]] for r in rounds]}
    print(json.dumps(out))
    return 0


# ---------------------------------------------------------------- concurrency

def fork_gated(gate, log, binary, argv, env, creds=None, cwd=None):
    """A child that waits on the start gate (gate: the pipe's two ends), then
    execs binary with stdout and stderr on log, stdin /dev/null, as creds
    ((uid, gid, groups), or root) in cwd. Returns its pid."""
    gate_r, gate_w = gate
    pid = os.fork()
    if pid == 0:
        try:
            os.close(gate_w)
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
            if creds:
                os.setgroups(creds[2])
                os.setgid(creds[1])
                os.setuid(creds[0])
            if cwd:
                os.chdir(cwd)
            os.read(gate_r, 1)
            os.execve(binary, argv, env)
        finally:
            os._exit(127)
    return pid


def cmd_concurrent(a):
    tenants = a.tenants.split(",")
    logdir = os.path.join(a.workdir, "concurrent")
    os.makedirs(logdir, exist_ok=True)
    # The start gate is a pipe: every child blocks reading it and all of them
    # see EOF when the parent closes the last write end, whether they reached
    # read() before or after that moment. (The fds are O_CLOEXEC.)
    gate_r, gate_w = os.pipe()
    children = {}
    for i in range(a.n):
        tenant = tenants[i % len(tenants)]
        session = f"c{i:04d}"
        log = os.path.join(logdir, f"{session}.log")
        argv = helper_argv(a.bin, tenant, session, ["sleep", str(a.sleep)])
        pid = fork_gated((gate_r, gate_w), log, a.bin, argv, helper_env(a.config))
        children[pid] = (tenant, session, log)
    os.close(gate_r)
    time.sleep(0.2)  # let the children settle in read()
    t0 = time.monotonic()
    os.close(gate_w)
    failures, statuses, ends = [], {}, []
    remaining = set(children)
    while remaining:
        pid, st = os.waitpid(-1, 0)
        if pid not in remaining:
            continue
        remaining.discard(pid)
        ends.append(time.monotonic() - t0)
        code = os.waitstatus_to_exitcode(st)
        statuses[code] = statuses.get(code, 0) + 1
        if code != 0:
            tenant, session, log = children[pid]
            with open(log, errors="replace") as f:
                msg = f.read().strip().splitlines()
            failures.append({"tenant": tenant, "session": session, "status": code, "stderr": msg[-3:]})
    wall = time.monotonic() - t0
    print(json.dumps({
        "n": a.n, "tenants": len(tenants), "sleep_s": a.sleep,
        "wall_s": round(wall, 3),
        "overhead_s": round(wall - a.sleep, 3),
        "first_exit_s": round(min(ends), 3), "last_exit_s": round(max(ends), 3),
        "exit_statuses": {str(k): v for k, v in sorted(statuses.items())},
        "failures": len(failures), "failure_samples": failures[:5],
    }))


# ------------------------------------------------------- memory and teardown

def wait_for_chain(helper_pid, timeout, taken=(), tenant_uid=None):
    """front, supervisor -> watcher -> bwrap -> bwrap (pid 1) -> sleep, once
    sleep exists. The owner model: the front hands its request to the
    tenant's supervisor (a root helper process, a child of init, not of the
    front), whose one-off jail runs the sleep as `tenant_uid`; `taken` are
    supervisors already in another chain."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = descendants(helper_pid)
        if any(comm(p) == "sleep" for p in d):
            return [helper_pid] + d
        for sup, pp in ppid_map().items():
            # The supervisor program (comm "clihost-jail-su", 15 bytes of
            # clihost-jail-supervisor), or a build before the split's fork
            # of the helper (the helper's own comm).
            if sup == helper_pid or sup in taken or pp != 1 or not comm(sup).startswith(comm(helper_pid)):
                continue
            d = descendants(sup)
            if any(comm(p) == "sleep" and uid_of_pid(p) == tenant_uid for p in d):
                return [helper_pid, sup] + d
        time.sleep(0.01)
    return None


def uid_of_pid(pid):
    s = status_fields(pid) or {}
    return int(s.get("Uid", "-1").split()[0])


def mem_of(pid):
    s = status_fields(pid) or {}
    pss, uss = rollup_kib(pid)
    return {"pid": pid, "comm": comm(pid), "uid": int(s.get("Uid", "-1").split()[0]),
            "VmHWM_kib": kib(s.get("VmHWM")), "VmRSS_kib": kib(s.get("VmRSS")), "Pss_kib": pss, "Uss_kib": uss}


def alive(pid):
    """Exists and is not a zombie (a zombie has exited; only its parent's reap is pending)."""
    s = status_fields(pid)
    return s is not None and not s.get("State", "").startswith("Z")


def cmd_sessions(a):
    tenants = a.tenants.split(",")
    procs = []
    for i in range(a.m):
        tenant = tenants[i % len(tenants)]
        argv = helper_argv(a.bin, tenant, f"m{i:03d}", ["sleep", "600"])
        log = open(os.path.join(a.workdir, f"session-m{i:03d}.log"), "w")
        pid = os.posix_spawn(a.bin, argv, helper_env(a.config),
                             file_actions=[(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_DUP2, log.fileno(), 1),
                                           (os.POSIX_SPAWN_DUP2, log.fileno(), 2)])
        log.close()
        procs.append(pid)
    chains = []
    for pid in procs:
        c = wait_for_chain(pid, 20, {c[1] for c in chains if len(c) > 1},
                           pwd.getpwnam(tenants[len(chains) % len(tenants)]).pw_uid)
        if c is None:
            eprint(f"jailbench: session of helper {pid} never reached `sleep`")
            for p in procs:
                os.kill(p, signal.SIGTERM)
            for p in procs:
                os.waitpid(p, 0)
            print(json.dumps({"error": "a session did not start"}))
            return 1
        chains.append(c)
    time.sleep(0.3)  # idle: let every process settle
    mem = [[mem_of(p) for p in c] for c in chains]
    # What one PAM session itself holds: the helper's own processes at the
    # head of the chain, the root parent, and a watcher when there is one
    # (network = isolated; with network = host bwrap is the parent's child).
    def helper_side(c):
        n = 1
        while n < len(c) and comm(c[n]) in HELPER_COMMS:
            n += 1
        return n
    sides = [helper_side(c) for c in chains]
    pair_own = [x for x in (group_private_kib(c[:n]) for c, n in zip(chains, sides)) if x is not None]

    teardown = []
    for c in chains:
        helper, jail = c[0], c[1:]
        fds = {}
        for p in c:
            try:
                fds[os.pidfd_open(p)] = p
            except ProcessLookupError:
                pass
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        t0 = time.monotonic()
        os.kill(helper, signal.SIGTERM)
        exited, t_jail, t_helper = set(), None, None
        deadline = t0 + 5
        while len(exited) < len(fds) and time.monotonic() < deadline:
            for fd, _ in poller.poll(100):
                if fds[fd] not in exited:
                    exited.add(fds[fd])
                    poller.unregister(fd)
                    now = time.monotonic()
                    if fds[fd] == helper:
                        t_helper = now - t0
                    elif all(p in exited for p in jail):
                        t_jail = now - t0
        _, st = os.waitpid(helper, 0)
        t_reaped = time.monotonic() - t0
        survivors = [p for p in jail if alive(p)]
        zombies = [{"pid": p, "comm": comm(p), "ppid": ppid_map().get(p)} for p in jail
                   if os.path.exists(f"/proc/{p}") and not alive(p)]
        for fd in fds:
            os.close(fd)
        teardown.append({
            "jail_gone_ms": round(t_jail * 1000, 3) if t_jail is not None else None,
            "helper_exit_ms": round(t_helper * 1000, 3) if t_helper is not None else None,
            "all_reaped_ms": round(t_reaped * 1000, 3),
            "helper_status": os.waitstatus_to_exitcode(st),
            "survivors": survivors,
            "zombies_after_helper_exit": zombies,
        })
        time.sleep(0.05)

    def med(xs):
        xs = [x for x in xs if x is not None]
        return round(statistics.median(xs), 3) if xs else None

    helper_hwm = [m[0]["VmHWM_kib"] for m in mem]
    # What a PAM session really adds: the helper's processes, each page
    # counted once. Pss does that over the sessions: a page shared by k
    # processes counts 1/k in each, so the sum over every session's is their
    # memory with shared pages (libc, libpam, the helper's text) split among
    # all who map them.
    pair_pss = [sum(p["Pss_kib"] for p in m[:n]) for m, n in zip(mem, sides)]
    watchers = [m[1] for m, n in zip(mem, sides) if n > 1]

    chain_hwm = [sum(p["VmHWM_kib"] for p in m) for m in mem]
    chain_rss = [sum(p["VmRSS_kib"] for p in m) for m in mem]
    chain_pss = [sum(p["Pss_kib"] for p in m) for m in mem]
    done = [t["all_reaped_ms"] for t in teardown]
    print(json.dumps({
        "m": a.m,
        "helper_VmHWM_kib_median": med(helper_hwm), "helper_VmHWM_kib_max": max(helper_hwm),
        "helper_VmRSS_kib_median": med([m[0]["VmRSS_kib"] for m in mem]),
        "helper_Pss_kib_median": med([m[0]["Pss_kib"] for m in mem]),
        "helper_Uss_kib_median": med([m[0]["Uss_kib"] for m in mem]),
        # The watcher, when there is one (the helper's image as the tenant).
        "helper_processes_per_session": sorted(set(sides)),
        "watcher_VmHWM_kib_median": med([w["VmHWM_kib"] for w in watchers]),
        "watcher_Pss_kib_median": med([w["Pss_kib"] for w in watchers]),
        "watcher_Uss_kib_median": med([w["Uss_kib"] for w in watchers]),
        "chain_VmHWM_kib_median": med(chain_hwm), "chain_VmRSS_kib_median": med(chain_rss),
        "chain_Pss_kib_median": med(chain_pss),
        "chain_Uss_kib_median": med([sum(p["Uss_kib"] for p in m) for m in mem]),
        "chain_example": mem[0],
        "session_pss_kib_per_session": round(sum(pair_pss) / len(pair_pss), 1),
        "session_own_kib_median": med(pair_own), "session_own_kib_max": max(pair_own) if pair_own else None,
        "session_pss_kib_max": max(pair_pss),
        "session_uss_kib_median": med([sum(p["Uss_kib"] for p in m[:n]) for m, n in zip(mem, sides)]),
        "teardown_ms_median": med(done), "teardown_ms_max": max(done),
        "teardown_jail_gone_ms_median": med([t["jail_gone_ms"] for t in teardown]),
        "teardown_helper_statuses": sorted({t["helper_status"] for t in teardown}),
        "teardown_survivors": sum(len(t["survivors"]) for t in teardown),
        "teardown_zombies": sum(len(t["zombies_after_helper_exit"]) for t in teardown),
        "teardown": teardown,
    }))
    return 0


# --------------------------------------------------------------- session jails
# Connections are made the way ttyd makes them: a new pseudo-terminal per
# connection, the command as session leader with the slave as its controlling
# terminal; on disconnect SIGHUP to the command and the master closed.
# "Prompt on screen" = the pty output contains the tenant's prompt (a unique
# PS1 that run.sh writes into every tenant's ~/.profile, read by the login
# shell tmux starts): on a reconnect tmux must redraw the pane to show it, on
# a first connection the shell must have started and printed it.

TMUX = "/usr/bin/tmux"
TERM = "xterm-256color"
ROWS, COLS = 30, 100


def tenant_identity(name):
    pw = pwd.getpwnam(name)
    return pw, (pw.pw_uid, pw.pw_gid, os.getgrouplist(name, pw.pw_gid))


def plain_env(pw):
    # What the jail gives the tenant, minus the jail: no helper, no bwrap.
    return {"HOME": pw.pw_dir, "USER": pw.pw_name, "LOGNAME": pw.pw_name, "SHELL": pw.pw_shell or "/bin/sh",
            "PATH": "/usr/bin:/bin", "TERM": TERM}


def attach_env(config):
    return dict(helper_env(config), TERM=TERM)


def gone(pids, timeout):
    """Waits until none of `pids` is alive (zombies count as gone)."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


class Connection:
    """One connection on a new pty. `creds` (uid, gid, groups): the child
    becomes the tenant before exec (the plain baseline); otherwise it execs
    the helper as root, as the root proxy does."""

    def __init__(self, argv, env, creds=None, cwd="/", fd_file=None):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.t0 = time.perf_counter_ns()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(master)
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(slave, fd)
                os.close(slave)
                if creds:
                    os.setgroups(creds[2])
                    os.setgid(creds[1])
                    os.setuid(creds[0])
                if fd_file:  # (path, fd): a file bwrap reads on that fd (its seccomp program)
                    f = os.open(fd_file[0], os.O_RDONLY)
                    if f == fd_file[1]:
                        os.set_inheritable(f, True)
                    else:
                        os.dup2(f, fd_file[1])  # inheritable
                        os.close(f)
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            except BaseException:
                pass
            os._exit(127)
        os.close(slave)
        self.pid, self.master, self.out, self.status = pid, master, bytearray(), None

    def wait_for(self, marker, timeout=15.0, since=None):
        """Milliseconds from the fork to `marker` in the output (with
        `since`, in what came after that offset), or None."""
        if since is not None and marker in self.out[since:]:
            return (time.perf_counter_ns() - self.t0) / 1e6
        poller = select.poll()
        poller.register(self.master, select.POLLIN)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not poller.poll(100):
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the slave side is gone, the command ended
                return None
            if not chunk:
                return None
            self.out += chunk
            start = len(self.out) - len(chunk) - len(marker)
            if since is not None:
                start = max(start, since)
            if marker in self.out[max(0, start):]:
                return (time.perf_counter_ns() - self.t0) / 1e6
        return None

    def processes(self):
        return [self.pid] + descendants(self.pid)

    def hangup(self, timeout=10.0):
        """SIGHUP and the master closed, then waits until every process of the
        connection (as seen just before) is gone. Returns the exit status."""
        procs = self.processes()
        try:
            os.kill(self.pid, signal.SIGHUP)
        except ProcessLookupError:
            pass
        os.close(self.master)
        fd = os.pidfd_open(self.pid)
        try:
            p = select.poll()   # not select: a bench with many ptys has fds past FD_SETSIZE
            p.register(fd, select.POLLIN)
            if not p.poll(int(timeout * 1000)):
                eprint(f"jailbench: connection {self.pid} ignored its hang-up for {timeout} s: SIGKILL")
                os.kill(self.pid, signal.SIGKILL)
        finally:
            os.close(fd)
        _, st = os.waitpid(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(st)
        if not gone(procs, timeout):
            eprint(f"jailbench: processes of connection {self.pid} still there after its hang-up: "
                   f"{[(p, comm(p)) for p in procs if alive(p)]}")
        return self.status

    def tail(self):
        return self.out[-400:].decode(errors="replace")


def run_as(creds, argv, env, timeout=30):
    def demote():
        os.setgroups(creds[2])
        os.setgid(creds[1])
        os.setuid(creds[0])
    return subprocess.run(argv, env=env, preexec_fn=demote, cwd="/", capture_output=True, text=True, timeout=timeout)


def helper(a, *args, timeout=60):
    return subprocess.run([a.bin, *args], env=helper_env(a.config), cwd="/", capture_output=True, text=True,
                          timeout=timeout)


def stop_session_jail(a, tenant):
    r = helper(a, "stop", "--user", tenant)
    if r.returncode != 0:
        raise RuntimeError(f"stop --user {tenant} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout.strip()


def supervisor_of(a, tenant):
    r = helper(a, "list", "--user", tenant)
    if r.returncode != 0:
        raise RuntimeError(f"list --user {tenant} failed ({r.returncode}): {r.stderr.strip()}")
    for word in r.stdout.split():
        if word.startswith("supervisor="):
            return int(word.split("=", 1)[1])
    return None


def kill_plain_server(creds, pw, sock):
    """Ends a plain tmux server (daemonised, so nobody's child here) and waits until it is gone."""
    r = run_as(creds, [TMUX, "-S", sock, "display-message", "-p", "#{pid}"], plain_env(pw))
    pid = int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None
    procs = [pid] + descendants(pid) if pid else []
    run_as(creds, [TMUX, "-S", sock, "kill-server"], plain_env(pw))
    if not gone(procs, 10):
        raise RuntimeError(f"the plain tmux server {pid} did not end")
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass


# Connections that failed once and succeeded when made again: reported (the
# report prints every one), not hidden; a second failure ends the run.
RETRIED = []


def connect(argv, env, creds, cwd, marker, what, fd_file=None):
    for attempt in (1, 2):
        c = Connection(argv, env, creds, cwd, fd_file)
        ms = c.wait_for(marker)
        if ms is not None:
            return c, ms
        c.hangup()
        failure = f"{what}: no prompt on screen within 15 s (status {c.status}); output: {c.tail()!r}"
        if attempt == 2:
            raise RuntimeError(failure + " (the second attempt)")
        eprint(f"jailbench: {failure}; trying once more")
        RETRIED.append(failure)


def pctl(xs, f):
    xs = sorted(xs)
    return xs[int(f * (len(xs) - 1))]


def latency_summary(xs):
    return {"median_ms": round(statistics.median(xs), 3), "p10_ms": round(pctl(xs, 0.1), 3),
            "p90_ms": round(pctl(xs, 0.9), 3), "min_ms": round(min(xs), 3), "runs": len(xs)}


def ratio_summary(rounds, num, den):
    """num/den: the ratio of the medians, and its spread: the paired ratios
    (the i-th run of num against the i-th of den in the same round, measured
    back to back) p10..p90, and the range of the per-round ratios."""
    all_n = [x for r in rounds for x in r[num]]
    all_d = [x for r in rounds for x in r[den]]
    paired = [x / y for r in rounds for x, y in zip(r[num], r[den])]
    per_round = [statistics.median(r[num]) / statistics.median(r[den]) for r in rounds]
    return {"ratio": round(statistics.median(all_n) / statistics.median(all_d), 3),
            "paired_p10": round(pctl(paired, 0.1), 3), "paired_median": round(statistics.median(paired), 3),
            "paired_p90": round(pctl(paired, 0.9), 3),
            "round_min": round(min(per_round), 3), "round_max": round(max(per_round), 3)}


# The pause after each reconnect run (cmd_reconnect).
SETTLE_S = 0.15


def interleaved(variants, rounds, runs, warmup, one):
    """Runs `one(variant)` warmup times each (untimed), then `rounds` rounds of
    `runs` per variant, interleaved ABBA so drift falls on every variant alike."""
    for _ in range(warmup):
        for v in variants:
            one(v)
    out = []
    for r in range(rounds):
        per = {v: [] for v in variants}
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for i in range(runs):
            for v in (order if i % 2 == 0 else reversed(order)):
                per[v].append(one(v))
        out.append(per)
    return out


# Typing and output through an attached connection (the front's relay
# against the direct path of the build before it): KEYS keystrokes, each
# timed from its write on the master to its echo on screen; then `cat` of
# CAT_MIB MiB of text, timed from the command's Enter to its end mark.
KEYS = 20
CAT_MIB = 4


def echo_latency_ms(c, keys=KEYS):
    """Median ms from a keystroke's write to its echo (each key erased after)."""
    out = []
    for i in range(keys):
        key = b"qwertyuiopasdfghjklz"[i % 20:i % 20 + 1]
        seen = len(c.out)
        t0 = time.perf_counter_ns()
        os.write(c.master, key)
        if c.wait_for(key, 5.0, since=seen) is None:
            raise RuntimeError(f"keystroke {key!r} not echoed within 5 s; output: {c.tail()!r}")
        out.append((time.perf_counter_ns() - t0) / 1e6)
        os.write(c.master, b"\x7f")
        time.sleep(0.02)
    return statistics.median(out)


def cat_mib_per_s(c, path, mib=CAT_MIB):
    seen = len(c.out)
    t0 = time.perf_counter_ns()
    os.write(c.master, f"cat {path}; echo CAT_$((6*7))_END\r".encode())
    if c.wait_for(b"CAT_42_END", 60.0, since=seen) is None:
        raise RuntimeError(f"cat of {mib} MiB did not end within 60 s; output: {c.tail()!r}")
    return mib / ((time.perf_counter_ns() - t0) / 1e9)


def big_file(home, uid, gid, mib=CAT_MIB):
    path = os.path.join(home, ".cjb-cat.txt")
    line = (b"".join(b"%d" % (i % 10) for i in range(79)) + b"\n")
    with open(path, "wb") as f:
        f.write(line * (mib * 1024 * 1024 // len(line)))
    os.chown(path, uid, gid)
    return path


def typing_and_output(spec_of, variants, marker, rounds=3):
    """Per variant: echo latency (ms) and cat throughput (MiB/s), one
    connection per round each, interleaved; what each measures is in its
    summary, and the ratio of the first variant's medians to the second's."""
    echo = {v: [] for v in variants}
    cat = {v: [] for v in variants}
    for r in range(rounds):
        for v in (variants if r % 2 == 0 else list(reversed(variants))):
            spec, path = spec_of[v]
            c, _ = connect(*spec, marker, f"typing ({v})")
            try:
                echo[v].append(echo_latency_ms(c))
                cat[v].append(cat_mib_per_s(c, path))
            finally:
                c.hangup()
            time.sleep(SETTLE_S)
    a, b = variants
    return {"echo_ms": {v: latency_summary(echo[v]) for v in variants},
            "cat_mib_s": {v: [round(x, 2) for x in cat[v]] for v in variants},
            f"echo_{a}_over_{b}": round(statistics.median(echo[a]) / statistics.median(echo[b]), 3),
            f"cat_{a}_over_{b}": round(statistics.median(cat[a]) / statistics.median(cat[b]), 3)}


def cmd_reconnect(a):
    """Reconnect to a running session: `clihost-jail run` (attach jail) against
    a plain `tmux attach` as the tenant on a server started outside any jail."""
    pw, creds = tenant_identity(a.tenant)
    marker = a.marker.encode()
    sock = os.path.join(pw.pw_dir, ".cjb-plain.sock")
    attach = {
        "jail": ([a.bin, "run", "--user", a.tenant, "--session", a.session], attach_env(a.config), None, "/"),
        "plain": ([TMUX, "-S", sock, "attach-session", "-t", a.session], plain_env(pw), creds, pw.pw_dir),
    }
    if a.suid_bin:
        # The production path: the setuid helper exec'd by the proxy's
        # unprivileged caller (its policy is at the helper's built-in path).
        _, caller_creds = tenant_identity(a.caller)
        attach["jail"] = ([a.suid_bin, "run", "--user", a.tenant, "--session", a.session],
                          {"PATH": "/usr/bin:/bin", "TERM": TERM}, caller_creds, "/")
    # The floor of any jail around the attach: the attach jail's own bwrap
    # argv (from `clihost-jail print`), exec'd by a process that already is
    # the tenant, with the helper's seccomp program on the plan's fd.
    words = shlex.split(a.plan)
    if words[:2] != ["env", "-i"]:
        print(json.dumps({"error": f"unexpected attach plan: {a.plan}"}))
        return 1
    i = 2
    while "=" in words[i] and not words[i].startswith("/"):
        i += 1
    floor_env = dict(w.split("=", 1) for w in words[2:i])
    floor_argv = words[i:]
    if floor_argv[-4:] != ["new-session", "-A", "-s", a.session] or "--seccomp" not in floor_argv:
        print(json.dumps({"error": f"unexpected attach plan: {a.plan}"}))
        return 1
    seccomp_fd = int(floor_argv[floor_argv.index("--seccomp") + 1])
    # `print` shows the self-contained argv (--unshare-net); an attach to a
    # running session jail joins the tenant's empty namespace instead and
    # runs that argv without it (the join, a setns by its root watcher,
    # costs microseconds), so the floor does too, in the host's namespace.
    # --floor-own-netns keeps the flag (the floor of an attach that makes
    # a namespace of its own, as before the shared one).
    if not a.floor_own_netns:
        floor_argv = [w for w in floor_argv if w != "--unshare-net"]
    # Nor does the floor wait for an account check: no --block-fd (the
    # attach's helper runs the check while bwrap sets the jail up).
    if "--block-fd" in floor_argv:
        k = floor_argv.index("--block-fd")
        del floor_argv[k:k + 2]
    floor = (floor_argv, floor_env, creds, pw.pw_dir)
    floor_fd = (a.seccomp_file, seccomp_fd)
    # Old against new (--baseline-bin, an earlier build with the same
    # built-in runtime directory): both root-called, on the same session
    # jail, interleaved with the rest.
    # The baseline reconnects to a session jail of its own, of a second
    # tenant (--baseline-tenant): a build of another record or protocol
    # version refuses the other's session jail by design.
    side = {}
    if a.baseline_bin:
        side = {"jail_root": ([a.bin, "run", "--user", a.tenant, "--session", a.session], attach_env(a.config), None, "/"),
                "base": ([a.baseline_bin, "run", "--user", a.baseline_tenant, "--session", a.session],
                         attach_env(a.config), None, "/")}
    try:
        # Set-up (untimed): the session jail with session S, started by a first
        # connection; the plain server, started as the tenant by `new-session -A`.
        first = {"jail": attach["jail"],
                 "plain": ([TMUX, "-S", sock, "new-session", "-A", "-s", a.session],) + attach["plain"][1:]}
        if side:
            first["base"] = side["base"]
        for v, spec in first.items():
            c, _ = connect(*spec, marker, f"first connection ({v})")
            c.hangup()

        def one(v):
            if v == "floor":
                c, ms = connect(*floor, marker, "reconnect (floor)", floor_fd)
            else:
                c, ms = connect(*(attach.get(v) or side[v]), marker, f"reconnect ({v})")
            c.hangup()
            # What a connection leaves to do after it (the supervisor starts
            # the next attach jail 50 ms after an attach) is done before the
            # next run, whichever variant that is: none pays for another's.
            time.sleep(SETTLE_S)
            return ms

        # Every J run must be a reconnect to the same session jail, never a
        # fresh start (which the first-connection part measures).
        sup = supervisor_of(a, a.tenant)
        rounds = interleaved(["jail", "floor", "plain", *side], a.rounds, a.runs, a.warmup, one)
        if sup is None or supervisor_of(a, a.tenant) != sup:
            raise RuntimeError(f"the session jail of {a.tenant} did not stay the same during the reconnects")
        # Typing and output through the relay, against the build before it.
        typing = {}
        if side:
            bpw, _ = tenant_identity(a.baseline_tenant)
            spec_of = {"jail_root": (side["jail_root"], big_file(pw.pw_dir, pw.pw_uid, pw.pw_gid)),
                       "base": (side["base"], big_file(bpw.pw_dir, bpw.pw_uid, bpw.pw_gid))}
            typing = typing_and_output(spec_of, ["jail_root", "base"], marker)
        # Memory of one connection of each kind while attached (both at once).
        conns = [connect(*attach[v], marker, f"attach ({v})")[0] for v in attach]
        time.sleep(0.3)
        mem = {v: [mem_of(p) for p in c.processes()] for v, c in zip(attach, conns)}
        for c in conns:
            c.hangup()
    except RuntimeError as e:
        eprint(f"jailbench: {e}")
        print(json.dumps({"error": str(e)}))
        return 1
    finally:
        try:
            kill_plain_server(creds, pw, sock)
        except RuntimeError as e:
            eprint(f"jailbench: {e}")
        if a.baseline_bin:
            subprocess.run([a.baseline_bin, "stop", "--user", a.baseline_tenant], env=helper_env(a.config), cwd="/",
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    extra = {}
    if side:
        extra = {"jail_root": latency_summary([x for r in rounds for x in r["jail_root"]]),
                 "base": latency_summary([x for r in rounds for x in r["base"]]),
                 "jail_root_over_base": ratio_summary(rounds, "jail_root", "base"),
                 "base_over_plain": ratio_summary(rounds, "base", "plain"), "typing": typing}
    print(json.dumps({
        **extra,
        "tenant": a.tenant, "rounds": a.rounds, "runs_per_round": a.runs,
        "jail": latency_summary([x for r in rounds for x in r["jail"]]),
        "plain": latency_summary([x for r in rounds for x in r["plain"]]),
        "floor": latency_summary([x for r in rounds for x in r["floor"]]),
        "jail_over_plain": ratio_summary(rounds, "jail", "plain"),
        "floor_over_plain": ratio_summary(rounds, "floor", "plain"),
        "jail_over_floor": ratio_summary(rounds, "jail", "floor"),
        "attach_mem": mem, "samples": rounds, "retried": RETRIED,
    }))
    return 0


def cmd_first(a):
    """First connection (no session jail yet): start of the session jail plus
    its attach, against a one-off jail running `tmux new-session` (the launch
    model before session jails) and a plain `tmux new-session` as the tenant."""
    pw, creds = tenant_identity(a.tenant)
    marker = a.marker.encode()
    oneoff_sock = os.path.join(pw.pw_dir, ".cjb-oneoff.sock")
    plain_sock = os.path.join(pw.pw_dir, ".cjb-first.sock")
    spec = {
        "session": ([a.bin, "run", "--user", a.tenant, "--session", a.session], attach_env(a.config), None, "/"),
        "oneoff": ([a.bin, "run", "--user", a.tenant, "--session", a.session, "--",
                    TMUX, "-S", oneoff_sock, "new-session", "-A", "-s", a.session], attach_env(a.config), None, "/"),
        "plain": ([TMUX, "-S", plain_sock, "new-session", "-A", "-s", a.session], plain_env(pw), creds, pw.pw_dir),
    }

    def one(v):
        c, ms = connect(*spec[v], marker, f"first connection ({v})")
        c.hangup()
        # Back to "nothing runs" (untimed).
        if v == "session":
            said = stop_session_jail(a, a.tenant)
            if said != f"{a.tenant}: session jail stopped":
                raise RuntimeError(f"stop after a first connection said: {said!r}")
        elif v == "plain":
            kill_plain_server(creds, pw, plain_sock)
        else:
            # The one-off jail took its tmux server along; its socket stays.
            for p in (oneoff_sock, oneoff_sock + ".lock"):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
        return ms

    try:
        said = stop_session_jail(a, a.tenant)
        eprint(f"jailbench: before the first-connection runs: {said}")
        rounds = interleaved(list(spec), a.rounds, a.runs, a.warmup, one)
    except RuntimeError as e:
        eprint(f"jailbench: {e}")
        print(json.dumps({"error": str(e)}))
        return 1
    out = {"tenant": a.tenant, "rounds": a.rounds, "runs_per_round": a.runs, "samples": rounds, "retried": RETRIED}
    for v in spec:
        out[v] = latency_summary([x for r in rounds for x in r[v]])
    out["session_over_oneoff"] = ratio_summary(rounds, "session", "oneoff")
    out["session_over_plain"] = ratio_summary(rounds, "session", "plain")
    print(json.dumps(out))
    return 0


def session_jail_roles(supervisor):
    """The processes of one session jail by role: supervisor (root), watcher
    (the tenant, the helper's image), the two bwrap processes (monitor and
    the sandbox's pid 1), what runs inside (tmux server, shell), and the
    attach jail prepared for the next connection, where the build has one
    (its watcher, two bwrap, the attach stub: comm "clihost-jail-at")."""
    roles = {"supervisor": [supervisor], "watcher": [], "bwrap": [], "inside": [], "prepared": []}
    m = ppid_map()
    for w in [p for p in descendants(supervisor) if m.get(p) == supervisor]:
        sub = [w] + descendants(w)
        if any(comm(p) == "clihost-jail-at" for p in sub):
            roles["prepared"] += sub
    for p in descendants(supervisor):
        if p in roles["prepared"]:
            continue
        if m.get(p) == supervisor and comm(p) in HELPER_COMMS:
            roles["watcher"].append(p)
        elif comm(p) == "bwrap":
            roles["bwrap"].append(p)
        else:
            roles["inside"].append(p)
    return roles


def mem_sum(ms, key):
    return sum(m[key] for m in ms)


def cmd_session_memory(a):
    """M idle session jails (one per tenant, one tmux session with its shell
    each, nobody attached), then one attach per jail, all attached at once."""
    tenants = a.tenants.split(",")[:a.m]
    if len(tenants) < a.m:
        print(json.dumps({"error": f"{a.m} session jails need {a.m} tenants"}))
        return 1
    marker = a.marker.encode()
    spec = lambda t: ([a.bin, "run", "--user", t, "--session", "idle"], attach_env(a.config), None, "/")
    try:
        for t in tenants:
            stop_session_jail(a, t)
        for t in tenants:
            c, _ = connect(*spec(t), marker, f"session jail of {t}")
            c.hangup()
        time.sleep(0.3)  # idle: let every process settle
        jails = []
        for t in tenants:
            sup = supervisor_of(a, t)
            if sup is None:
                raise RuntimeError(f"list names no session jail for {t}")
            roles = session_jail_roles(sup)
            if len(roles["watcher"]) != 1 or len(roles["bwrap"]) != 2 or not roles["inside"]:
                raise RuntimeError(f"unexpected processes in the session jail of {t}: "
                                   f"{ {k: [(p, comm(p)) for p in v] for k, v in roles.items()} }")
            jails.append({k: [mem_of(p) for p in v] for k, v in roles.items()})
        conns = [connect(*spec(t), marker, f"attach to {t}")[0] for t in tenants]
        time.sleep(0.3)
        attaches = [[mem_of(p) for p in c.processes()] for c in conns]
        for c in conns:
            c.hangup()
    except RuntimeError as e:
        eprint(f"jailbench: {e}")
        print(json.dumps({"error": str(e)}))
        return 1

    def med(xs):
        return round(statistics.median(xs), 1)

    out = {"m": a.m, "retried": RETRIED}
    for key, name in (("Pss_kib", "pss"), ("Uss_kib", "uss"), ("VmHWM_kib", "vmhwm")):
        for role in ("supervisor", "watcher", "bwrap", "inside", "prepared"):
            out[f"{role}_{name}_median"] = med([mem_sum(j[role], key) for j in jails])
        # The jail's own cost: everything but what runs inside it (the
        # prepared attach jail included).
        out[f"jail_{name}_median"] = med([sum(mem_sum(j[r], key) for r in ("supervisor", "watcher", "bwrap", "prepared"))
                                          for j in jails])
        out[f"attach_{name}_median"] = med([mem_sum(x, key) for x in attaches])
    out["jail_example"] = jails[0]
    out["attach_example"] = attaches[0]
    print(json.dumps(out))
    return 0


# -------------------------------------------------------------------- leftovers

def host_mounts(names):
    """Mounts in our own (the host's) mount namespace that name a tenant, and nsfs mounts."""
    ours, nsfs = [], 0
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if " - nsfs " in line:
                nsfs += 1
            if any(n in line for n in names):
                ours.append(line.strip())
    return ours, nsfs


def scan_once(uids, names, binary, runtime_dir):
    procs, zombies, helpers, loginuid, mntns = [], [], [], [], set()
    for p in pids():
        if p == os.getpid():
            continue
        s = status_fields(p)
        if s is None:
            continue
        uid = [int(x) for x in s["Uid"].split()]
        zombie = s.get("State", "").startswith("Z")
        if uids & set(uid):
            (zombies if zombie else procs).append(
                {"pid": p, "comm": s.get("Name"), "uid": uid[0], "ppid": int(s.get("PPid", "0"))})
            try:
                mntns.add(os.readlink(f"/proc/{p}/ns/mnt"))
            except OSError:
                pass
        if zombie:
            continue
        try:
            exe = os.readlink(f"/proc/{p}/exe")
        except OSError:
            exe = ""
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv = [x.decode(errors="replace") for x in f.read().split(b"\0")]
        except OSError:
            argv = []
        # Only helpers started for our tenants: other runs on the host are not ours.
        if names & set(argv) and (exe.split(" (deleted)")[0] == binary or
                                  argv[0].endswith(("clihost-jail", "clihost-jail-supervisor"))):
            helpers.append({"pid": p, "argv": argv[:6]})
        try:
            with open(f"/proc/{p}/loginuid") as f:
                lu = int(f.read().strip())
            if lu in uids:
                loginuid.append({"pid": p, "loginuid": lu, "comm": s.get("Name")})
        except (OSError, ValueError):
            pass
    mounts, nsfs = host_mounts(names)
    records, locks = runtime_entries(runtime_dir, uids)
    return {"tenant_processes": procs, "tenant_zombies": zombies, "helper_processes": helpers,
            "tenant_loginuid": loginuid, "tenant_mount_namespaces": len(mntns),
            "host_mounts_naming_tenants": mounts, "host_nsfs_mounts": nsfs,
            "runtime_records": records, "runtime_locks": locks}


def runtime_entries(runtime_dir, uids):
    """The helper's runtime directory entries of our tenants: session records
    (UID.state, and UID.state.tmpPID half-written) mean a session jail is
    running or its end was not cleaned up; UID.lock files are the per-tenant
    flock files, which the helper never removes."""
    records, locks = [], []
    if not runtime_dir:
        return records, locks
    try:
        names = os.listdir(runtime_dir)
    except FileNotFoundError:
        return records, locks
    for n in names:
        uid, _, rest = n.partition(".")
        if not uid.isdigit() or int(uid) not in uids:
            continue
        (locks if rest == "lock" else records).append(n)
    return sorted(records), sorted(locks)


def cmd_scan(a):
    uids = {int(u) for u in a.uids.split(",")}
    names = set(a.names.split(","))
    r = scan_once(uids, names, a.bin, a.runtime_dir)
    # Zombies have exited; whoever is their parent still has to reap them. When
    # that parent is the host's init (bwrap's pid 1 outlives bwrap's monitor by
    # a moment and is re-parented), wait up to --settle seconds for init.
    r["zombies_first_seen"] = r["tenant_zombies"][:5]
    r["zombies_first_count"] = len(r["tenant_zombies"])
    t0 = time.monotonic()
    while r["tenant_zombies"] and time.monotonic() - t0 < a.settle:
        time.sleep(0.1)
        first = (r["zombies_first_seen"], r["zombies_first_count"])
        r = scan_once(uids, names, a.bin, a.runtime_dir)
        r["zombies_first_seen"], r["zombies_first_count"] = first
    r["zombies_settle_s"] = round(time.monotonic() - t0, 2)
    print(json.dumps(r))


# --------------------------------------------------------------------- report

def cmd_report(a):
    w = a.workdir
    load = lambda n: json.load(open(os.path.join(w, n)))
    lat, conc, sess = load("latency.json"), load("concurrent.json"), load("sessions.json")
    before, after, final = load("scan-before.json"), load("scan-after-concurrency.json"), load("scan-final.json")
    rec, first, sjm = load("reconnect.json"), load("first.json"), load("session-memory.json")
    logind = [open(os.path.join(w, n)).read().strip() for n in ("logind-after-concurrency.txt", "logind-final.txt")]
    loadavg = [open(os.path.join(w, n)).read().split()[0] for n in ("loadavg-start.txt", "loadavg-end.txt")]
    quick = a.quick == "1"
    m = {k: v["median_ms"] for k, v in lat.items()}
    p10 = {k: v["p10_ms"] for k, v in lat.items()}
    cpu = {k: v["cpu_ms"] for k, v in lat.items()}

    print()
    print(f"clihost-jail launch benchmark: `true` in the jail, {lat['A']['runs']} runs per variant"
          f"{' (QUICK)' if quick else ''}; load average {loadavg[0]} at start, {loadavg[1]} at end")
    names = {"A0": "bwrap exec'd by the tenant itself (floor, info)",
             "A": "setpriv --reuid --regid --init-groups -- bwrap",
             "B": "runuser -u T -- bwrap   (today's chain)",
             "C": "clihost-jail run, session = false (setuid, caller)",
             "Cw": "C, the tenant's supervisor already running",
             "D": "clihost-jail run, PAM session (setuid, caller)",
             "Cr": "C called by root (info)",
             "Dr": "D called by root (info)",
             "Cb": "Cr with the baseline helper (CLIHOST_BENCH_BASELINE)",
             "Db": "Dr with the baseline helper"}
    for k in [k for k in ("A0", "A", "B", "C", "Cw", "D", "Cr", "Dr", "Cb", "Db") if k in lat]:
        v = lat[k]
        print(f"  {k:<2} {names[k]:<50} median {v['median_ms']:6.2f} ms  p10 {v['p10_ms']:6.2f}  "
              f"p90 {v['p90_ms']:6.2f}  cpu {v['cpu_ms']:5.2f} ms")
    rounds = {k: v["rounds_ms"] for k, v in lat.items()}
    nrounds = len(rounds["A"])

    def lratio(num, den):
        """num/den of the medians, with the range of the per-round ratios and
        the p10..p90 of run-by-run pairs (run i of num against run i of den,
        in the same round)."""
        per_round = [statistics.median(rounds[num][i]) / statistics.median(rounds[den][i]) for i in range(nrounds)]
        paired = [x / y for i in range(nrounds) for x, y in zip(rounds[num][i], rounds[den][i])]
        return {"ratio": round(m[num] / m[den], 3), "round_min": round(min(per_round), 3),
                "round_max": round(max(per_round), 3), "paired_p10": round(pctl(paired, 0.1), 3),
                "paired_p90": round(pctl(paired, 0.9), 3)}

    def overhead(d, c, b, a):
        """(d - c) / (b - a): what our PAM session adds over what runuser's adds."""
        med = lambda k, i: statistics.median(rounds[k][i])
        per_round = [(med(d, i) - med(c, i)) / (med(b, i) - med(a, i)) for i in range(nrounds)
                     if med(b, i) != med(a, i)]
        return {"ratio": round((m[d] - m[c]) / (m[b] - m[a]), 3) if m[b] != m[a] else float("inf"),
                "round_min": round(min(per_round), 3) if per_round else None,
                "round_max": round(max(per_round), 3) if per_round else None}

    def rspread(r):
        out = f"per-round {r['round_min']}..{r['round_max']}"
        return out + (f", paired p10..p90 {r['paired_p10']}..{r['paired_p90']}" if "paired_p10" in r else "")

    ca, db = lratio("C", "A"), lratio("D", "B")
    pam_over = overhead("D", "C", "B", "A")
    car, dbr = lratio("Cr", "A"), lratio("Dr", "B")
    pam_over_r = overhead("Dr", "Cr", "B", "A")
    cwa = lratio("Cw", "A")
    print(f"  Cw/A = {cwa['ratio']:.3f}   ({rspread(cwa)}; p10 {p10['Cw'] / p10['A']:.3f},"
          f" cpu {cpu['Cw'] / cpu['A']:.3f}): a one-off jail, the tenant's supervisor running")
    print(f"  C/A = {ca['ratio']:.3f}   ({rspread(ca)}; p10 {p10['C'] / p10['A']:.3f}, cpu {cpu['C'] / cpu['A']:.3f}):"
          f" the tenant's first one-off (its supervisor's start included; C-Cw {m['C'] - m['Cw']:+.2f} ms)")
    print(f"  (D-C)/(B-A) = {pam_over['ratio']:.3f}   ({rspread(pam_over)}): the PAM session's cost over runuser's;"
          f" D-C {m['D'] - m['C']:+.2f} ms, B-A {m['B'] - m['A']:+.2f} ms")
    print(f"  D/B = {db['ratio']:.3f}   ({rspread(db)}; p10 {p10['D'] / p10['B']:.3f}, cpu {cpu['D'] / cpu['B']:.3f})")
    print(f"  called by root: Cr/A = {car['ratio']:.3f} ({rspread(car)}); Dr/B = {dbr['ratio']:.3f} ({rspread(dbr)});"
          f" (Dr-Cr)/(B-A) = {pam_over_r['ratio']:.3f} ({rspread(pam_over_r)})")
    print(f"  (helper over the setpriv floor: C-A {m['C'] - m['A']:+.2f} ms; setuid exec by the caller over root's:"
          f" C-Cr {m['C'] - m['Cr']:+.2f} ms)")
    baseline = None
    if "Cb" in lat and "Db" in lat:
        # The same policies run by another build of the helper (root-called,
        # as Cr and Dr), interleaved with everything else: old and new side by side.
        cbr, dbb, pam_over_b = lratio("Cb", "A"), lratio("Db", "B"), overhead("Db", "Cb", "B", "A")
        new_old_c, new_old_d = lratio("Cr", "Cb"), lratio("Dr", "Db")
        print(f"  baseline helper, root-called: Cb/A = {cbr['ratio']:.3f} ({rspread(cbr)}); Db/B = {dbb['ratio']:.3f};"
              f" (Db-Cb)/(B-A) = {pam_over_b['ratio']:.3f} ({rspread(pam_over_b)})")
        print(f"  this helper against the baseline: Cr/Cb = {new_old_c['ratio']:.3f} ({rspread(new_old_c)}),"
              f" Dr/Db = {new_old_d['ratio']:.3f} ({rspread(new_old_d)}); cpu Cr/Cb {cpu['Cr'] / cpu['Cb']:.3f},"
              f" Dr/Db {cpu['Dr'] / cpu['Db']:.3f}")
        baseline = {"Cb_ms": m["Cb"], "Db_ms": m["Db"], "Cb_over_A": cbr["ratio"], "Db_over_B": dbb["ratio"],
                    "pam_overhead_baseline": pam_over_b["ratio"], "Cr_over_Cb": new_old_c["ratio"],
                    "Cr_over_Cb_spread": [new_old_c["round_min"], new_old_c["round_max"]],
                    "Dr_over_Db": new_old_d["ratio"], "Dr_over_Db_spread": [new_old_d["round_min"], new_old_d["round_max"]],
                    "Cb_cpu_ms": cpu["Cb"], "Db_cpu_ms": cpu["Db"], "Cr_cpu_ms": cpu["Cr"], "Dr_cpu_ms": cpu["Dr"]}

    def leftovers(scan, logind_n):
        return {
            "live tenant processes": len(scan["tenant_processes"]),
            "helper processes": len(scan["helper_processes"]),
            "live processes with a tenant loginuid": len(scan["tenant_loginuid"]),
            "mount namespaces of tenant processes": scan["tenant_mount_namespaces"],
            "host mounts naming a tenant": len(scan["host_mounts_naming_tenants"]),
            "new nsfs mounts": max(scan["host_nsfs_mounts"] - before["host_nsfs_mounts"], 0),
            "tenant zombies still unreaped": len(scan["tenant_zombies"]),
            "logind sessions of tenants": 0 if logind_n == "unavailable" else int(logind_n),
            "session records in the runtime directory": len(scan["runtime_records"]),
        }

    def show_leftovers(scan, logind_n):
        lo = leftovers(scan, logind_n)
        print("  left afterwards: " + ", ".join(f"{v} {k}" for k, v in lo.items()))
        if logind_n == "unavailable":
            print("  logind: not running here, so logind sessions cannot be checked")
        if scan["zombies_first_count"]:
            z = scan["zombies_first_seen"][0]
            print(f"  NOTE: {scan['zombies_first_count']} tenant process(es) (e.g. {z['comm']} pid {z['pid']}) were still"
                  f" zombies, re-parented to pid {z['ppid']} when their parent (a helper, a jail's bwrap, or a"
                  f" daemonised tmux server of the plain baselines) had exited; that parent reaped them"
                  f" within {scan['zombies_settle_s']} s")
        for p in (scan["tenant_processes"] + scan["helper_processes"] + scan["runtime_records"])[:5]:
            print(f"  left: {p}")
        return sum(lo.values())

    print()
    print(f"concurrency: {conc['n']} launches at once across {conc['tenants']} tenants, `sleep {conc['sleep_s']}` each, PAM on")
    print(f"  failures {conc['failures']} (exit statuses {conc['exit_statuses']}); wall {conc['wall_s']:.2f} s"
          f" = sleep + {conc['overhead_s']:.2f} s (first exit {conc['first_exit_s']:.2f} s, last {conc['last_exit_s']:.2f} s)")
    for f in conc["failure_samples"]:
        print(f"  failed: {f}")
    left_conc = show_leftovers(after, logind[0])

    mib = lambda k: k / 1024
    print()
    print(f"memory: {sess['m']} idle PAM sessions at once (waiting parent -> bwrap -> bwrap pid 1 -> sleep)")
    print(f"  waiting parent: VmHWM median {mib(sess['helper_VmHWM_kib_median']):.2f} MiB"
          f" (max {mib(sess['helper_VmHWM_kib_max']):.2f}); Pss {mib(sess['helper_Pss_kib_median']):.2f} MiB;"
          f" USS {mib(sess['helper_Uss_kib_median']):.2f} MiB")
    own = sess["session_own_kib_median"]
    watched = sess["watcher_VmHWM_kib_median"] is not None
    who = "root parent + watcher" if watched else "the root parent, its only process"
    print(f"  private memory per session ({who}): pages only it maps, each counted once,"
          f" median {mib(own):.2f} MiB (max {mib(sess['session_own_kib_max']):.2f}); summed Pss / {sess['m']}"
          f" {mib(sess['session_pss_kib_per_session']):.2f} MiB; USS {mib(sess['session_uss_kib_median']):.2f} MiB;"
          f" beside it VmHWM of the parent {mib(sess['helper_VmHWM_kib_median']):.2f} MiB" if own is not None else
          "  private memory per session: pagemap unreadable")
    if watched:
        print(f"  watcher: VmHWM median {mib(sess['watcher_VmHWM_kib_median']):.2f} MiB;"
              f" Pss {mib(sess['watcher_Pss_kib_median']):.2f} MiB; USS {mib(sess['watcher_Uss_kib_median']):.2f} MiB")
    print(f"  whole chain per session: sum VmHWM {mib(sess['chain_VmHWM_kib_median']):.2f} MiB,"
          f" sum VmRSS {mib(sess['chain_VmRSS_kib_median']):.2f} MiB, sum Pss {mib(sess['chain_Pss_kib_median']):.2f} MiB,"
          f" sum USS {mib(sess['chain_Uss_kib_median']):.2f} MiB")
    for p in sess["chain_example"]:
        print(f"    {p['comm']:<13} uid {p['uid']:<6} VmHWM {p['VmHWM_kib']:5d} KiB  VmRSS {p['VmRSS_kib']:5d} KiB"
              f"  Pss {p['Pss_kib']:5d} KiB  USS {p['Uss_kib']:5d} KiB")
    print()
    print("teardown: SIGTERM to the waiting parent -> every jail process exited, helper exited and reaped")
    print(f"  median {sess['teardown_ms_median']:.2f} ms, max {sess['teardown_ms_max']:.2f} ms"
          f" (jail processes all exited after {sess['teardown_jail_gone_ms_median']} ms median);"
          f" helper statuses {sess['teardown_helper_statuses']}; live survivors {sess['teardown_survivors']};"
          f" zombies of jail processes when the helper had exited: {sess['teardown_zombies']}")

    def lat(v, name):
        print(f"  {name:<58} median {v['median_ms']:6.2f} ms  p10 {v['p10_ms']:6.2f}  p90 {v['p90_ms']:6.2f}")

    def spread(r):
        return (f"paired p10..p90 {r['paired_p10']:.2f}..{r['paired_p90']:.2f},"
                f" per-round {r['round_min']:.2f}..{r['round_max']:.2f}")

    rr, fo, fp = rec["jail_over_plain"], first["session_over_oneoff"], first["session_over_plain"]
    jf, fp0 = rec["jail_over_floor"], rec["floor_over_plain"]
    print()
    print(f"session jails, reconnect (the session runs): fork to the prompt on a new pty, "
          f"{rec['rounds']} rounds x {rec['runs_per_round']} interleaved, PAM on")
    lat(rec["jail"], "J  clihost-jail run (attach jail; setuid, caller)")
    lat(rec["floor"], "J0 the attach jail's bwrap exec'd by the tenant (floor)")
    lat(rec["plain"], "P  tmux attach exec'd as the tenant (no jail)")
    print(f"  J/P = {rr['ratio']:.3f}   ({spread(rr)}); J-P {rec['jail']['median_ms'] - rec['plain']['median_ms']:+.2f} ms")
    print(f"  J0/P = {fp0['ratio']:.3f} ({spread(fp0)}): the jail alone;"
          f"  J/J0 = {jf['ratio']:.3f} ({spread(jf)}): the helper (J-J0 {rec['jail']['median_ms'] - rec['floor']['median_ms']:+.2f} ms)")
    if "base" in rec:
        jb, bp = rec["jail_root_over_base"], rec["base_over_plain"]
        lat(rec["jail_root"], "Jr J called by root (info)")
        lat(rec["base"], "Jb Jr with the baseline helper (CLIHOST_BENCH_BASELINE)")
        print(f"  this helper against the baseline: Jr/Jb = {jb['ratio']:.3f} ({spread(jb)}); Jb/P = {bp['ratio']:.3f}")
        baseline = baseline if baseline is not None else {}
        baseline.update({"Jr_ms": rec["jail_root"]["median_ms"], "Jb_ms": rec["base"]["median_ms"],
                         "Jr_over_Jb": jb["ratio"], "Jr_over_Jb_spread": [jb["round_min"], jb["round_max"]],
                         "Jb_over_P": bp["ratio"]})
        ty = rec.get("typing") or {}
        if ty:
            e, c = ty["echo_ms"], ty["cat_mib_s"]
            print(f"  typing through the relay against the baseline's direct terminal: a keystroke's echo "
                  f"{e['jail_root']['median_ms']:.2f} ms against {e['base']['median_ms']:.2f} ms "
                  f"(Er/Eb = {ty['echo_jail_root_over_base']:.3f}); cat of {CAT_MIB} MiB "
                  f"{statistics.median(c['jail_root']):.1f} MiB/s against {statistics.median(c['base']):.1f} MiB/s "
                  f"(throughput ratio {ty['cat_jail_root_over_base']:.3f})")
            baseline.update({"echo_r_ms": e["jail_root"]["median_ms"], "echo_b_ms": e["base"]["median_ms"],
                             "echo_r_over_b": ty["echo_jail_root_over_base"],
                             "cat_r_mib_s": statistics.median(c["jail_root"]),
                             "cat_b_mib_s": statistics.median(c["base"]),
                             "cat_r_over_b": ty["cat_jail_root_over_base"]})
    print(f"first connection (nothing runs): {first['rounds']} rounds x {first['runs_per_round']} interleaved")
    lat(first["session"], "F  clihost-jail run: session jail start + attach")
    lat(first["oneoff"], "O  clihost-jail run -- tmux new-session (one-off jail)")
    lat(first["plain"], "P1 tmux new-session exec'd as the tenant (no jail)")
    print(f"  F/O = {fo['ratio']:.3f} ({spread(fo)});  F/P1 = {fp['ratio']:.3f} ({spread(fp)})")
    print(f"  (for reference, D above: one-off jail running `true`, {m['D']:.2f} ms)")
    print(f"memory: {sjm['m']} idle session jails (one tmux session, a shell, nobody attached), median per jail")
    for role, name in (("supervisor", "supervisor (root)"), ("watcher", "watcher (tenant)"),
                       ("bwrap", "bwrap monitor + sandbox pid 1"),
                       ("prepared", "attach jail prepared: watcher, bwrap x2, stub"),
                       ("jail", "= the session jail's own processes"),
                       ("inside", "inside: tmux server + shell (reported apart)"),
                       ("attach", "per attach: bwrap x2 + tmux client, attached")):
        if role + "_pss_median" not in sjm:
            continue
        print(f"  {name:<46} Pss {mib(sjm[role + '_pss_median']):5.2f} MiB  USS {mib(sjm[role + '_uss_median']):5.2f} MiB"
              f"  (sum VmHWM {mib(sjm[role + '_vmhwm_median']):5.2f} MiB)")
    pm = rec["attach_mem"]["plain"]
    print(f"  (a plain tmux client, for reference: Pss {mib(mem_sum(pm, 'Pss_kib')):.2f} MiB,"
          f" USS {mib(mem_sum(pm, 'Uss_kib')):.2f} MiB)")

    retried = rec["retried"] + first["retried"] + sjm["retried"]
    for f in retried:
        print(f"  NOTE: a connection failed and succeeded when made again: {f}")

    print()
    print("at the end: `stop` for every tenant, then")
    left_final = show_leftovers(final, logind[1])
    if final["runtime_locks"]:
        print(f"  NOTE: {len(final['runtime_locks'])} per-tenant lock file(s) (UID.lock) stay in the runtime directory"
              " (the helper never removes them; the bench deletes them with its tenants)")
    print("  (not checkable: PAM modules' private state; pam_keyinit's revoked session keyrings stay listed in"
          " /proc/key-users until the kernel's key GC, gc_delay, runs)")

    pss_session = sess["session_pss_kib_per_session"]
    own_session = sess["session_own_kib_median"] if sess["session_own_kib_median"] is not None else float("inf")
    targets = [
        ("Cw/A <= 1.10", cwa["ratio"] <= 1.10,
         f"{cwa['ratio']:.3f} ({rspread(cwa)}); the first one-off (supervisor start) C/A {ca['ratio']:.3f}"),
        ("(D-C)/(B-A) <= 1.10", pam_over["ratio"] <= 1.10,
         f"{pam_over['ratio']:.3f} ({rspread(pam_over)}); D/B {db['ratio']:.3f}"),
        ("private memory/session <= 1 MiB", own_session <= 1024,
         f"{mib(own_session):.2f} MiB own pages, {mib(pss_session):.2f} MiB summed Pss (the helper's processes);"
         f" VmHWM parent {mib(sess['helper_VmHWM_kib_max']):.2f} MiB max"),
        ("teardown < 50 ms", sess["teardown_ms_max"] < 50, f"max {sess['teardown_ms_max']:.2f} ms"),
        (f"0 failures at N={conc['n']}", conc["failures"] == 0, f"{conc['failures']} failures"),
        ("first connection F/O <= 1.25", fo["ratio"] <= 1.25,
         f"{fo['ratio']:.3f} ({spread(fo)}; F {first['session']['median_ms']:.2f} ms,"
         f" O {first['oneoff']['median_ms']:.2f} ms)"),
        ("reconnect <= 1.3x tmux attach", rr["ratio"] <= 1.3,
         f"{rr['ratio']:.3f} ({spread(rr)}; J {rec['jail']['median_ms']:.2f} ms vs P {rec['plain']['median_ms']:.2f} ms;"
         f" the jail alone J0/P {fp0['ratio']:.3f})"),
    ]
    print()
    for name, ok, detail in targets:
        print(f"  {'PASS' if ok else 'MISS'}  {name:<28} {detail}")
    left = left_conc + left_final + sess["teardown_survivors"]
    summary = {
        "quick": quick, "loadavg_start": float(loadavg[0]),
        "A0_ms": m["A0"], "A_ms": m["A"], "B_ms": m["B"], "C_ms": m["C"], "D_ms": m["D"],
        "A_cpu_ms": cpu["A"], "B_cpu_ms": cpu["B"], "C_cpu_ms": cpu["C"], "D_cpu_ms": cpu["D"],
        "Cr_ms": m["Cr"], "Dr_ms": m["Dr"], "C_cpu_ms_root": cpu["Cr"],
        "Cw_ms": m["Cw"], "Cw_over_A": cwa["ratio"], "Cw_over_A_spread": [cwa["round_min"], cwa["round_max"]],
        "C_over_A": ca["ratio"], "C_over_A_spread": [ca["round_min"], ca["round_max"]],
        "C_over_A_paired_p10_p90": [ca["paired_p10"], ca["paired_p90"]],
        "D_over_B": db["ratio"], "D_over_B_spread": [db["round_min"], db["round_max"]],
        "pam_overhead": pam_over["ratio"], "pam_overhead_spread": [pam_over["round_min"], pam_over["round_max"]],
        "Cr_over_A": car["ratio"], "Dr_over_B": dbr["ratio"], "pam_overhead_root": pam_over_r["ratio"],
        "session_pss_kib": pss_session, "session_own_kib": sess["session_own_kib_median"],
        "watcher_vmhwm_kib": sess["watcher_VmHWM_kib_median"],
        "conc_n": conc["n"], "conc_failures": conc["failures"], "conc_wall_s": conc["wall_s"],
        "leftovers": left, "zombies_reparented": after["zombies_first_count"] + final["zombies_first_count"],
        "helper_vmhwm_kib": sess["helper_VmHWM_kib_max"], "helper_uss_kib": sess["helper_Uss_kib_median"],
        "chain_vmhwm_kib": sess["chain_VmHWM_kib_median"], "chain_pss_kib": sess["chain_Pss_kib_median"],
        "teardown_ms_median": sess["teardown_ms_median"], "teardown_ms_max": sess["teardown_ms_max"],
        "reconnect_J_ms": rec["jail"]["median_ms"], "reconnect_P_ms": rec["plain"]["median_ms"],
        "J_over_P": rr["ratio"], "J_over_P_p10": rr["paired_p10"], "J_over_P_p90": rr["paired_p90"],
        "J_over_P_spread": [rr["round_min"], rr["round_max"]],
        "reconnect_J0_ms": rec["floor"]["median_ms"], "J0_over_P": fp0["ratio"],
        "J0_over_P_spread": [fp0["round_min"], fp0["round_max"]], "J_over_J0": jf["ratio"],
        "J_over_J0_spread": [jf["round_min"], jf["round_max"]],
        "first_F_ms": first["session"]["median_ms"], "first_O_ms": first["oneoff"]["median_ms"],
        "first_P1_ms": first["plain"]["median_ms"], "F_over_O": fo["ratio"], "F_over_P1": fp["ratio"],
        "F_over_O_spread": [fo["round_min"], fo["round_max"]], "F_over_P1_spread": [fp["round_min"], fp["round_max"]],
        "sj_pss_kib": sjm["jail_pss_median"], "sj_uss_kib": sjm["jail_uss_median"],
        "sj_inside_pss_kib": sjm["inside_pss_median"], "attach_pss_kib": sjm["attach_pss_median"],
        "attach_uss_kib": sjm["attach_uss_median"], "runtime_locks_left": len(final["runtime_locks"]),
        "connections_retried": len(retried),
        "targets": {name: ("PASS" if ok else "MISS") for name, ok, _ in targets},
    }
    if baseline is not None:
        summary["baseline"] = baseline
    print()
    print("BENCH " + json.dumps(summary, separators=(",", ":")))
    return 1 if conc["failures"] or left else 0



def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stats")
    s.add_argument("variant", nargs="+", help="NAME=file.json[,file.json...]")
    la = sub.add_parser("latency")
    la.add_argument("--variants", required=True, help="JSON: [{name, argv, env, as?, fds?, policy?}]")
    la.add_argument("--policy-file", default="")
    la.add_argument("--rounds", type=int, required=True)
    la.add_argument("--runs", type=int, required=True, help="per variant and round")
    la.add_argument("--warmup", type=int, default=3)
    c = sub.add_parser("concurrent")
    for p in (c,):
        p.add_argument("--n", type=int, required=True)
        p.add_argument("--sleep", type=int, default=2)
    m = sub.add_parser("sessions")
    m.add_argument("--m", type=int, required=True)
    for p in (c, m):
        p.add_argument("--bin", required=True)
        p.add_argument("--config", required=True)
        p.add_argument("--tenants", required=True)
        p.add_argument("--workdir", required=True)
    sc = sub.add_parser("scan")
    sc.add_argument("--bin", required=True)
    sc.add_argument("--uids", required=True)
    sc.add_argument("--names", required=True)
    sc.add_argument("--settle", type=float, default=0)
    sc.add_argument("--runtime-dir", default="", help="the helper's runtime directory (its `check` names it)")
    rc = sub.add_parser("reconnect")
    rc.add_argument("--suid-bin", default="", help="J: this setuid copy of the helper, run by --caller")
    rc.add_argument("--caller", default="")
    fc = sub.add_parser("first")
    for p in (rc, fc):
        p.add_argument("--tenant", required=True)
        p.add_argument("--session", required=True)
        p.add_argument("--rounds", type=int, required=True)
        p.add_argument("--runs", type=int, required=True, help="per variant and round")
        p.add_argument("--warmup", type=int, default=1)
    rc.add_argument("--plan", required=True, help="the attach jail's plan, the last line of `clihost-jail print`")
    rc.add_argument("--seccomp-file", required=True, help="the seccomp program the helper hands bwrap")
    rc.add_argument("--baseline-bin", default="",
                    help="another build of the helper: Jr (this one) and Jb (that one), root-called, interleaved")
    rc.add_argument("--baseline-tenant", default="",
                    help="the tenant whose session jail the baseline reconnects to (not --tenant's)")
    rc.add_argument("--floor-own-netns", action="store_true",
                    help="J0 keeps --unshare-net (an attach jail with a network namespace of its own)")
    sm = sub.add_parser("session-memory")
    sm.add_argument("--m", type=int, required=True)
    sm.add_argument("--tenants", required=True)
    for p in (rc, fc, sm):
        p.add_argument("--bin", required=True)
        p.add_argument("--config", required=True)
        p.add_argument("--marker", required=True, help="the tenants' prompt (PS1), as the pty shows it")
    r = sub.add_parser("report")
    r.add_argument("--workdir", required=True)
    r.add_argument("--quick", default="0")
    a = ap.parse_args()
    return {"stats": cmd_stats, "latency": cmd_latency, "concurrent": cmd_concurrent, "sessions": cmd_sessions,
            "reconnect": cmd_reconnect, "first": cmd_first, "session-memory": cmd_session_memory,
            "scan": cmd_scan, "report": cmd_report}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
