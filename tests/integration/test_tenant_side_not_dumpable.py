"""Every process that becomes the tenant does so through one entry point
(run_as_tenant): dropped and verified, then not dumpable, before anything
else. Until it execs, such a process still holds the helper's memory and its
/proc/PID/environ still shows the caller's original environment (clearenv()
does not erase it): with fs.suid_dumpable = 1 a dumpable one would hand the
tenant the caller's secrets. (Issue: the probe child, check's children, kill
and the session = false exec path were dumpable.)

The fault-injection build holds each tenant-side process still for a moment
right after that point (CLIHOST_JAIL_FAULT=pause_as_tenant), so the test can
try to read it as the tenant, on every path."""
import os
import pwd
import subprocess
import time

import pytest

from conftest import ADMIN_TARGET, SUPERVISOR_TARGET, install_faults_bin, new_session
from ptyutil import PtyProcess

SECRET = "CTJ_PROXY_SECRET=ctj-must-not-leak-42"


@pytest.fixture(scope="module")
def faults_bin(host):
    return install_faults_bin(host, "clihost-jail-faults-dump")


@pytest.fixture(scope="module")
def suid_dumpable():
    # 1: the kernel's most permissive setting, where only the process's own
    # PR_SET_DUMPABLE protects it after a credential change.
    path = "/proc/sys/fs/suid_dumpable"
    old = open(path).read().strip()
    with open(path, "w") as f:
        f.write("1")
    yield
    with open(path, "w") as f:
        f.write(old)


def tenant_side(images, uid):
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") not in images:
                continue
            with open(f"/proc/{pid}/status") as f:
                uids = next(l for l in f if l.startswith("Uid:")).split()
        except (OSError, StopIteration):
            continue
        if int(uids[1]) == uid:
            out.append(int(pid))
    return out


def identity(pid):
    """What a process is: its executable and start time (None once gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            start = f.read().rsplit(")", 1)[1].split()[19]
        return os.readlink(f"/proc/{pid}/exe"), start
    except OSError:
        return None


def read_as(host, tenant, path):
    return host.run_as(tenant, ["/usr/bin/python3", "-c",
                                f"import sys; sys.stdout.write(open({path!r}, 'rb').read().decode(errors='replace'))"])


def probe_while_paused(host, tenant, binary, start, exclude=()):
    """Starts a helper run (start() returns the process), waits for a
    tenant-side helper process (other than those in exclude), and reads its
    environ as the tenant; tries each new one until a read counts."""
    uid = pwd.getpwnam(tenant).pw_uid
    # The front's own tenant-side children (the namespace trial) run its
    # image; the watchers, the supervisor program's, check's the admin
    # program's (their fault builds).
    images = (binary, SUPERVISOR_TARGET + "-faults", ADMIN_TARGET + "-faults")
    proc = start()
    try:
        deadline = time.time() + 15
        tried, results = set(), {}
        while time.time() < deadline and not results:
            for pid in tenant_side(images, uid):
                if pid in exclude or pid in tried:
                    continue
                tried.add(pid)
                # A watcher's bwrap child is the helper (the watcher's memory)
                # until its execve, then bwrap: what was read after that is
                # bwrap's, not the helper's. Only a read of a process that was
                # the helper before and after it counts.
                was = identity(pid)
                if was is None or was[0] not in images:
                    continue
                env = read_as(host, tenant, f"/proc/{pid}/environ")
                if identity(pid) != was:
                    continue
                results[pid] = (env.returncode, "PermissionError" in env.stderr, SECRET in env.stdout)
            time.sleep(0.02)
        assert tried, "no tenant-side process of the helper showed up"
        assert results, f"every tenant-side process of the helper ({sorted(tried)}) exec'd or ended while it was read"
        return results
    finally:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def env_with_secret():
    return {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_FAULT": "pause_as_tenant", SECRET.split("=")[0]: SECRET.split("=")[1]}


def run_faults(host, faults_bin, args, config=None, fault="pause_as_tenant"):
    env = dict(env_with_secret(), CLIHOST_JAIL_FAULT=fault)
    if config:
        env["CLIHOST_JAIL_CONFIG"] = config
    return lambda: subprocess.Popen([faults_bin, *args], env=env, cwd="/", stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def assert_unreadable(results):
    for pid, (rc, denied, leaked) in results.items():
        assert rc != 0 and denied and not leaked, (pid, results)


def test_probe_reads_a_dumpable_tenant_process(host, alice, suid_dumpable):
    # Positive control: the same read of a plain process of the tenant with
    # the secret in its environment works, so a refusal above means something.
    pw = pwd.getpwnam(alice)

    def as_alice():
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    p = subprocess.Popen(["sleep", "30"], env={SECRET.split("=")[0]: SECRET.split("=")[1]}, preexec_fn=as_alice)
    try:
        time.sleep(0.2)
        r = read_as(host, alice, f"/proc/{p.pid}/environ")
        assert r.returncode == 0 and SECRET in r.stdout, r
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("path", ["check", "one-off", "one-off session=false", "probe child",
                                  "session jail watcher", "attach", "kill"])
def test_every_tenant_side_process_is_not_dumpable(host, alice, faults_bin, suid_dumpable, path):
    s = new_session()
    cmd = ["run", "--user", alice, "--session", s, "--", "/bin/true"]
    terms = []
    try:
        if path == "check":
            start = run_faults(host, faults_bin, ["check", "--user", alice])
        elif path == "one-off":
            start = run_faults(host, faults_bin, cmd)
        elif path == "one-off session=false":
            start = run_faults(host, faults_bin, cmd, host.config_variant({"pam": "session = false"}))
        elif path == "probe child":
            start = run_faults(host, faults_bin, cmd, host.config_variant({"jail": "proc = private-or-hidepid"}))
        elif path == "session jail watcher":
            # On a terminal: an attach without one is refused before any start.
            start = lambda: PtyProcess([faults_bin, "run", "--user", alice, "--session", s], user=None,
                                       env=dict(env_with_secret(), CLIHOST_JAIL_FAULT="pause_as_tenant",
                                                TERM="xterm")).proc
        elif path == "attach":
            # The supervisor starts every attach jail: a session jail of the
            # faults build's supervisor, then a second connection, whose
            # attach jail's watcher that supervisor forks (the session
            # jail's own watcher is left out of the probe).
            t = PtyProcess([faults_bin, "run", "--user", alice, "--session", s], env=dict(env_with_secret(), TERM="xterm"))
            terms.append(t)
            t.write("echo UP_$((6*7))\r")
            assert t.wait_for("UP_42", 30), t.output()
            before = set(tenant_side((faults_bin, SUPERVISOR_TARGET + "-faults"), pwd.getpwnam(alice).pw_uid))

            class Connection:
                def __init__(self):
                    self.term = PtyProcess([faults_bin, "run", "--user", alice, "--session", s], env=dict(env_with_secret(), TERM="xterm"))
                    terms.append(self.term)

                def wait(self, timeout):
                    self.term.hangup()
                    return self.term.wait(timeout)

                def kill(self):
                    self.term.proc.kill()

            assert_unreadable(probe_while_paused(host, alice, faults_bin, Connection, exclude=before))
            return
        else:
            # The supervisor starts kill's query jail: a session jail of the
            # faults build's supervisor, then kill, whose query jail's
            # watcher that supervisor forks (the session jail's own watcher
            # is left out of the probe). Paused 2 s, the query misses its
            # 2 s deadline: the probe needs only the process.
            t = PtyProcess([faults_bin, "run", "--user", alice, "--session", s], env=dict(env_with_secret(), TERM="xterm"))
            terms.append(t)
            t.write("echo UP_$((6*7))\r")
            assert t.wait_for("UP_42", 30), t.output()
            before = set(tenant_side((faults_bin, SUPERVISOR_TARGET + "-faults"), pwd.getpwnam(alice).pw_uid))
            start = run_faults(host, faults_bin, ["kill", "--user", alice, "--session", s])
            assert_unreadable(probe_while_paused(host, alice, faults_bin, start, exclude=before))
            return
        assert_unreadable(probe_while_paused(host, alice, faults_bin, start))
    finally:
        for t in terms:
            t.close()
        host.stop_all()
        assert host.wait_gone(alice, 15), host.processes_of(alice)


@pytest.mark.parametrize("path", ["check", "one-off"])
def test_no_moment_of_the_drop_is_readable_by_the_tenant(host, alice, faults_bin, suid_dumpable, path):
    # The kernel resets the dumpable flag to fs.suid_dumpable whenever the
    # effective uid changes. The fault build holds still right after the
    # drop's change of effective uid, before anything else: a process the
    # tenant can read there was dumpable, however briefly, in every run.
    args = ["check", "--user", alice] if path == "check" else \
        ["run", "--user", alice, "--session", new_session(), "--", "/bin/true"]
    try:
        assert_unreadable(probe_while_paused(host, alice, faults_bin,
                                             run_faults(host, faults_bin, args, fault="pause_mid_drop")))
    finally:
        host.stop_all()
        assert host.wait_gone(alice, 15), host.processes_of(alice)
