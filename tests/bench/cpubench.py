#!/usr/bin/python3
"""tests/bench/cpubench.py: CPU fairness between tenants ([limits], issue 27).

  sudo tests/bench/cpubench.py --bin build/ci/clihost-jail [--rounds 4] [--seconds 8] [--json OUT]

Two tenants on a 2-core host: A runs 8 busy loops, B runs 2, both at the
same time, equal cpu_weight (the default, 100). Each round runs two arms,
in an order that alternates round by round:

  cgroups  both as one-off jails of the helper (run by root with a config
           of the bench's, `[pam] session = false`, `network = host`): each
           tenant's jails in its own cgroup, the CPU weight on the tenant's
           node, so the two tenants share the CPU half and half.
  none     the same loops as the same tenants with no cgroup of their own
           (setpriv to the tenant, in the bench's own cgroup), as every
           tenant ran before [limits]: the scheduler is fair per process,
           B gets 2 of 10 runnable loops, about 0.4 of a core.

The loops start and stop at the same wall-clock instants (passed to both);
each tenant's CPU time is the sum of its loops' rusage. Reported per arm:
B's CPU time per second of wall time (its share of one core: target >= 0.9
with cgroups, about 0.4 without) and B's share of what the two tenants got
together, times 2 (its fraction of its fair share, which load from others on
the machine moves less), and what the rest of the machine used meanwhile
(/proc/stat). Medians over the rounds, with the range.

The tenants' cgroups go below the cgroup the bench runs in (its memory
hierarchy's, as the integration suites do: on these machines it belongs to
the machine's own manager and nothing may leave it). Everything made
(tenants, group, configs, cgroups) is removed at the end. Exit 0 when every
measurement ran, even if the target was missed (a measurement, not a test).
"""
import argparse
import json
import os
import pwd
import statistics
import subprocess
import sys
import time

from benchsetup import REPO, HostChanges

CGROUP_ROOT = "/sys/fs/cgroup"
GROUP = "ctjcpu-tenants"
TENANTS = {"A": ("ctjcpu-a", 8), "B": ("ctjcpu-b", 2)}
QUIET = 0.1  # cores the rest of the machine may use in a round that counts for the target

# argv: N START END. N children burn the CPU from START to END (wall clock,
# time.time()); prints the CPU seconds they used (their rusage, summed).
LOOPS = """
import os, sys, time
n, start, end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
for _ in range(n):
    if os.fork() == 0:
        time.sleep(max(0.0, start - time.time()))
        while time.time() < end:
            pass
        os._exit(0)
cpu = 0.0
for _ in range(n):
    _, _, ru = os.wait4(-1, 0)
    cpu += ru.ru_utime + ru.ru_stime
print(f"{cpu:.4f}")
"""


def eprint(*a):
    print(*a, file=sys.stderr, flush=True)


def run(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def own_cgroup():
    """The bench's cgroup in the memory hierarchy (v1) or the unified one."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(",") or (controllers == "" and
                                                      os.path.exists(CGROUP_ROOT + "/cgroup.controllers")):
                return path.strip("/")
    return ""


def remove_cgroups(rel):
    """rel and below in every hierarchy, deepest first, then the empty
    components above it that the helper made."""
    if os.path.exists(CGROUP_ROOT + "/cgroup.controllers"):
        tops = [os.path.join(CGROUP_ROOT, rel)]
    else:
        tops = [os.path.join(CGROUP_ROOT, c, rel) for c in ("memory", "pids", "cpu", "freezer")]
    for top in tops:
        if not os.path.isdir(top):
            continue
        for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(d)
            except OSError:
                pass
        mount = top[: len(top) - len(rel)].rstrip("/")
        d = os.path.dirname(top)
        while len(d) > len(mount):
            try:
                os.rmdir(d)
            except OSError:
                break
            d = os.path.dirname(d)


class Bench(HostChanges):
    def __init__(self, binary):
        super().__init__()
        self.bin = binary
        self.parent = "/".join(p for p in (own_cgroup(), "ctjcpu-tenants") if p)

    def setup(self):
        self.install_pam_file()
        self.work = self.make_work_dir("ctjcpu.")
        run("groupadd", "-f", GROUP)
        self.undo.append(lambda: run("groupdel", GROUP, check=False))
        for name, _ in TENANTS.values():
            run("useradd", "-m", "-s", "/bin/sh", "-G", GROUP, name)
            self.undo.append(lambda name=name: (run("pkill", "-KILL", "-u", name, check=False),
                                                run("userdel", "-r", "-f", name, check=False)))
        self.undo.append(lambda: remove_cgroups(self.parent))
        self.conf = os.path.join(self.work, "jail.conf")
        with open(self.conf, "w") as f:
            f.write(f"[tenants]\ngroup = {GROUP}\n[jail]\nallow_caller_command = true\nnetwork = host\n"
                    f"[pam]\nsession = false\n[limits]\ncgroup_parent = {self.parent}\n")
        os.chmod(self.conf, 0o644)

    def argv(self, arm, tenant, loops, start, end):
        script = ["/usr/bin/python3", "-c", LOOPS, str(loops), f"{start:.3f}", f"{end:.3f}"]
        if arm == "cgroups":
            return [self.bin, "run", "--user", tenant, "--session", "cpu", "--", *script]
        return ["setpriv", f"--reuid={tenant}", f"--regid={tenant}", "--init-groups", "--", *script]

    def round(self, arm, seconds):
        # Both tenants' loops start together, once both jails are up.
        start = time.time() + 1.5
        end = start + seconds
        env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": self.conf}
        procs = {k: subprocess.Popen(self.argv(arm, name, loops, start, end), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd="/")
                 for k, (name, loops) in TENANTS.items()}
        cpu = {}
        time.sleep(max(0.0, start - time.time()))
        busy0 = busy_seconds()
        for k, p in procs.items():
            out, err = p.communicate(timeout=seconds + 60)
            if p.returncode != 0:
                raise RuntimeError(f"{arm} {k}: exit {p.returncode}: {err.strip()}")
            cpu[k] = float(out)
        others = max(0.0, busy_seconds() - busy0 - cpu["A"] - cpu["B"])
        if arm == "cgroups":
            uid = pwd.getpwnam(TENANTS["B"][0]).pw_uid
            cpu_dir = (os.path.join(CGROUP_ROOT, self.parent, str(uid)) if
                       os.path.exists(CGROUP_ROOT + "/cgroup.controllers") else
                       os.path.join(CGROUP_ROOT, "cpu", self.parent, str(uid)))
            if not os.path.isdir(cpu_dir):
                raise RuntimeError(f"B's jail made no cgroup {cpu_dir}")
        return {"a_cores": cpu["A"] / seconds, "b_cores": cpu["B"] / seconds,
                "b_fair": 2 * cpu["B"] / (cpu["A"] + cpu["B"]), "others_cores": others / seconds}


def busy_seconds():
    """CPU seconds the whole machine has been busy (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "ci", "clihost-jail"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cpubench.py: must run as root")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"cpubench.py: no helper at {args.bin}")
    if os.cpu_count() != 2:
        eprint(f"cpubench.py: this host has {os.cpu_count()} CPUs; the targets are for 2")
    b = Bench(os.path.abspath(args.bin))
    results = {"cgroups": [], "none": []}
    load = [open("/proc/loadavg").read().split()[0]]
    try:
        b.setup()
        for r in range(args.rounds):
            order = ("cgroups", "none") if r % 2 == 0 else ("none", "cgroups")
            for arm in order:
                got = b.round(arm, args.seconds)
                results[arm].append(got)
                eprint(f"round {r + 1} {arm:7}: A {got['a_cores']:.3f} cores, B {got['b_cores']:.3f} cores, "
                       f"B's fraction of its fair share {got['b_fair']:.3f}; the rest of the machine {got['others_cores']:.3f} cores")
        load.append(open("/proc/loadavg").read().split()[0])
    finally:
        b.teardown()
    report = {arm: {k: summary([x[k] for x in rs]) for k in ("a_cores", "b_cores", "b_fair", "others_cores")}
              for arm, rs in results.items()}
    report["rounds"], report["seconds"], report["loadavg_1min"] = args.rounds, args.seconds, load
    print(f"CPU fairness: A 8 busy loops, B 2, {os.cpu_count()} CPUs, equal cpu_weight, "
          f"{args.rounds} rounds x {args.seconds:g} s per arm, interleaved (load average {load[0]} -> {load[-1]})")
    for arm in ("cgroups", "none"):
        m = report[arm]
        print(f"  {arm:7}: B {m['b_cores']['median']:.3f} of a core ({m['b_cores']['min']:.3f}..{m['b_cores']['max']:.3f}),"
              f" A {m['a_cores']['median']:.3f}; B's fraction of its fair share {m['b_fair']['median']:.3f} "
              f"({m['b_fair']['min']:.3f}..{m['b_fair']['max']:.3f}); the rest of the machine "
              f"{m['others_cores']['median']:.3f} cores")
    # The target is for a machine otherwise idle: the rounds in which the
    # rest of the machine used under 0.1 cores.
    quiet = {arm: [x["b_cores"] for x in rs if x["others_cores"] < QUIET] for arm, rs in results.items()}
    report["quiet_b_cores"] = quiet
    if quiet["cgroups"]:
        met = statistics.median(quiet["cgroups"]) >= 0.9
        print(f"  rounds with the rest of the machine under {QUIET} cores: B with cgroups "
              f"{' '.join(f'{v:.3f}' for v in quiet['cgroups'])}, without {' '.join(f'{v:.3f}' for v in quiet['none'])}")
        print(f"  target: B >= 0.9 of a core with cgroups (median of those rounds): {'met' if met else 'NOT met'}")
    else:
        print(f"  target: undetermined, the rest of the machine used {QUIET} cores or more in every round "
              "(compare B's fraction of its fair share)")
    print("BENCH " + json.dumps(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
