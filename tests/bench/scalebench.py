#!/usr/bin/python3
"""tests/bench/scalebench.py: N tenants, each with a session jail and one
attached client (issue 24). Run by tests/bench/run.sh --scale N, which makes
the tenants, the unprivileged caller, the setuid copy of the helper and its
policy (network = isolated, PAM on), and removes them afterwards.

One tenant after another, the caller (the proxy's role) runs the setuid
helper on a new pty the way ttyd does (jailbench's Connection): `run --user
T --session S` starts T's session jail and attaches; the client stays
attached. Measured:

  starts    fork to the tenant's prompt on screen, per tenant; the median of
            the last ten against the first ten (target <= 1.2)
  memory    one idle tenant alone (only the first is up): Pss of each of its
            processes by role, smaps_rollup (target <= 6 MiB); USS
            (Private_Clean + Private_Dirty) of every tenant's processes at
            N/2 and at N: per tenant, and the slope (target <= 2 MiB)
  list      `list` and `list --json` of all, as the caller, 5 times each,
            interleaved: median and max (target <= 0.5 s); each must list
            every tenant with its session
  stop      `stop --user T` for every tenant, all started at once (as the
            caller): wall time until every process of every tenant is gone
            (target <= 10 s)
  leftovers no process of any tenant, no runtime record, no cgroup of
            theirs, no mount naming them (exit 1 if any)

Prints a table on stdout, then one machine-readable line `SCALE {...}`.
Exit 1 if something failed to run or anything was left behind.
"""
import argparse
import glob
import json
import os
import resource
import select
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jailbench import (TERM, TMUX, alive, comm, connect, descendants, eprint, fork_gated,  # noqa: E402
                       kill_plain_server, plain_env, ppid_map, rollup_kib, run_as, scan_once, status_fields, tenant_identity)

MIB = 1024.0


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def threads(pid):
    s = status_fields(pid) or {}
    return int(s.get("Threads", "0") or 0)


def cpu_ticks(pids_):
    """CPU time (clock ticks) of these processes and of their children they
    have reaped (utime, stime, cutime, cstime): a supervisor's covers its
    query jails once they are reaped, a tmux server's its answers."""
    n = 0
    for p in pids_:
        try:
            with open(f"/proc/{p}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        n += sum(int(x) for x in rest[11:15])
    return n


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


HZ = os.sysconf("SC_CLK_TCK")


class Tenant:
    def __init__(self, name):
        self.name = name
        self.pw, self.creds = tenant_identity(name)
        self.conn = None         # the attached client (its front is conn.pid)
        self.start_ms = None
        self.supervisor = None

    def roles(self, tree=None):
        """Every process of this tenant by role: the front (what ttyd runs),
        the supervisor and what descends from it. A child of the supervisor
        that is the helper's image is a watcher: the session watcher if a tmux
        server is below it, the prepared attach jail's if the attach stub
        waits below it, else the connection watcher (the attach).
        tree: a ProcTree taken once for all tenants (one scan of /proc, not
        one per process: at 1,000 tenants /proc holds 16,000 processes)."""
        tree = tree or ProcTree()
        out = {}

        def add(role, p):
            out.setdefault(role, []).append(p)

        if self.conn is not None:
            for p in [self.conn.pid] + tree.descendants(self.conn.pid):
                if alive(p):
                    add("front", p)
        if self.supervisor is None or not alive(self.supervisor):
            return out
        add("supervisor", self.supervisor)
        for child in tree.children(self.supervisor):
            sub = [child] + tree.descendants(child)
            names = {p: comm(p) or "" for p in sub}
            if names[child] == "slirp4netns":
                for p in sub:
                    add("slirp4netns", p)
                continue
            if names[child] not in ("clihost-jail", "clihost-jail-su"):  # a watcher (split or not)
                for p in sub:
                    add("other", p)
                continue
            session = any(n.startswith("tmux: server") for n in names.values())
            # The attach jail prepared for the next connection: its stub waits.
            prepared = any(n == "clihost-jail-at" for n in names.values())
            kind = "session" if session else "prepared" if prepared else "attach"
            add(f"{kind} watcher", child)
            for p in sub[1:]:
                n = names[p]
                if n == "bwrap":
                    add(f"{kind} bwrap", p)
                elif n.startswith("tmux: server"):
                    add("tmux server", p)
                elif n.startswith("tmux"):
                    add("tmux client", p)
                elif kind == "session":
                    add("shell", p)   # what runs in the tmux session: the login shell
                elif kind == "prepared":
                    add("prepared stub", p)
                else:
                    add("attach other", p)
        return out

    def processes(self, tree=None):
        return [p for ps in self.roles(tree).values() for p in ps]


class ProcTree:
    """The parent of every process, read from /proc once."""

    def __init__(self):
        self.kids = {}
        for p, pp in ppid_map().items():
            self.kids.setdefault(pp, []).append(p)

    def children(self, pid):
        return sorted(self.kids.get(pid, []))

    def descendants(self, root):
        out, todo = [], [root]
        while todo:
            p = todo.pop()
            for c in self.children(p):
                out.append(c)
                todo.append(c)
        return out


def memory(tenant, tree=None):
    """Pss and USS (KiB) by role, and the tasks (threads) of its processes."""
    by_role = {}
    for role, ps in tenant.roles(tree).items():
        pss = uss = tasks = 0
        for p in ps:
            a, b = rollup_kib(p)
            pss, uss, tasks = pss + a, uss + b, tasks + threads(p)
        by_role[role] = {"n": len(ps), "pss_kib": pss, "uss_kib": uss, "tasks": tasks,
                         "comm": sorted({comm(p) or "?" for p in ps})}
    return by_role


def total(by_role, key):
    return sum(r[key] for r in by_role.values())


def drain(tenants):
    """Reads what the attached clients drew since (tmux's status line), so
    that no pty's buffer fills up while the rest start."""
    for t in tenants:
        if t.conn is None:
            continue
        # poll, not select: past 1,000 tenants the ptys' fds pass FD_SETSIZE.
        p = select.poll()
        p.register(t.conn.master, select.POLLIN)
        while p.poll(0):
            try:
                chunk = os.read(t.conn.master, 65536)
            except OSError:
                break
            if not chunk:
                break


def caller_run(a, args, timeout=60):
    _, creds = tenant_identity(a.caller)
    t0 = time.perf_counter()
    r = run_as(creds, [a.suid_bin, *args], {"PATH": "/usr/bin:/bin"}, timeout=timeout)
    return r, time.perf_counter() - t0


def sessions_listed(a, text, as_json, names):
    """The tenants of ours that the output lists with the bench's session,
    and those it lists whose supervisor did not answer in time."""
    seen, unanswered = set(), set()
    for line in text.splitlines():
        if as_json:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            tenant, sessions = e.get("tenant"), e.get("sessions") or []
            silent = e.get("sessions_state") == "no-answer"
        else:
            words = dict(w.split("=", 1) for w in line.split() if "=" in w)
            tenant, sessions = words.get("tenant"), words.get("sessions", "-").split(",")
            silent = words.get("sessions") == "?"
        if tenant in names and a.session in sessions:
            seen.add(tenant)
        if tenant in names and silent:
            unanswered.add(tenant)
    return seen, unanswered


def supervisors_from_list(a, names):
    """Each tenant's supervisor, as `list --json` names it; then 1 s for the
    query jails that list made to end (one counted as the tenant's otherwise)."""
    r, _ = caller_run(a, ["list", "--json"])
    time.sleep(1.0)
    sup = {}
    for line in r.stdout.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("tenant") in names:
            sup[e["tenant"]] = e["supervisor"]
    return sup


def cgroup_dirs(uids, parent):
    found = []
    for uid in uids:
        for pat in (f"/sys/fs/cgroup/{parent}/{uid}", f"/sys/fs/cgroup/*/{parent}/{uid}",
                    f"/sys/fs/cgroup/clihost-jail.slice/clihost-jail-{uid}.scope",
                    f"/sys/fs/cgroup/*/clihost-jail.slice/clihost-jail-{uid}.scope"):
            found += glob.glob(pat)
    return sorted(found)


def mounts_naming(uids, names, runtime_dir, mountinfo):
    keys = list(names) + [f"{runtime_dir}/{u}." for u in uids]
    try:
        with open(mountinfo) as f:
            return [line.strip() for line in f if any(k in line for k in keys)]
    except OSError:
        return []


def jails_pids_current(uid, parent):
    """pids.current of the tenant's jails leaf (what tasks_max limits)."""
    for f in (f"/sys/fs/cgroup/pids/{parent}/{uid}/jails/pids.current",
              f"/sys/fs/cgroup/{parent}/{uid}/jails/pids.current"):
        try:
            with open(f) as fh:
                return int(fh.read())
        except (OSError, ValueError):
            continue
    return None


def plain_tmux(t, marker):
    """The floor of the same tenant without any jail or helper: a plain tmux
    server started as T (its login shell inside), one client attached on a
    pty; USS and Pss of server, shell and client. Ended before returning."""
    sock = os.path.join(t.pw.pw_dir, ".cjb-scale-plain.sock")
    c, ms = connect([TMUX, "-S", sock, "new-session", "-A", "-s", "plain"], plain_env(t.pw), t.creds, t.pw.pw_dir,
                    marker, f"plain tmux of {t.name}")
    try:
        time.sleep(1.0)
        r = run_as(t.creds, [TMUX, "-S", sock, "display-message", "-p", "#{pid}"], plain_env(t.pw))
        server = int(r.stdout.strip())
        roles = {"tmux client": c.processes(), "tmux server": [server],
                 "shell": descendants(server)}
        out = {"start_ms": round(ms, 1)}
        for role, ps in roles.items():
            m = [rollup_kib(p) for p in ps]
            out[role] = {"n": len(ps), "pss_kib": sum(x[0] for x in m), "uss_kib": sum(x[1] for x in m),
                         "tasks": len(ps), "comm": sorted({comm(p) or "?" for p in ps})}
        return out
    finally:
        c.hangup()
        kill_plain_server(t.creds, t.pw, sock)


def inotify_by_uid(pids_):
    """inotify instances held by these processes, by real uid (the per-user
    limit fs.inotify.max_user_instances counts them)."""
    out = {}
    for p in pids_:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        n = 0
        for fd in fds:
            try:
                if os.readlink(f"/proc/{p}/fd/{fd}") == "anon_inode:inotify":
                    n += 1
            except OSError:
                pass
        if n:
            s = status_fields(p) or {}
            uid = s.get("Uid", "-1").split()[0]
            out[uid] = out.get(uid, 0) + n
    return out


def read_int(path, default=None):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def key_users():
    """/proc/key-users: uid -> (keys, maxkeys, bytes, maxbytes) (the quota
    each uid's keys are charged against; PAM's session keyrings go to root's)."""
    out = {}
    try:
        with open("/proc/key-users") as f:
            for line in f:
                w = line.replace(":", " ").split()
                keys, maxkeys = w[3].split("/")
                nbytes, maxbytes = w[4].split("/")
                out[int(w[0])] = (int(keys), int(maxkeys), int(nbytes), int(maxbytes))
    except (OSError, ValueError, IndexError):
        pass
    return out


def host_limits(tenants, tree, uids):
    """What the tenants use of each host-wide limit a start needs, and the
    limit: {name: [used, limit, where it is set]}."""
    tasks = 0
    userns, netns = set(), set()
    fds_max = [0, 0]
    for t in tenants:
        for p in t.processes(tree):
            tasks += threads(p)
            for kind, seen in (("user", userns), ("net", netns)):
                try:
                    seen.add(os.readlink(f"/proc/{p}/ns/{kind}"))
                except OSError:
                    pass
        if t.supervisor:
            try:
                nfd = len(os.listdir(f"/proc/{t.supervisor}/fd"))
            except OSError:
                nfd = 0
            fds_max[0] = max(fds_max[0], nfd)
    nsu, nsn = len(userns), len(netns)
    try:
        with open(f"/proc/{tenants[-1].supervisor}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    fds_max[1] = int(line.split()[3])
    except (OSError, ValueError, TypeError):
        pass
    cgroups = {}
    try:
        with open("/proc/cgroups") as f:
            for line in f:
                if not line.startswith("#"):
                    w = line.split()
                    cgroups[w[0]] = int(w[2])
    except OSError:
        pass
    ku = key_users()
    root = ku.get(0, (0, 0, 0, 0))
    worst = max((ku.get(u, (0, 0, 0, 0)) for u in uids), default=(0, 0, 0, 0))
    pty = [read_int("/proc/sys/kernel/pty/nr"), read_int("/proc/sys/kernel/pty/max"),
           read_int("/proc/sys/kernel/pty/reserve")]
    file_nr = open("/proc/sys/fs/file-nr").read().split()
    mountinfo = 0
    try:
        with open(f"/proc/{tenants[-1].supervisor}/mountinfo") as f:
            mountinfo = sum(1 for _ in f)
    except (OSError, TypeError):
        pass
    return {
        "tasks (kernel.pid_max)": [tasks, read_int("/proc/sys/kernel/pid_max"), "sysctl kernel.pid_max"],
        "tasks (kernel.threads-max)": [tasks, read_int("/proc/sys/kernel/threads-max"), "sysctl kernel.threads-max"],
        "user namespaces": [nsu, read_int("/proc/sys/user/max_user_namespaces"), "sysctl user.max_user_namespaces"],
        "network namespaces": [nsn, read_int("/proc/sys/user/max_net_namespaces"), "sysctl user.max_net_namespaces"],
        "ptys, all instances": [pty[0], pty[1], "sysctl kernel.pty.max (the jails' own devpts: max - reserve "
                                f"= {pty[1] - pty[2]})" if pty[1] and pty[2] else "sysctl kernel.pty.max"],
        "root's keys (PAM session keyrings)": [root[0], root[1], "sysctl kernel.keys.root_maxkeys"],
        "root's key bytes": [root[2], root[3], "sysctl kernel.keys.root_maxbytes"],
        "a tenant's keys (the most)": [worst[0], worst[1], "sysctl kernel.keys.maxkeys"],
        "open files, host": [int(file_nr[0]), int(file_nr[2]), "sysctl fs.file-max"],
        "fds of one supervisor (the most)": [fds_max[0], fds_max[1], "RLIMIT_NOFILE of the supervisor"],
        "cgroups by controller": [cgroups, 65535, "memory: 65535 ids (MEM_CGROUP_ID_MAX), dying ones count"],
        "inotify instances per uid (max_user_instances)": [None, read_int("/proc/sys/fs/inotify/max_user_instances"),
                                                           "sysctl fs.inotify.max_user_instances"],
        "mountinfo lines of the last supervisor": [mountinfo, None, "what each new mount namespace copies"],
    }


def idle_cpu(pids_, seconds=10.0):
    """CPU (s per s) the tenants' processes use while idle, and kdamond's."""
    damon = [p for p in ppid_map() if (comm(p) or "").startswith("kdamond")]
    c0, d0, t0 = cpu_ticks(pids_), cpu_ticks(damon), time.perf_counter()
    time.sleep(seconds)
    c1, d1, dt = cpu_ticks(pids_), cpu_ticks(damon), time.perf_counter() - t0
    return {"tenants_cpu_per_s": round((c1 - c0) / HZ / dt, 4), "kdamond_cpu_per_s": round((d1 - d0) / HZ / dt, 4)}


def run(a):
    names = a.tenants.split(",")
    n = len(names)
    if n < 2:
        raise RuntimeError("--scale needs at least 2 tenants")
    tenants = [Tenant(x) for x in names]
    uids = {t.pw.pw_uid for t in tenants}
    _, caller_creds = tenant_identity(a.caller)
    marker = a.marker.encode()
    env = {"PATH": "/usr/bin:/bin", "TERM": TERM}
    out = {"n": n, "session": a.session}
    load = open("/proc/loadavg").read().split()[:3]
    out["load_start"] = [float(x) for x in load]

    # ---------------------------------------------------------- 1. starts
    # A reference for the machine's load: a plain tmux (no jail, no helper)
    # started to the prompt before the first tenant and again at N.
    out["plain_tmux_before"] = plain_tmux(tenants[0], marker)
    half = n // 2
    uss_at = {}
    for i, t in enumerate(tenants):
        argv = [a.suid_bin, "run", "--user", t.name, "--session", a.session]
        t.conn, t.start_ms = connect(argv, env, caller_creds, a.caller_dir, marker, f"start of {t.name}")
        drain(tenants)
        if i == 0:
            time.sleep(1.0)   # idle: let every process settle
            t.supervisor = supervisors_from_list(a, {t.name}).get(t.name)
            if t.supervisor is None:
                raise RuntimeError(f"list names no session jail for {t.name}")
            out["one_tenant"] = memory(t)
            with open(f"/proc/{t.supervisor}/mountinfo") as f:
                out["mountinfo_lines_at_1"] = sum(1 for _ in f)
            eprint(f"[scale] one idle tenant alone: Pss {total(out['one_tenant'], 'pss_kib') / MIB:.2f} MiB")
        if (i + 1) % 10 == 0:
            eprint(f"[scale] {i + 1}/{n} started, last {t.start_ms:.0f} ms")
        if i + 1 in (half, n):
            time.sleep(1.0)
            drain(tenants)
            sups = supervisors_from_list(a, {x.name for x in tenants[:i + 1]})
            for x in tenants[:i + 1]:
                x.supervisor = sups.get(x.name)
                if x.supervisor is None:
                    raise RuntimeError(f"list names no session jail for {x.name} at {i + 1} tenants")
            tree = ProcTree()
            mems = [memory(x, tree) for x in tenants[:i + 1]]
            uss_at[i + 1] = {"uss_kib": sum(total(m, "uss_kib") for m in mems),
                             "pss_kib": sum(total(m, "pss_kib") for m in mems),
                             "tasks": sum(total(m, "tasks") for m in mems),
                             "processes": sum(total(m, "n") for m in mems)}
            if i + 1 == n:
                out["last_tenant"] = mems[-1]
                out["per_tenant_tasks"] = [total(m, "tasks") for m in mems]
                out["jails_pids_current"] = [jails_pids_current(x.pw.pw_uid, a.cgroup_parent) for x in tenants]
                # Tenants whose processes differ from the first's (by role and count), with what differs.
                shapes = [json.dumps({r: v["n"] for r, v in sorted(m.items())}) for m in mems]
                common = max(set(shapes), key=shapes.count)
                out["common_shape"] = json.loads(common)
                out["odd_tenants"] = [{"tenant": x.name, "roles": {r: [v["n"], v["comm"]] for r, v in m.items()
                                                                  if out["common_shape"].get(r) != v["n"]},
                                       "cmdlines": [cmdline(p) for p in x.processes(tree)
                                                    if comm(p) not in ("bwrap",)][:16]}
                                      for x, m, sh in zip(tenants, mems, shapes) if sh != common][:5]
                # The same tenant's tmux without a jail or the helper, at N.
                out["plain_tmux_at_n"] = plain_tmux(tenants[-1], marker)
    starts = [t.start_ms for t in tenants]
    k = min(10, n // 2)
    first, last = med(starts[:k]), med(starts[-k:])
    out["starts_ms"] = [round(x, 1) for x in starts]
    out["starts"] = {"first_median_ms": round(first, 1), "last_median_ms": round(last, 1),
                     "last_over_first": round(last / first, 3), "window": k,
                     "min_ms": round(min(starts), 1), "max_ms": round(max(starts), 1)}
    out["memory_at"] = uss_at
    un, uh = uss_at[n]["uss_kib"], uss_at[half]["uss_kib"]
    out["uss_per_tenant_mib"] = round(un / n / MIB, 3)
    out["uss_slope_mib"] = round((un - uh) / (n - half) / MIB, 3)
    out["pss_per_tenant_at_n_mib"] = round(uss_at[n]["pss_kib"] / n / MIB, 3)
    tree = ProcTree()
    all_pids = [p for t in tenants for p in t.processes(tree)]
    out["inotify_by_uid"] = inotify_by_uid(all_pids)
    out["host_limits"] = host_limits(tenants, tree, uids)
    out["host_limits"]["inotify instances per uid (max_user_instances)"][0] = max(out["inotify_by_uid"].values(),
                                                                                 default=0)
    out["idle_cpu"] = idle_cpu(all_pids)
    out["ptys_in_use"] = int(open("/proc/sys/kernel/pty/nr").read())

    # ------------------------------------------------------------ 2. list
    lists = {"list": [], "list --json": []}
    list_cpu = {"list": [], "list --json": []}
    list_front_cpu = {"list": [], "list --json": []}
    listed = {"list": [], "list --json": []}
    no_answer = {"list": [], "list --json": []}
    sample_json = []
    for rnd in range(a.lists):
        for variant in (("list", "list --json") if rnd % 2 == 0 else ("list --json", "list")):
            drain(tenants)
            c0, f0 = cpu_ticks(all_pids), children_cpu_s()
            r, secs = caller_run(a, variant.split())
            time.sleep(0.2)   # the supervisors reap their query jails
            c1, f1 = cpu_ticks(all_pids), children_cpu_s()
            if r.returncode != 0:
                raise RuntimeError(f"{variant} as the caller failed ({r.returncode}): {r.stderr.strip()[:300]}")
            seen, silent = sessions_listed(a, r.stdout, variant.endswith("json"), set(names))
            if len(seen) != n:
                # Measured on (the rest of the stage still runs); the stage fails at the end.
                eprint(f"[scale] {variant} ({secs:.2f} s) listed the session of {len(seen)} of {n} tenants; "
                       f"{len(silent)} with no answer from their supervisor; stderr: {r.stderr.strip()[:200]!r}")
            listed[variant].append(len(seen))
            no_answer[variant].append(len(silent))
            if variant == "list --json" and not sample_json:
                sample_json.append(r.stdout)
            lists[variant].append(secs)
            # CPU it took: the tenants' side (supervisors with their query
            # jails, tmux servers), and the list process itself.
            list_cpu[variant].append((c1 - c0) / HZ)
            list_front_cpu[variant].append(f1 - f0)
    # What one supervisor's answer costs on its own: `list --user T`.
    one, one_cpu = [], []
    for _ in range(a.lists):
        c0 = cpu_ticks(all_pids)
        r, secs = caller_run(a, ["list", "--user", names[0]])
        time.sleep(0.2)
        one_cpu.append((cpu_ticks(all_pids) - c0) / HZ)
        if r.returncode != 0:
            raise RuntimeError(f"list --user {names[0]} failed: {r.stderr.strip()[:300]}")
        one.append(secs)
    out["list"] = {v: {"median_s": round(med(xs), 3), "max_s": round(max(xs), 3),
                       "runs_s": [round(x, 3) for x in xs],
                       "tenant_cpu_s_median": round(med(list_cpu[v]), 3),
                       "list_process_cpu_s_median": round(med(list_front_cpu[v]), 3),
                       "sessions_listed": listed[v], "no_answer": no_answer[v]}
                   for v, xs in lists.items()}
    out["list_all_listed"] = all(x == n for v in listed.values() for x in v)
    if sample_json:
        with open(os.path.join(a.workdir, "list-sample.json"), "w") as f:
            f.write(sample_json[0])
    out["list_one_tenant"] = {"median_s": round(med(one), 3), "max_s": round(max(one), 3),
                              "tenant_cpu_s_median": round(med(one_cpu), 3)}
    out["cpus"] = os.cpu_count()

    # ------------------------------------------------------------ 4. stop
    drain(tenants)
    procs = set(all_pids)
    # Every `stop` forked and waiting behind a gate (a pipe: all see its end
    # at once, as jailbench's concurrent does), then released together.
    gate_r, gate_w = os.pipe()
    stops = []
    for t in tenants:
        log = os.path.join(a.workdir, f"stop-{t.name}.log")
        pid = fork_gated((gate_r, gate_w), log, a.suid_bin, [a.suid_bin, "stop", "--user", t.name],
                         {"PATH": "/usr/bin:/bin"}, caller_creds, a.caller_dir)
        stops.append((pid, log))
    os.close(gate_r)
    time.sleep(0.3)   # let them reach read()
    t0 = time.perf_counter()
    os.close(gate_w)
    deadline = t0 + 60
    gone_at = None
    fronts = {t.conn.pid: t for t in tenants}
    while time.perf_counter() < deadline:
        # The fronts are ours: reap them as they end (a zombie counts as gone).
        for pid in list(fronts):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                fronts.pop(pid)
        left = [p for p in procs if alive(p)]
        if not left:
            # Nothing of what was there; nothing new of any tenant either.
            now = scan_once(uids, set(names), a.bin, a.runtime_dir)["tenant_processes"]
            if not now:
                gone_at = time.perf_counter() - t0
                break
            procs |= {x["pid"] for x in now}
        time.sleep(0.005)
    stop_rc, stops_done = {}, 0.0
    while len(stop_rc) < len(stops) and time.perf_counter() < deadline + 5:
        for pid, _ in stops:
            if pid not in stop_rc:
                got, st = os.waitpid(pid, os.WNOHANG)
                if got == pid:
                    stop_rc[pid] = os.waitstatus_to_exitcode(st)
                    stops_done = time.perf_counter() - t0
        time.sleep(0.005)
    for (pid, log), t in zip(stops, tenants):
        if pid not in stop_rc:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            stop_rc[pid] = -9
        if stop_rc[pid] != 0:
            with open(log, errors="replace") as f:
                eprint(f"[scale] stop --user {t.name}: exit {stop_rc[pid]}: {f.read().strip()[:200]}")
    stop_rc = list(stop_rc.values())
    for t in tenants:
        try:
            os.close(t.conn.master)
        except OSError:
            pass
        if t.conn.pid in fronts:
            try:
                os.kill(t.conn.pid, signal.SIGKILL)
                os.waitpid(t.conn.pid, 0)
            except ChildProcessError:
                pass
    out["stop"] = {"all_gone_s": round(gone_at, 3) if gone_at is not None else None,
                   "stops_exited_s": round(stops_done, 3),
                   "failed": sum(1 for x in stop_rc if x != 0),
                   "fronts_left_after_stop": len(fronts)}

    # ------------------------------------------------------- 5. leftovers
    scan = scan_once(uids, set(names), a.bin, a.runtime_dir)
    t1 = time.monotonic()
    while scan["tenant_zombies"] and time.monotonic() - t1 < 10:   # init's reap (jailbench scan --settle)
        time.sleep(0.1)
        scan = scan_once(uids, set(names), a.bin, a.runtime_dir)
    left = {
        "processes": scan["tenant_processes"] + scan["tenant_zombies"],
        "helpers": scan["helper_processes"],
        "runtime_records": scan["runtime_records"],
        "cgroups": cgroup_dirs(sorted(uids), a.cgroup_parent),
        "mounts_here": mounts_naming(uids, names, a.runtime_dir, "/proc/self/mountinfo"),
        "mounts_host": mounts_naming(uids, names, a.runtime_dir, "/proc/1/mountinfo"),
    }
    out["leftovers"] = {k: v[:5] for k, v in left.items()}
    out["leftover_count"] = sum(len(v) for v in left.values())
    out["load_end"] = [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    return out


def report(out):
    n = out["n"]
    s = out["starts"]
    one = out["one_tenant"]
    pss1 = total(one, "pss_kib") / MIB
    rows = [
        ("start, median of the last %d / first %d" % (s["window"], s["window"]),
         f"{s['last_median_ms']:.0f} / {s['first_median_ms']:.0f} ms = {s['last_over_first']:.2f}"
         f" (min {s['min_ms']:.0f}, max {s['max_ms']:.0f} ms)", "<= 1.2", s["last_over_first"] <= 1.2),
    ]
    for v, r in out["list"].items():
        rows.append((f"`{v}` of all {n}, as the caller (5x)",
                     f"median {r['median_s']:.3f} s, max {r['max_s']:.3f} s (CPU: tenants' side "
                     f"{r['tenant_cpu_s_median']:.2f} s, the list {r['list_process_cpu_s_median']:.3f} s)",
                     "<= 0.5 s", r["max_s"] <= 0.5))
        rows.append((f"`{v}`: sessions listed of {n}, each run", f"{r['sessions_listed']} "
                     f"(no answer: {r['no_answer']})", f"{n}", all(x == n for x in r["sessions_listed"])))
    rows.append(("Pss of one idle tenant alone", f"{pss1:.2f} MiB", "<= 6 MiB", pss1 <= 6))
    rows.append((f"USS per tenant at {n} (total / {n})", f"{out['uss_per_tenant_mib']:.2f} MiB", "<= 2 MiB",
                 out["uss_per_tenant_mib"] <= 2))
    rows.append((f"USS slope, {n // 2} to {n} tenants", f"{out['uss_slope_mib']:.2f} MiB per tenant", "<= 2 MiB",
                 out["uss_slope_mib"] <= 2))
    st = out["stop"]
    g = st["all_gone_s"]
    rows.append((f"`stop` of all {n} at once, until every process is gone",
                 f"{g:.2f} s ({st['failed']} failed)" if g is not None else "not within 60 s", "<= 10 s",
                 g is not None and g <= 10 and not st["failed"]))
    rows.append(("leftovers", str(out["leftover_count"]), "0", out["leftover_count"] == 0))
    print(f"scale: {n} tenants, each a session jail and one attached client")
    print("| figure | measured | target | |\n| --- | --- | --- | --- |")
    for name, val, tgt, ok in rows:
        print(f"| {name} | {val} | {tgt} | {'met' if ok else 'MISSED'} |")
    print("\none idle tenant alone, by process (Pss / USS, KiB):")
    for role, r in sorted(one.items(), key=lambda kv: -kv[1]["pss_kib"]):
        print(f"  {role:<16} x{r['n']}  Pss {r['pss_kib']:>6}  USS {r['uss_kib']:>6}  tasks {r['tasks']}  "
              f"{','.join(r['comm'])}")
    last = out.get("last_tenant", {})
    print(f"the last tenant at {n} (Pss / USS, KiB):")
    for role, r in sorted(last.items(), key=lambda kv: -kv[1]["pss_kib"]):
        print(f"  {role:<16} x{r['n']}  Pss {r['pss_kib']:>6}  USS {r['uss_kib']:>6}")
    for k, m in sorted(out["memory_at"].items(), key=lambda kv: int(kv[0])):
        print(f"at {k} tenants: {m['processes']} processes, {m['tasks']} tasks, "
              f"USS {m['uss_kib'] / MIB:.1f} MiB, Pss {m['pss_kib'] / MIB:.1f} MiB")
    pl = dict(out.get("plain_tmux_at_n", {}))
    print(f"plain tmux (no jail, no helper) started to the prompt: {out['plain_tmux_before']['start_ms']:.0f} ms "
          f"before the first tenant, {pl.pop('start_ms', float('nan')):.0f} ms at {n}")
    print(f"the same tenant's plain tmux at {n}, no jail, no helper (Pss / USS, KiB):")
    for role, r in sorted(pl.items(), key=lambda kv: -kv[1]["pss_kib"]):
        print(f"  {role:<16} x{r['n']}  Pss {r['pss_kib']:>6}  USS {r['uss_kib']:>6}")
    print(f"tasks per tenant (its processes): {sorted(set(out['per_tenant_tasks']))}; "
          f"pids.current of the jails leaves: {sorted(set(out['jails_pids_current']), key=str)}")
    if out.get("odd_tenants"):
        print(f"tenants whose processes differ from the first's at {n}: {json.dumps(out['odd_tenants'])}")
    lo = out["list_one_tenant"]
    print(f"`list --user` of one tenant: median {lo['median_s']:.3f} s, tenants' CPU {lo['tenant_cpu_s_median']:.3f} s;"
          f" {out['cpus']} CPUs")
    print(f"inotify instances by uid: {out['inotify_by_uid']}; ptys in use: {out['ptys_in_use']}")
    print(f"mount table a new jail copies: {out['mountinfo_lines_at_1']} lines at 1 tenant")
    print(f"host limits at {n} (used / limit, where set):")
    for name, (used, limit, where) in out["host_limits"].items():
        print(f"  {name}: {used} / {limit} ({where})")
    ic = out["idle_cpu"]
    print(f"idle: the tenants' processes use {ic['tenants_cpu_per_s']:.3f} CPU-s per s "
          f"({ic['tenants_cpu_per_s'] / n * 1000:.2f} ms/s each); kdamond {ic['kdamond_cpu_per_s']:.3f}")
    if out["leftover_count"]:
        print("LEFT BEHIND:", json.dumps(out["leftovers"]))
    return all(ok for *_, ok in rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tenants", required=True)
    ap.add_argument("--suid-bin", required=True, help="the setuid copy of the helper, run by --caller")
    ap.add_argument("--caller", required=True)
    ap.add_argument("--caller-dir", required=True, help="the caller's working directory")
    ap.add_argument("--bin", required=True, help="the helper (for the leftover scan)")
    ap.add_argument("--runtime-dir", required=True)
    ap.add_argument("--cgroup-parent", default="clihost-jail")
    ap.add_argument("--marker", required=True, help="the tenants' prompt (PS1), as the pty shows it")
    ap.add_argument("--session", default="scale")
    ap.add_argument("--lists", type=int, default=5)
    ap.add_argument("--json-out", default="")
    ap.add_argument("--workdir", required=True, help="where raw outputs are kept (a sample of list --json)")
    a = ap.parse_args()
    try:
        out = run(a)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        eprint(f"scalebench: {e}")
        print("SCALE " + json.dumps({"error": str(e)}, separators=(",", ":")))
        return 1
    report(out)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(out, f, indent=1)
    print("SCALE " + json.dumps({k: v for k, v in out.items() if k not in ("starts_ms",)} |
                                {"starts_ms": out["starts_ms"]}, separators=(",", ":")))
    # A missed target is a finding, not a failure; a leftover or a failed stop is.
    # A list that misses a session fails the stage too (it must list all N).
    return 1 if (out["leftover_count"] or out["stop"]["failed"] or out["stop"]["all_gone_s"] is None
                 or not out["list_all_listed"]) else 0


if __name__ == "__main__":
    sys.exit(main())
