"""Per-tenant resources ([limits]): each tenant's jails in a cgroup of their
own, out of the caller's, bounded, ended by `stop` through the cgroup.

On this project's CI machines the memory, pids, cpu and freezer controllers
are v1 hierarchies; the cgroup the suite runs in belongs to the machine's own
manager and nothing may leave it, so the tenants' cgroups are made below it
(conftest.CGROUP_PARENT). Real tenants, real cgroups, real OOM kills.
"""
import os
import pwd
import signal
import subprocess
import time

import pytest

from conftest import (CGROUP_PARENT, CGROUP_ROOT, PROXY, RUNTIME_DIR, _own_cgroup, cgroup_dirs, front_and_supervisor_lines,
                      log_lines, logged_at,
                      new_session, remove_cgroup_tree, start_as, tenant_cgroup, wait_until)
from forkbomb import FORKS
from ptyutil import PtyProcess, attach, shell_ready

V1 = not os.path.exists(CGROUP_ROOT + "/cgroup.controllers")


def need_controllers(*names):
    for c in names:
        d = CGROUP_ROOT if not V1 else os.path.join(CGROUP_ROOT, c)
        if not os.path.exists(os.path.join(d, "cgroup.procs")):
            pytest.skip(f"this host has no {c} cgroup controller")


def read(path):
    with open(path) as f:
        return f.read().strip()


def procs(path):
    try:
        return [int(p) for p in read(os.path.join(path, "cgroup.procs")).split()]
    except FileNotFoundError:
        return []


def cgroup_of(pid, controller):
    for line in open(f"/proc/{pid}/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        if (V1 and controller in ctrls.split(",")) or (not V1 and ctrls == ""):
            return path
    return None


def supervisor_pid(tenant):
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.state")
    return int(open(path).read().split()[3])


def connect(host, tenant, terms, conf, session=None, argv_prefix=()):
    """A connection as root (the proxy's stand-in) with config `conf`."""
    t = PtyProcess([*argv_prefix, host.bin, "run", "--user", tenant, "--session", session or new_session()], user=None,
                   env={"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_CONFIG": conf})
    terms.append(t)
    return t


def test_tasks_max_bounds_a_tenant_and_another_tenant_still_forks(host, alice, bob):
    need_controllers("pids")
    conf = host.config_variant(replace={"limits": {"tasks_max": "100"}, "jail": {"network": "host"}})
    env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": conf}
    # alice starts 150 sleeps; the jail's pid namespace shows how many live.
    # alice forks 150 times (python: a failed fork is counted, not fatal
    # and not retried, as dash's and bash's are) and keeps her children.
    script = f"python3 -c '{FORKS}' 150 $HOME/ctj-tasks wait"
    bomb = start_as(None, host.jail(alice, script), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        counted = os.path.join(host.home(alice), "ctj-tasks")
        assert wait_until(lambda: os.path.exists(counted) and read(counted), timeout=30)
        jails = tenant_cgroup(alice, "pids")
        assert read(os.path.join(jails, "pids.max")) == "100"
        current = int(read(os.path.join(jails, "pids.current")))
        # At most 100 of alice's tasks, and the limit was what stopped her
        # (not some other failure): she holds very nearly all of them.
        assert 85 <= current <= 100, current
        assert 85 <= int(read(counted)) < 100, read(counted)
        # bob, meanwhile, starts a jail of his own and forks 20 processes.
        r = host.run_root(host.jail(bob, f"python3 -c '{FORKS}' 20 -"), env=env)
        assert r.returncode == 0 and r.stdout == "20", r
    finally:
        host.run_root([host.bin, "stop", "--user", alice], config=conf)
        bomb.kill()
        bomb.wait()
    # Control: without the limit, alice gets all 150.
    free = host.config_variant(replace={"limits": {"tasks_max": "max"}, "jail": {"network": "host"}})
    r = host.run_root(host.jail(alice, f"python3 -c '{FORKS}' 150 -"), config=free)
    assert r.returncode == 0 and r.stdout == "150", r


def test_memory_max_oom_kills_inside_the_tenants_cgroup_and_the_supervisor_lives_on(host, alice, bob, terms):
    need_controllers("memory")
    conf = host.config_variant(replace={"limits": {"memory_max": "64M"}})
    env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": conf}
    t = connect(host, alice, terms, conf)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    oom = os.path.join(host.home(alice), "ctj-oom")
    # 200 MiB touched in a 64 MiB cgroup, from the session jail's shell.
    t.write(f"python3 -c 'b = bytearray(200 << 20)'; echo $? > {oom}\r")
    assert wait_until(lambda: os.path.exists(oom) and read(oom), timeout=30), t.output()
    assert read(oom) == "137", read(oom)  # SIGKILL: the OOM killer
    mem = tenant_cgroup(alice, "memory")
    if V1:
        assert "oom_kill 1" in read(os.path.join(mem, "memory.oom_control")).splitlines()
    # The supervisor lives on, in its own leaf; the session jail too.
    assert os.path.exists(f"/proc/{sup}") and supervisor_pid(alice) == sup
    assert cgroup_of(sup, "memory") == "/" + os.path.join(CGROUP_PARENT, str(pwd.getpwnam(alice).pw_uid), "supervisor")
    assert shell_ready(t, "ALIVE"), t.output()
    # bob, with the same limit, allocates 32 MiB untouched by alice's OOM.
    r = host.run_root(host.jail(bob, "python3 -c 'b = bytearray(32 << 20); print(len(b))'"), env=env)
    assert r.returncode == 0 and r.stdout.strip() == str(32 << 20), r
    since = time.time()
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice], env=env)
    assert r.returncode == 0, r
    lines = log_lines(lambda l: f"clihost-jail[{sup}]" in l and "session jail ended" in l and logged_at(l) >= since - 1)
    assert lines and "session jail ended (stop)" in lines[-1] and "1 process(es) OOM-killed" in lines[-1], lines


def test_nested_tmpfs_is_bounded_by_memory_max(host, alice):
    """The tenant's own tmpfs, in a user namespace of its own, is unsized
    (half of the host's RAM); what is written to it is charged to the
    tenant's jails cgroup, whose OOM killer ends a process of the tenant's.
    The memory is in no process: the killer picks by size, and the
    tenant's processes here (sh, unshare, dd with 64 KiB blocks) are each
    smaller than a watcher. The watcher is in the supervisor's leaf,
    outside the limit, so the victim is the tenant's: a process of the
    command (its status says which), or the jail's bwrap (the jail ends,
    137). A killed watcher, which the limit used to pick here, is reported
    as one (exit 4)."""
    need_controllers("memory")
    conf = host.config_variant(replace={"limits": {"memory_max": "64M"},
                                        "jail": {"nested_sandbox": "true", "network": "host"}})
    script = ("unshare -rm sh -c 'mount -t tmpfs none /tmp && "
              "dd if=/dev/zero of=/tmp/fill bs=64k count=3200 2>/dev/null; echo dd=$?'; echo unshare=$?")
    r = host.run_root(host.jail(alice, script), config=conf)
    assert "watcher was killed" not in r.stderr and "dd=0" not in r.stdout, r
    assert r.returncode == 137 or (r.returncode == 0 and ("unshare=137" in r.stdout or "dd=137" in r.stdout)), r
    # The kill was the limit's (the supervisor counts its cgroup's OOM kills).
    ended = "supervisor ended with its last jail"
    lines = front_and_supervisor_lines(host, r, until=lambda l: ended in l)
    assert any(ended in l and "OOM-killed in its cgroup" in l for l in lines), lines
    # Control: with room for it, the same tmpfs takes the 200 MiB.
    roomy = host.config_variant(replace={"limits": {"memory_max": "1G"},
                                         "jail": {"nested_sandbox": "true", "network": "host"}})
    r = host.run_root(host.jail(alice, script), config=roomy)
    assert "dd=0" in r.stdout and "unshare=0" in r.stdout, r


def test_a_restart_of_the_proxys_service_leaves_the_session_jail(host, alice, terms):
    need_controllers("pids")
    if not V1:
        pytest.skip("the emulated service cgroup is a v1 pids cgroup; this host has cgroup v2")
    # The proxy's service: a cgroup of the test's own (pids, under the one
    # the suite runs in), a process in it that starts the connection, as
    # systemd starts ttyd. Then what systemd's KillMode=control-group does
    # on a restart: SIGTERM, then SIGKILL, to every process in that cgroup.
    service = os.path.join(CGROUP_ROOT, "pids", _own_cgroup(), "ctj-service")
    os.makedirs(service, exist_ok=True)
    conf = host.config_variant()
    try:
        t = connect(host, alice, terms, conf, "ctjrestart",
                    argv_prefix=("/bin/sh", "-c", f'echo $$ > {service}/cgroup.procs && exec "$@"', "sh"))
        assert shell_ready(t), t.output()
        sup = supervisor_pid(alice)
        assert procs(service), "the connection is in the service's cgroup"
        assert sup not in procs(service)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in procs(service):
                os.kill(pid, sig)
            time.sleep(0.5)
        assert wait_until(lambda: not procs(service), timeout=10)
        # The session jail runs on, and a new connection attaches to it.
        assert os.path.exists(f"/proc/{sup}") and supervisor_pid(alice) == sup
        assert host.has_tmux_session(alice, "ctjrestart")
        again = connect(host, alice, terms, conf, "ctjrestart")
        assert shell_ready(again, "BACK"), again.output()
    finally:
        host.run_root([host.bin, "stop", "--user", alice], config=conf)
        wait_until(lambda: not procs(service), timeout=5)
        os.rmdir(service)


def test_stop_ends_everything_in_the_cgroup_and_removes_it(host, alice, terms):
    t = attach(host, alice, "ctjstop", terms)
    assert shell_ready(t), t.output()
    uid = pwd.getpwnam(alice).pw_uid
    node = [d for d in cgroup_dirs(os.path.join(CGROUP_PARENT, str(uid)))]
    jails = os.path.join(node[0], "jails")
    # What a tenant does to outlive its jail: a new session, a double fork,
    # a stopped process.
    t.write("setsid sh -c 'sleep 600 & sleep 600' & (sleep 600 &) ; sleep 600 & kill -STOP $!\r")
    assert wait_until(lambda: len(procs(jails)) >= 8, timeout=10), procs(jails)
    inside = procs(jails)
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and r.stdout == f"{alice}: session jail stopped\n", r
    assert all(not os.path.exists(f"/proc/{p}") or open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
               for p in inside)
    assert host.wait_gone(alice), host.processes_of(alice)
    for d in node:
        assert not os.path.exists(d), d


def test_list_and_check_show_the_tenants_usage_and_limits(host, alice, terms):
    need_controllers("memory", "pids")
    t = attach(host, alice, "ctjlist", terms)
    assert shell_ready(t), t.output()
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice])
    assert r.returncode == 0, r
    fields = dict(f.split("=", 1) for f in r.stdout.split())
    assert int(fields["memory"]) > 1 << 20 and 3 <= int(fields["tasks"]) <= 50, r.stdout
    r = host.run_root([host.bin, "check", "--user", alice])
    assert "limits: configured: memory_max 50%, memory_high max, memory_swap_max 0, tasks_max 4096, cpu_weight 100, " \
           f"cgroup {CGROUP_PARENT}/UID" in r.stdout, r.stdout
    uid = pwd.getpwnam(alice).pw_uid
    line = [l for l in r.stdout.splitlines() if l.startswith("tenant cgroup: ")]
    assert line and line[0].startswith(f"tenant cgroup: /{CGROUP_PARENT}/{uid}: applied "), r.stdout
    assert "jails/pids.max 4096" in line[0], line


def test_an_explicit_limit_this_host_cannot_carry_refuses_the_start(host, alice):
    need_controllers("memory")
    # A parent the memory hierarchy cannot hold: its last component is
    # named like one of the kernel's files of the suite's own cgroup, so
    # no cgroup can be made there (the other hierarchies take it).
    own = _own_cgroup()
    blocked = "/".join(p for p in (own, "memory.limit_in_bytes" if V1 else "memory.max") if p)
    try:
        conf = host.config_variant(replace={"limits": {"cgroup_parent": blocked, "memory_max": "1G"}})
        r = host.run_root(host.jail(alice, "echo ran"), config=conf)
        assert r.returncode == 3, r
        assert "ran" not in r.stdout
        assert r.stderr.startswith("clihost-jail: memory_max is set in [limits] but cannot be enforced here ("), r
        assert r.stderr.endswith(" is not a directory of root's)\n") and r.stderr.count("\n") == 1, r.stderr
        # Control: the default limits there only warn, and the jail runs.
        conf = host.config_variant(replace={"limits": {"cgroup_parent": blocked}})
        r = host.run_root(host.jail(alice, "echo ran"), config=conf)
        assert r.returncode == 0 and r.stdout == "ran\n", r
        # The supervisor's start line (the one-off's supervisor made the cgroup).
        unenforced = lambda l: "warning: memory_max not enforced" in l
        lines = [l for l in front_and_supervisor_lines(host, r, until=unenforced) if unenforced(l)]
        assert lines, "the allow line names the limit it could not enforce"
    finally:
        if V1:
            remove_cgroup_tree(blocked)
