#!/usr/bin/python3
"""Measurement helpers for tests/bench/run.sh (stdlib only, run as root).

  stats      merge hyperfine --export-json files per variant, print medians as JSON
  concurrent start N helper launches at once (behind a FIFO gate), wait, report
  sessions   start M idle jails, measure memory of each chain, then SIGTERM each
             waiting parent and time the teardown with pidfds
  scan       list what is left of the benchmark's tenants (processes, helpers,
             loginuid, mount/user namespaces)

Every subcommand prints one JSON object on stdout; diagnostics go to stderr.
"""
import argparse
import json
import os
import select
import signal
import statistics
import sys
import time


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
        times, cpu = [], []
        for fn in files.split(","):
            with open(fn) as f:
                for r in json.load(f)["results"]:
                    times.extend(r["times"])
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
        }
    print(json.dumps(out))


# ---------------------------------------------------------------- concurrency

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
        pid = os.fork()
        if pid == 0:
            try:
                os.close(gate_w)
                fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                nul = os.open("/dev/null", os.O_RDONLY)
                os.dup2(nul, 0)
                os.read(gate_r, 1)
                os.execve(a.bin, argv, helper_env(a.config))
            finally:
                os._exit(127)
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

def wait_for_chain(helper_pid, timeout):
    """helper -> watcher -> bwrap -> bwrap (pid 1) -> sleep, once sleep exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        d = descendants(helper_pid)
        if any(comm(p) == "sleep" for p in d):
            return [helper_pid] + d
        time.sleep(0.01)
    return None


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
        c = wait_for_chain(pid, 20)
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
        # The watcher (the chain's second process, the helper's image as the tenant).
        "watcher_VmHWM_kib_median": med([m[1]["VmHWM_kib"] for m in mem]),
        "watcher_Pss_kib_median": med([m[1]["Pss_kib"] for m in mem]),
        "watcher_Uss_kib_median": med([m[1]["Uss_kib"] for m in mem]),
        "chain_VmHWM_kib_median": med(chain_hwm), "chain_VmRSS_kib_median": med(chain_rss),
        "chain_Pss_kib_median": med(chain_pss),
        "chain_Uss_kib_median": med([sum(p["Uss_kib"] for p in m) for m in mem]),
        "chain_example": mem[0],
        "teardown_ms_median": med(done), "teardown_ms_max": max(done),
        "teardown_jail_gone_ms_median": med([t["jail_gone_ms"] for t in teardown]),
        "teardown_helper_statuses": sorted({t["helper_status"] for t in teardown}),
        "teardown_survivors": sum(len(t["survivors"]) for t in teardown),
        "teardown_zombies": sum(len(t["zombies_after_helper_exit"]) for t in teardown),
        "teardown": teardown,
    }))
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


def scan_once(uids, names, binary):
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
        if names & set(argv) and (exe.split(" (deleted)")[0] == binary or argv[0].endswith("clihost-jail")):
            helpers.append({"pid": p, "argv": argv[:6]})
        try:
            with open(f"/proc/{p}/loginuid") as f:
                lu = int(f.read().strip())
            if lu in uids:
                loginuid.append({"pid": p, "loginuid": lu, "comm": s.get("Name")})
        except (OSError, ValueError):
            pass
    mounts, nsfs = host_mounts(names)
    return {"tenant_processes": procs, "tenant_zombies": zombies, "helper_processes": helpers,
            "tenant_loginuid": loginuid, "tenant_mount_namespaces": len(mntns),
            "host_mounts_naming_tenants": mounts, "host_nsfs_mounts": nsfs}


def cmd_scan(a):
    uids = {int(u) for u in a.uids.split(",")}
    names = set(a.names.split(","))
    r = scan_once(uids, names, a.bin)
    # Zombies have exited; whoever is their parent still has to reap them. When
    # that parent is the host's init (bwrap's pid 1 outlives bwrap's monitor by
    # a moment and is re-parented), wait up to --settle seconds for init.
    r["zombies_first_seen"] = r["tenant_zombies"][:5]
    r["zombies_first_count"] = len(r["tenant_zombies"])
    t0 = time.monotonic()
    while r["tenant_zombies"] and time.monotonic() - t0 < a.settle:
        time.sleep(0.1)
        first = (r["zombies_first_seen"], r["zombies_first_count"])
        r = scan_once(uids, names, a.bin)
        r["zombies_first_seen"], r["zombies_first_count"] = first
    r["zombies_settle_s"] = round(time.monotonic() - t0, 2)
    print(json.dumps(r))


# --------------------------------------------------------------------- report

def cmd_report(a):
    w = a.workdir
    load = lambda n: json.load(open(os.path.join(w, n)))
    lat, conc, sess = load("latency.json"), load("concurrent.json"), load("sessions.json")
    before, after, final = load("scan-before.json"), load("scan-after-concurrency.json"), load("scan-final.json")
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
             "C": "clihost-jail run, session = false",
             "D": "clihost-jail run, session = true (PAM)"}
    for k in ("A0", "A", "B", "C", "D"):
        v = lat[k]
        print(f"  {k:<2} {names[k]:<48} median {v['median_ms']:6.2f} ms  p10 {v['p10_ms']:6.2f}  "
              f"p90 {v['p90_ms']:6.2f}  cpu {v['cpu_ms']:5.2f} ms")
    ca, db = m["C"] / m["A"], m["D"] / m["B"]
    print(f"  C/A = {ca:.3f}   (p10 {p10['C'] / p10['A']:.3f}, cpu {cpu['C'] / cpu['A']:.3f})")
    print(f"  D/B = {db:.3f}   (p10 {p10['D'] / p10['B']:.3f}, cpu {cpu['D'] / cpu['B']:.3f})")
    print(f"  (helper over the setpriv floor: C-A {m['C'] - m['A']:+.2f} ms; PAM + fork/wait: D-C {m['D'] - m['C']:+.2f} ms)")

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
        }

    def show_leftovers(scan, logind_n):
        lo = leftovers(scan, logind_n)
        print("  left afterwards: " + ", ".join(f"{v} {k}" for k, v in lo.items()))
        if logind_n == "unavailable":
            print("  logind: not running here, so logind sessions cannot be checked")
        if scan["zombies_first_count"]:
            z = scan["zombies_first_seen"][0]
            print(f"  NOTE: {scan['zombies_first_count']} jail process(es) (e.g. {z['comm']} pid {z['pid']}) were still"
                  f" zombies, re-parented to pid {z['ppid']}, after their helper had exited; that parent reaped them"
                  f" within {scan['zombies_settle_s']} s")
        for p in (scan["tenant_processes"] + scan["helper_processes"])[:5]:
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
    left_final = show_leftovers(final, logind[1])
    print("  (not checkable: PAM modules' private state; pam_keyinit's revoked session keyrings stay listed in"
          " /proc/key-users until the kernel's key GC, gc_delay, runs)")

    targets = [
        ("C/A <= 1.10", ca <= 1.10, f"{ca:.3f}"),
        ("D <= B", m["D"] <= m["B"], f"D {m['D']:.2f} ms vs B {m['B']:.2f} ms"),
        ("waiting-parent RSS < 2 MiB", sess["helper_VmHWM_kib_max"] < 2048,
         f"VmHWM max {mib(sess['helper_VmHWM_kib_max']):.2f} MiB (USS {mib(sess['helper_Uss_kib_median']):.2f} MiB)"),
        ("teardown < 50 ms", sess["teardown_ms_max"] < 50, f"max {sess['teardown_ms_max']:.2f} ms"),
        (f"0 failures at N={conc['n']}", conc["failures"] == 0, f"{conc['failures']} failures"),
    ]
    print()
    for name, ok, detail in targets:
        print(f"  {'PASS' if ok else 'MISS'}  {name:<28} {detail}")
    left = left_conc + left_final + sess["teardown_survivors"]
    summary = {
        "quick": quick, "loadavg_start": float(loadavg[0]),
        "A0_ms": m["A0"], "A_ms": m["A"], "B_ms": m["B"], "C_ms": m["C"], "D_ms": m["D"],
        "A_cpu_ms": cpu["A"], "B_cpu_ms": cpu["B"], "C_cpu_ms": cpu["C"], "D_cpu_ms": cpu["D"],
        "C_over_A": round(ca, 3), "D_over_B": round(db, 3),
        "conc_n": conc["n"], "conc_failures": conc["failures"], "conc_wall_s": conc["wall_s"],
        "leftovers": left, "zombies_reparented": after["zombies_first_count"] + final["zombies_first_count"],
        "helper_vmhwm_kib": sess["helper_VmHWM_kib_max"], "helper_uss_kib": sess["helper_Uss_kib_median"],
        "chain_vmhwm_kib": sess["chain_VmHWM_kib_median"], "chain_pss_kib": sess["chain_Pss_kib_median"],
        "teardown_ms_median": sess["teardown_ms_median"], "teardown_ms_max": sess["teardown_ms_max"],
        "targets": {name: ("PASS" if ok else "MISS") for name, ok, _ in targets},
    }
    print()
    print("BENCH " + json.dumps(summary, separators=(",", ":")))
    return 1 if conc["failures"] or left else 0



def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stats")
    s.add_argument("variant", nargs="+", help="NAME=file.json[,file.json...]")
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
    r = sub.add_parser("report")
    r.add_argument("--workdir", required=True)
    r.add_argument("--quick", default="0")
    a = ap.parse_args()
    return {"stats": cmd_stats, "concurrent": cmd_concurrent, "sessions": cmd_sessions,
            "scan": cmd_scan, "report": cmd_report}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
