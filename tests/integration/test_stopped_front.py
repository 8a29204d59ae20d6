"""A caller can stop its front (SIGSTOP) at any step, and continue it at
any later time (THREATS.md, "The caller"). Nothing the front checked or
held may outlast that:

- the tenant's lock is only ever held by a process root through and
  through (the starter, then the supervisor until its record is written;
  `stop`'s own child): a stopped front holds none, and root's `stop` works;
- what the front checked is checked again where it is acted on, by a
  process the caller cannot delay: a supervisor's start checks the tenant
  and the configuration file again under the lock, and every connection's
  handshake checks the tenant again.

A front held after its checks is the fault build's `slow_handover` (2 s
between its checks and its handover), run by root as the tests run it."""
import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import time

import pytest

from conftest import CGROUP_PARENT, CGROUP_ROOT, PAM_TARGET, PROXY, RUNTIME_DIR, TENANT_GROUP, install_faults_bin, \
    new_session, pids, sh, wait_until
from ownerutil import cmdline, supervisor_pid
from ptyutil import PtyProcess, attach, shell_ready

SLOW = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "slow_handover"}


@contextlib.contextmanager
def pam_session_sleeping(seconds):
    """The test PAM service with a pam_exec of `sleep SECONDS` at the end of
    its session stack (open and close); put back after, and any such sleep
    still running (its supervisor ended under it) killed."""
    saved = PAM_TARGET + ".ctj-saved"
    shutil.copy(PAM_TARGET, saved)
    try:
        with open(PAM_TARGET, "a") as f:
            f.write(f"session required pam_exec.so quiet /bin/sleep {seconds}\n")
        yield
    finally:
        os.replace(saved, PAM_TARGET)
        for p in root_sleeps(seconds):
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)


def root_sleeps(seconds):
    """root's `/bin/sleep SECONDS` processes: pam_exec's, here."""
    return [p for p in pids(uid=0, live=True) if cmdline(p)[:2] == [b"/bin/sleep", str(seconds).encode()]]


@pytest.fixture
def slow_pam_session():
    """A supervisor's start (and its end) takes 2 s: a window to act in."""
    with pam_session_sleeping(2):
        yield


@pytest.fixture
def regroup(alice):
    """Takes alice out of the tenant group on call; puts her back after."""
    removed = []

    def remove():
        sh("gpasswd", "-d", alice, TENANT_GROUP)
        removed.append(True)
    yield remove
    if removed:
        sh("gpasswd", "-a", alice, TENANT_GROUP)




def test_a_front_stopped_during_a_start_holds_no_lock_and_stop_works(host, alice, terms, slow_pam_session):
    """The caller stops its front while the supervisor it started opens the
    PAM session (2 s). Root's `stop` then takes the tenant's lock within the
    start's time and ends the supervisor: exit 0, nothing of the tenant
    left. Controls: the caller's SIGSTOP of its front succeeds (the front
    is the caller's to stop), and its signal to the supervisor is refused
    (EPERM: the lock's holder is not)."""
    t = attach(host, alice, new_session(), terms)
    assert wait_until(lambda: root_sleeps(2), 10), t.output()  # the supervisor opens PAM
    r = host.run_as(PROXY, ["kill", "-STOP", str(t.proc.pid)])
    assert r.returncode == 0, r  # the control: the caller stops its front
    try:
        assert wait_until(lambda: open(f"/proc/{t.proc.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T", 5)
        assert wait_until(lambda: supervisor_pid(alice), 10)
        sup = supervisor_pid(alice)
        r = host.run_as(PROXY, ["kill", "-0", str(sup)])
        assert r.returncode != 0 and "Operation not permitted" in r.stderr, r
        started = time.monotonic()
        r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
        took = time.monotonic() - started
        assert r.returncode == 0 and "session jail stopped" in r.stdout, r
        assert took < 15, took
        assert host.wait_gone(alice, 10), host.processes_of(alice)
    finally:
        os.kill(t.proc.pid, signal.SIGCONT)
    assert t.wait(30) is not None


def test_a_front_held_after_its_checks_gets_no_jail_once_its_tenant_is_removed(host, alice, terms, regroup):
    """Reconnect: the tenant's supervisor runs. A front passes its checks,
    is held, and alice leaves the tenant group meanwhile: the supervisor's
    handshake checks her again and refuses (exit 1, the reason, an audit
    line); nothing starts. Controls: the same held front attaches while
    she stays a tenant; a new front, once she has left, is refused by its
    own checks for the same reason."""
    faults = install_faults_bin(host)
    first = attach(host, alice, new_session(), terms)
    assert shell_ready(first), first.output()
    sup = supervisor_pid(alice)
    # The control: held, still a tenant, it attaches.
    s = new_session()
    held = attach_as_root(faults, alice, s, terms)
    assert shell_ready(held, timeout=20), held.output()
    held.hangup()
    assert held.wait(10) is not None
    # Held, and alice leaves the group while it waits.
    s = new_session()
    held = attach_as_root(faults, alice, s, terms)
    time.sleep(0.5)
    regroup()
    assert held.wait(15) == 1, held.output()
    assert f"not a member of {TENANT_GROUP}" in held.output(), held.output()
    assert not host.has_tmux_session(alice, s)
    assert supervisor_pid(alice) == sup
    refused = [l for l in host.audit_lines(f"session={s}", until=lambda l: "deny" in l) if "deny" in l]
    assert any(f"[{sup}]" in l and "not a member" in l for l in refused), refused
    # The control: a new front is refused by its own checks.
    r = host.run_as(PROXY, [host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/true"])
    assert r.returncode == 1 and f"not a member of {TENANT_GROUP}" in r.stderr, r


def attach_as_root(faults, tenant, session, terms):
    t = PtyProcess([faults, "run", "--user", tenant, "--session", session], env=SLOW)
    terms.append(t)
    return t


@pytest.mark.parametrize("change", ["tenant", "config"])
def test_a_front_held_after_its_checks_starts_no_supervisor_on_what_changed(host, alice, terms, regroup, change):
    """First connection: no supervisor runs. A front passes its checks and is
    held; meanwhile alice leaves the tenant group, or the configuration file
    changes. The starter checks both again under the tenant's lock: no
    supervisor starts (no PAM session, no record), exit 1 or 3 with the
    reason. Control: held while nothing changes, it starts one."""
    faults = install_faults_bin(host)
    config = host.config_variant({"jail": "tmpfs_size = 64M"})
    env = dict(SLOW, CLIHOST_JAIL_CONFIG=config)
    argv = [faults, "run", "--user", alice, "--session", new_session(), "--", "/bin/true"]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r  # the control
    assert wait_until(lambda: supervisor_pid(alice) is None, 10)
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    if change == "tenant":
        regroup()
    else:
        text = open(config).read().replace("tmpfs_size = 64M", "tmpfs_size = 32M")
        with open(config, "w") as f:
            f.write(text)
    out, err = p.communicate(timeout=60)
    if change == "tenant":
        assert p.returncode == 1 and f"not a member of {TENANT_GROUP}" in err, (p.returncode, err)
    else:
        assert p.returncode == 3, (p.returncode, err)
        assert "clihost-jail: the configuration changed while this request waited: connect again" in err, err
    assert supervisor_pid(alice) is None
    assert not host.processes_of(alice), host.processes_of(alice)


# The caller's wrapper: sets its scheduling, says what it reads back (the
# control), then execs the front with the rest of its arguments.
SCHEDULED_CALLER = """
import ctypes, os, sys
os.nice(19)
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
os.sched_setaffinity(0, {0})
with open("/proc/self/oom_score_adj", "w") as f:
    f.write("500")
assert ctypes.CDLL(None).prctl(29, ctypes.c_ulong(3000000000), 0, 0, 0) == 0  # PR_SET_TIMERSLACK
print("CALLER", os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sorted(os.sched_getaffinity(0)),
      open("/proc/self/oom_score_adj").read().strip(), open("/proc/self/timerslack_ns").read().strip(), flush=True)
os.execv(sys.argv[1], sys.argv[1:])
"""

# The one-off's command: its own scheduling, as the jail gives it.
REPORT = ("read -r stat </proc/self/stat; set -- ${stat##*) }; "
          "echo JAIL nice=${17} policy=${39} cpus=$(grep Cpus_allowed_list /proc/self/status | cut -f2) "
          "oom=$(cat /proc/self/oom_score_adj) slack=$(cat /proc/self/timerslack_ns); exec sleep 4362")


def scheduling_of(pid):
    """nice, policy, CPUs allowed, oom_score_adj, timer slack of a process."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpus = [l.split(":", 1)[1].strip() for l in open(f"/proc/{pid}/status") if l.startswith("Cpus_allowed_list:")][0]
    return (int(fields[16]), int(fields[38]), cpus, open(f"/proc/{pid}/oom_score_adj").read().strip(),
            open(f"/proc/{pid}/timerslack_ns").read().strip())


def test_the_callers_scheduling_reaches_neither_the_supervisor_nor_its_jails(host, alice, terms):
    """A caller's front runs at nice 19, SCHED_IDLE, on CPU 0 only, with a 3 s
    timer slack and oom_score_adj 500. The supervisor it starts (which
    serves every later caller, and held the tenant's lock meanwhile) and
    the one-off jail's command run with nice 0 (not PID 1's, -10 on some
    machines), PID 1's CPUs, SCHED_OTHER and the kernel's default timer
    slack; the supervisor at oom_score_adj 0, the one-off's command at the
    helper's own 1000 (SECURITY.md row 50: the tenant's work is the OOM
    killer's first pick), neither at the caller's 500.
    Control: the caller's wrapper reads back what it set, just before it
    execs the front."""
    assert supervisor_pid(alice) is None
    pid1 = scheduling_of(1)
    want = (0, 0, pid1[2], "1000", "50000")
    want_supervisor = (0, 0, pid1[2], "0", "50000")
    t = PtyProcess(["/usr/bin/python3", "-c", SCHEDULED_CALLER, host.bin, "run", "--user", alice, "--session",
                    new_session(), "--", "/bin/sh", "-c", REPORT], user=PROXY)
    terms.append(t)
    assert t.wait_for("JAIL nice=", 20), t.output()
    assert "CALLER 19 5 [0] 500 3000000000" in t.output(), t.output()  # the control
    assert wait_until(lambda: "slack=" in t.output(), 5), t.output()
    line = [l for l in t.output().splitlines() if l.startswith("JAIL ")][0].split()
    got = dict(kv.split("=", 1) for kv in line[1:])
    assert (int(got["nice"]), int(got["policy"]), got["cpus"], got["oom"], got["slack"]) == want, (got, want)
    assert scheduling_of(supervisor_pid(alice)) == want_supervisor
    t.hangup()
    assert t.wait(10) is not None


@pytest.fixture
def hanging_pam_session():
    """A PAM module that never returns (10 min) while a session opens."""
    with pam_session_sleeping(600):
        yield


def lock_holders(tenant):
    """The pids /proc/locks names for a flock on the tenant's lock file."""
    try:
        ino = os.stat(os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.lock")).st_ino
    except FileNotFoundError:
        return []
    out = []
    for line in open("/proc/locks"):
        f = line.split()
        if len(f) >= 6 and f[1] == "FLOCK" and f[5].split(":")[-1] == str(ino):
            out.append(int(f[4]))
    return out


def test_a_start_that_hangs_ends_at_its_bound_and_frees_the_lock(host, alice, hanging_pam_session):
    """A PAM module that never returns while a supervisor starts: the start
    ends at its bound (60 s; the fault build's `short_start_bound`, 3 s),
    the front fails closed with the reason (exit 3), nothing of the tenant
    is left, and the tenant's lock is free: `stop` answers at once. Control:
    while PAM hangs, the lock is held."""
    faults = install_faults_bin(host)
    env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_FAULT": "short_start_bound"}
    started = time.monotonic()
    p = subprocess.Popen([faults, "run", "--user", alice, "--session", new_session(), "--", "/bin/true"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: lock_holders(alice), 2.5)  # the control
    _, err = p.communicate(timeout=30)
    took = time.monotonic() - started
    assert p.returncode == 3, (p.returncode, err)
    assert "clihost-jail: the supervisor's start did not end within 3 s" in err, err
    assert took < 8, took
    assert not lock_holders(alice)
    assert supervisor_pid(alice) is None
    started = time.monotonic()
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and "no session jail was running" in r.stdout, r
    assert time.monotonic() - started < 5
    assert not host.processes_of(alice), host.processes_of(alice)


class CallersCgroup:
    """A cgroup handed to the caller (its directory and files chowned to it,
    as a host that delegates cgroups does), below this run's own cgroup, in
    a hierarchy where a cgroup can be frozen: a v1 freezer (freezer.state)
    or a cgroup2 hierarchy (cgroup.freeze; on a hybrid host the unified
    one, which has no controller but that file)."""

    def __init__(self, kind):
        self.kind = kind
        if kind == "v1 freezer":
            self.mount, self.key = os.path.join(CGROUP_ROOT, "freezer"), "freezer"
            self.files, self.freeze_file = ["cgroup.procs", "tasks", "freezer.state"], "freezer.state"
            if not os.path.exists(os.path.join(self.mount, "tasks")):
                pytest.skip(f"this host has no v1 freezer hierarchy at {self.mount}")
        else:
            self.mount, self.key = CGROUP_ROOT, ""
            if not os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
                self.mount = os.path.join(CGROUP_ROOT, "unified")
            self.files, self.freeze_file = ["cgroup.procs", "cgroup.threads", "cgroup.freeze"], "cgroup.freeze"
            if not os.path.exists(os.path.join(self.mount, "cgroup.procs")):
                pytest.skip(f"this host has no cgroup2 hierarchy at {CGROUP_ROOT} or {self.mount}")
        self.path = os.path.join(self.mount, cgroup_line(os.getpid(), self.key).strip("/"), f"ctj-caller-{os.getpid()}")
        self.procs = os.path.join(self.path, "cgroup.procs")

    def make(self):
        os.mkdir(self.path)
        pw = pwd.getpwnam(PROXY)
        for f in [""] + self.files:
            os.chown(os.path.join(self.path, f), pw.pw_uid, pw.pw_gid)

    def freeze_command(self, on):
        value = ("FROZEN" if on else "THAWED") if self.kind == "v1 freezer" else ("1" if on else "0")
        return f"echo {value} > {os.path.join(self.path, self.freeze_file)}"

    def frozen(self):
        if self.kind == "v1 freezer":
            return open(os.path.join(self.path, "freezer.state")).read().strip() == "FROZEN"
        return "frozen 1" in open(os.path.join(self.path, "cgroup.events")).read()

    def members(self):
        return [int(p) for p in open(self.procs).read().split()]

    def remove(self):
        """Thawed, the caller's processes left in it ended, removed."""
        subprocess.run(["/bin/sh", "-c", self.freeze_command(False)], check=True)
        if not wait_until(lambda: not self.members(), 30):
            for p in self.members():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            wait_until(lambda: not self.members(), 10)
        os.rmdir(self.path)


def cgroup_line(pid, key):
    """PID's cgroup in the hierarchy whose /proc/PID/cgroup line names `key`
    among its controllers ("" is cgroup2's 0:: line)."""
    for line in open(f"/proc/{pid}/cgroup"):
        _, controllers, path = line.rstrip("\n").split(":", 2)
        if (key == "" and controllers == "") or (key and key in controllers.split(",")):
            return path
    return None


@pytest.fixture(params=["v1 freezer", "cgroup2"])
def callers_cgroup(request):
    cg = CallersCgroup(request.param)
    cg.make()
    yield cg
    cg.remove()


def test_a_caller_freezing_its_own_cgroup_holds_no_lock(host, alice, terms, slow_pam_session, callers_cgroup):
    """A caller that owns a cgroup runs `stop` in it and freezes it while
    stop's child holds the tenant's lock (the supervisor's PAM close takes
    2 s). A freeze asks for no uid, so before it locked, the child left the
    caller's cgroup for root's PARENT/helper in that hierarchy: it finishes
    the stop, and root's own `stop` gets the lock (exit 0, nothing left to
    stop). Controls: the caller's front is in its cgroup and frozen there;
    before this, root's `stop` failed on the lock (exit 4) until the thaw."""
    cg = callers_cgroup
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    script = (f"echo $$ > {cg.procs} && exec setpriv --reuid={PROXY} --regid={PROXY} --init-groups "
              f"{host.bin} stop --user {alice}")
    frozen_stop = subprocess.Popen(["/bin/sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
    assert wait_until(lambda: lock_holders(alice), 5), lock_holders(alice)
    holder = lock_holders(alice)[0]
    assert cgroup_line(holder, cg.key) == f"/{CGROUP_PARENT}/helper", (cg.kind, open(f"/proc/{holder}/cgroup").read())
    assert holder not in cg.members() and frozen_stop.pid in cg.members(), (holder, cg.members())
    r = host.run_as(PROXY, ["/bin/sh", "-c", cg.freeze_command(True)])
    assert r.returncode == 0, r  # the caller may freeze what it owns
    try:
        assert wait_until(cg.frozen, 5), cg.kind  # and its front is frozen
        r = subprocess.run([host.bin, "stop", "--user", alice], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "no session jail was running" in r.stdout, r
    finally:
        subprocess.run(["/bin/sh", "-c", cg.freeze_command(False)], check=True)
    out, err = frozen_stop.communicate(timeout=30)
    assert frozen_stop.returncode == 0 and "session jail stopped" in out, (frozen_stop.returncode, out, err)


def test_no_process_of_the_tenant_stays_in_the_callers_cgroup(host, alice, terms, callers_cgroup):
    """A first connection from a caller that owns a cgroup: the tenant's
    supervisor and every process of the tenant's jails are in the tenant's
    own PARENT/UID in that hierarchy, none in the caller's (which it could
    freeze, or count against its own limits): on a hybrid host the cgroup2
    hierarchy too, which has no controller. Control: the caller's front is
    in the caller's cgroup."""
    cg = callers_cgroup
    script = (f"echo $$ > {cg.procs} && exec setpriv --reuid={PROXY} --regid={PROXY} --init-groups "
              f"{host.bin} run --user {alice} --session {new_session()}")
    t = PtyProcess(["/bin/sh", "-c", script])
    terms.append(t)
    assert shell_ready(t), t.output()
    assert t.proc.pid in cg.members(), (t.proc.pid, cg.members())
    sup = supervisor_pid(alice)
    tenant = f"/{CGROUP_PARENT}/{pwd.getpwnam(alice).pw_uid}"
    assert cgroup_line(sup, cg.key) == f"{tenant}/supervisor", (cg.kind, open(f"/proc/{sup}/cgroup").read())
    # The helper's watchers (of the tenant's uid) are in the supervisor's
    # leaf, slirp4netns in the net leaf (ARCHITECTURE.md's table);
    # everything in a jail is in the jails leaf.
    leaves = {}
    for p in host.processes_of(alice):
        argv = cmdline(p)
        if argv and argv[0]:  # not a zombie (no argv, and the root cgroup)
            leaves[p] = ("supervisor" if argv[0].endswith((b"/clihost-jail", b"clihost-jail-supervisor"))
                         else "net" if argv[0].endswith(b"/slirp4netns") else "jails")
    assert "jails" in leaves.values() and "supervisor" in leaves.values(), leaves
    for p, leaf in leaves.items():
        assert cgroup_line(p, cg.key) == f"{tenant}/{leaf}", (cg.kind, p, cmdline(p), open(f"/proc/{p}/cgroup").read())
    assert not set(leaves) & set(cg.members()), cg.members()
    t.close()
