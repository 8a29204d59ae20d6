"""Signals and resource limits against the privileged helper: SIGKILL/SIGTERM
at each stage of a launch, a jail that ignores the relayed signal, hostile
RLIMIT_NOFILE / RLIMIT_NPROC / RLIMIT_FSIZE, and a crash signal to the
waiting root parent with RLIMIT_CORE unlimited.

The jail must never outlive the helper, a SIGTERM must close the PAM
session, nothing may run outside the jail, and no core file of a root
process may be written."""
import contextlib
import os
import pwd
import resource
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from attackutil import INSIDE, assert_inside, guard, helper_pids, payloads, live_processes, pid_audit, \
    pid_lines, pids_named, spawn, start_jail, wait_no_live, wait_until  # noqa: F401 (fixtures)
from conftest import PROXY, new_session


def pam_lines(host, p):
    """pam_unix's own open/close lines for one helper process (a Popen from
    start_jail or a Ran from spawn)."""
    lines = [l for l in pid_lines(host, p.pid, p.started, timeout=0.5) if "pam_unix(" in l]
    opened = sum("session opened" in l for l in lines)
    closed = sum("session closed" in l for l in lines)
    return opened, closed


def assert_nothing_left(host, tenant):
    assert wait_no_live(host, tenant), live_processes(host, tenant)
    assert wait_until(lambda: not helper_pids(host), 5), helper_pids(host)


def wait_sleeping(host, tenant):
    assert wait_until(lambda: pids_named(host, tenant, "sleep"), 10), host.processes_of(tenant)


def pam_loaded(pid):
    """pam_start() has run: the service's modules are mapped into the helper."""
    try:
        return "/security/pam_" in open(f"/proc/{pid}/maps").read()
    except OSError:
        return True


def stopped(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] in ("T", "Z", "X")
    except OSError:
        return True


def children(pid):
    try:
        return open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        return []


def bwrap_child(pid):
    for c in children(pid):
        try:
            if os.readlink(f"/proc/{c}/exe") == "/usr/bin/bwrap":
                return int(c)
        except OSError:
            pass
    return None


def sandbox_child_unarmed(helper):
    """bwrap has cloned its sandbox child, which has not forked yet: it is
    still setting the sandbox up, before do_init() arms --die-with-parent."""
    outer = bwrap_child(helper)
    inner = children(outer) if outer else []
    return bool(inner) and os.path.exists(f"/proc/{inner[0]}") and children(int(inner[0])) == []


def kill_leftovers(host, tenant):
    subprocess.run(["pkill", "-KILL", "-u", tenant], capture_output=True)
    host.wait_gone(tenant)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_signal_before_pam_leaves_nothing(host, alice, guard, sig):
    """Kills right after spawn, classified by stopping the helper first: only
    samples that were still before pam_start (no PAM module mapped, no child)
    count here; the later stages have their own tests below."""
    early = 0
    for delay in [0, 0, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.008]:
        s = new_session()
        p = start_jail(host, alice, "sleep 1000", s)
        time.sleep(delay)
        os.kill(p.pid, signal.SIGSTOP)
        assert wait_until(lambda: stopped(p.pid), 5, step=0.0005)
        before_pam = not pam_loaded(p.pid) and not children(p.pid)
        os.kill(p.pid, sig)
        os.kill(p.pid, signal.SIGCONT)
        if not before_pam:  # a later stage: tested below; just clean up
            p.kill()
            p.wait(timeout=10)
            kill_leftovers(host, alice)
            continue
        p.wait(timeout=10)
        early += 1
        assert p.returncode == -sig, p.returncode
        assert_nothing_left(host, alice)
        assert pam_lines(host, p) == (0, 0)
    assert early >= 2, "the helper was never caught before PAM"
    guard.check()


# Known limitation (SECURITY.md): bwrap arms --die-with-parent only in its
# pid 1 (do_init), after the sandbox setup. SIGTERM is handled (the helper,
# the jail's subreaper, SIGKILLs what bwrap leaves behind); a SIGKILL of the
# helper itself during those milliseconds leaves the sandbox running under
# init. Strict: this fails loudly once it is fixed, so the mark is removed.
KILL_DURING_SETUP = pytest.mark.xfail(strict=True, reason="SIGKILL of the helper during bwrap's setup: the "
                                      "sandbox, not yet armed with --die-with-parent, runs on under init")


@pytest.mark.parametrize("sig", [pytest.param(signal.SIGKILL, marks=KILL_DURING_SETUP), signal.SIGTERM],
                         ids=["KILL", "TERM"])
def test_signal_during_bwrap_setup_leaves_no_jail(host, alice, guard, sig):
    """The moment bwrap's sandbox child exists but is still setting up, the
    helper is signalled (TERM: relayed to bwrap; KILL: bwrap gets its
    parent-death SIGKILL). The helper must end promptly and nothing of the
    jail may survive it."""
    bad = []
    try:
        for i in range(10):
            if len(bad) >= 2:
                break
            s = new_session()
            p = start_jail(host, alice, "sleep 1000", s)
            assert wait_until(lambda: sandbox_child_unarmed(p.pid) or p.poll() is not None, 10, step=0.0001)
            os.kill(p.pid, sig)
            hung = False
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                hung = True
                os.kill(p.pid, signal.SIGTERM)  # a second TERM, as a impatient caller would
                time.sleep(1)
                bad.append(("helper still waiting 5 s after the signal and 1 s after a second TERM",
                            p.poll(), live_processes(host, alice)))
                p.kill()
                p.wait()
            if not wait_no_live(host, alice, timeout=1.5):
                bad.append(("jail outlived the helper", [
                    (q, open(f"/proc/{q}/cmdline").read().replace("\0", " ")[:40]) for q in live_processes(host, alice)]))
            kill_leftovers(host, alice)
            if sig == signal.SIGTERM and not hung:  # (a hung helper was SIGKILLed above)
                opened, closed = pam_lines(host, p)
                assert opened == closed, (opened, closed)
    finally:
        kill_leftovers(host, alice)
    assert not bad, bad
    guard.check()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["KILL", "TERM", "HUP", "INT"])
def test_signal_from_the_caller_during_the_run_ends_the_jail(host, alice, guard, sig):
    s = new_session()
    p = start_jail(host, alice, "sleep 1000", s)
    wait_sleeping(host, alice)
    # Sent by the proxy user itself: the setuid helper's real uid is theirs.
    k = host.run_as(PROXY, ["kill", "-s", signal.Signals(sig).name[3:], str(p.pid)])
    assert k.returncode == 0, k.stderr
    p.wait(timeout=10)
    assert_nothing_left(host, alice)
    lines = host.audit_lines(f"session={s}", want=1 if sig == signal.SIGKILL else 2)
    assert any("decision=allow" in l for l in lines), lines
    if sig != signal.SIGKILL:  # SIGKILL cannot be caught: PAM stays open (documented)
        assert p.returncode == 128 + sig, p.returncode
        assert any(f"status {128 + sig}" in l and "PAM session closed" in l for l in lines), lines
        assert pam_lines(host, p) == (1, 1)
    guard.check()


def test_jail_ignoring_the_relayed_signal_still_ends(host, alice, guard):
    s = new_session()
    p = start_jail(host, alice, "trap '' TERM HUP INT QUIT; sleep 1000 & wait; sleep 1000", s)
    wait_sleeping(host, alice)
    os.kill(p.pid, signal.SIGTERM)
    p.wait(timeout=10)
    assert_nothing_left(host, alice)
    lines = host.audit_lines(f"session={s}", want=2)
    assert any("PAM session closed" in l for l in lines), lines
    guard.check()


def test_signal_after_the_jail_exited_is_harmless(host, alice, guard):
    s = new_session()
    p = start_jail(host, alice, "exit 5", s)
    p.wait(timeout=10)
    assert p.returncode == 5
    with pytest.raises(ProcessLookupError):
        os.kill(p.pid, signal.SIGTERM)
    assert_nothing_left(host, alice)
    assert pam_lines(host, p) == (1, 1)
    guard.check()


@pytest.fixture
def slow_pam(host):
    """A PAM service like ours whose session stack ends in a 1 s pam_exec:
    a deterministic window while the PAM session is being opened."""
    svc = "/etc/pam.d/ctj-attack-slow"
    shutil.copy("/etc/pam.d/clihost-jail", svc)
    os.chmod(svc, 0o644)
    with open(svc, "a") as f:
        f.write("session required pam_exec.so quiet /bin/sleep 1\n")
    yield host.config_variant({"pam": "service = ctj-attack-slow"})
    os.unlink(svc)


def test_sigterm_while_pam_opens_still_closes_the_session(host, alice, guard, slow_pam):
    s = new_session()
    started = time.time()
    p = subprocess.Popen(host.jail(alice, "sleep 1000", session=s), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": slow_pam})
    p.started = started
    assert wait_until(lambda: pam_lines(host, p)[0] == 1, 5)  # pam_unix opened; pam_exec sleeps
    os.kill(p.pid, signal.SIGTERM)
    p.wait(timeout=10)
    assert_nothing_left(host, alice)
    time.sleep(1.2)  # the pam_exec child
    guard.check()
    # The session that was opened is closed, and the helper says so.
    assert pam_lines(host, p) == (1, 1), pid_lines(host, p.pid, p.started)
    assert host.audit_lines(f"session={s}"), "no audit line at all for this session"


def run_limited(host, tenant, limits, script="true", pipes=False, timeout=60):
    s = new_session()
    r = spawn(host.jail(tenant, INSIDE + "; " + script, session=s), limits=limits, pipes=pipes, timeout=timeout)
    return r, s


def assert_refused_or_inside(host, tenant, r, s):
    """Fail-closed (1/3/4, audited) or ran inside the jail; never anything else."""
    if "CTJ_INSIDE" in r.stdout:
        assert_inside(host, tenant, r.stdout)
    else:
        assert r.returncode in (1, 3, 4), r
        assert "clihost-jail: " in r.stderr or "bwrap: " in r.stderr, r
    lines = pid_audit(host, r)
    assert lines, r
    assert all(f"session={s}" in l for l in lines)
    opened, closed = pam_lines(host, r)
    assert opened == closed, (opened, closed)


def test_rlimit_nofile(host, alice, guard):
    # 3: the dynamic loader cannot even open the helper's libraries; no
    # helper code runs, so there is nothing to audit (and nothing happens).
    r, s = run_limited(host, alice, [(resource.RLIMIT_NOFILE, (3, 3))])
    assert r.returncode == 127 and "error while loading shared libraries" in r.stderr, r
    assert not pid_audit(host, r, timeout=0.5)
    # 4: the helper cannot open its policy (exit 3); 12 and more: enough for
    # a jail. (5 to 10 reach bwrap: the next test.)
    for n in [4, 12, 16]:
        r, s = run_limited(host, alice, [(resource.RLIMIT_NOFILE, (n, n))])
        assert_refused_or_inside(host, alice, r, s)
        assert_nothing_left(host, alice)
    guard.check()


def test_rlimit_nofile_reaching_bwrap_fails_closed_and_promptly(host, alice, guard):
    """Limits that let the helper through but starve bwrap somewhere in its
    setup: each launch must end (refused or run inside) within seconds and
    leave no process behind."""
    bad = []
    try:
        for n in range(5, 11):
            try:
                r, s = run_limited(host, alice, [(resource.RLIMIT_NOFILE, (n, n))], timeout=8)
            except subprocess.TimeoutExpired:
                bad.append((n, "no exit after 8 s", live_processes(host, alice)))
                kill_leftovers(host, alice)
                continue
            assert_refused_or_inside(host, alice, r, s)
            if not wait_no_live(host, alice, timeout=2.0):
                bad.append((n, "left", live_processes(host, alice)))
            kill_leftovers(host, alice)
    finally:
        kill_leftovers(host, alice)
    assert not bad, bad
    guard.check()


def test_rlimit_nproc(host, alice, guard):
    # The tenant already runs 3 processes; the caller's RLIMIT_NPROC is 0, 1,
    # or exactly that count, so the drop to the tenant lands at/over the limit.
    pw = pwd.getpwnam(alice)

    def as_alice():
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    sleepers = [subprocess.Popen(["sleep", "60"], preexec_fn=as_alice) for _ in range(3)]
    try:
        for n in [0, 1, 3, 4]:
            r, s = run_limited(host, alice, [(resource.RLIMIT_NPROC, (n, n))], "id -u")
            assert_refused_or_inside(host, alice, r, s)
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
    assert_nothing_left(host, alice)
    guard.check()


def test_rlimit_fsize_zero(host, alice, guard):
    r, s = run_limited(host, alice, [(resource.RLIMIT_FSIZE, (0, 0))], "echo x > ~/ctj-fsize; echo wrote=$?",
                       pipes=True)
    # The limit follows the tenant into the jail (its own writes die with
    # SIGXFSZ); the helper itself writes no files, so nothing is truncated.
    assert_refused_or_inside(host, alice, r, s)
    assert any("decision=exit" in l for l in host.audit_lines(f"session={s}", want=2))
    p = os.path.join(host.home(alice), "ctj-fsize")
    if os.path.exists(p):
        os.unlink(p)
    guard.check()


@contextlib.contextmanager
def core_dumps_to(directory, pipe, suid_dumpable):
    """kernel.core_pattern into directory: a file pattern (RLIMIT_CORE
    applies) or a pipe to a collector, as systemd-coredump/apport do (the
    kernel ignores RLIMIT_CORE then: only the dumpable flag stops a dump)."""
    saved = {k: open(f"/proc/sys/{k}").read() for k in ("kernel/core_pattern", "fs/suid_dumpable")}
    if pipe:
        collector = os.path.join(directory, "collect.sh")
        with open(collector, "w") as f:
            f.write(f"#!/bin/sh\ncat > {directory}/core.$1.$2\n")
        os.chmod(collector, 0o755)
        pattern = f"|{collector} %p %u"
    else:
        pattern = os.path.join(directory, "core.%p.%u")
    try:
        with open("/proc/sys/kernel/core_pattern", "w") as f:
            f.write(pattern)
        with open("/proc/sys/fs/suid_dumpable", "w") as f:
            f.write(str(suid_dumpable))
        yield
    finally:
        for k, v in saved.items():
            with open(f"/proc/sys/{k}", "w") as f:
                f.write(v)


def cores_in(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith("core."))


@pytest.mark.parametrize("pattern,sig", [("file", signal.SIGSEGV), ("pipe", signal.SIGABRT)],
                         ids=["file-SEGV", "pipe-ABRT"])
@pytest.mark.parametrize("caller", [PROXY, "root"])
def test_crash_of_the_waiting_root_parent_writes_no_core(host, alice, guard, caller, pattern, sig):
    """RLIMIT_CORE unlimited from the caller, a crash signal to the root
    parent while it holds the PAM session. suid_dumpable=2 so that only the
    helper's own PR_SET_DUMPABLE 0 / RLIMIT_CORE 0 stand in the way (with
    the default 0 the kernel would refuse to dump any setuid process). With
    the file pattern pam_limits also happens to reset the soft core limit to
    init's (0 here); the pipe pattern ignores RLIMIT_CORE, so there only the
    dumpable flag protects the PAM handle and whatever else root holds."""
    cores = tempfile.mkdtemp(prefix="ctj-attack-core-", dir="/tmp")
    os.chmod(cores, 0o1777)
    unlimited = [(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))]
    user = None if caller == "root" else caller
    try:
        with core_dumps_to(cores, pattern == "pipe", 2):
            # Control: a plain process of the same caller does dump here.
            c = subprocess.Popen(["sleep", "30"], preexec_fn=lambda: _demote_and_limit(user, unlimited))
            time.sleep(0.1)
            os.kill(c.pid, sig)
            c.wait()
            assert wait_until(lambda: cores_in(cores), 5), "core dumps are not being written at all"
            for n in cores_in(cores):
                os.unlink(os.path.join(cores, n))

            s = new_session()
            p = subprocess.Popen(host.jail(alice, "sleep 1000", session=s), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"},
                                 preexec_fn=lambda: _demote_and_limit(user, unlimited), start_new_session=True)
            wait_sleeping(host, alice)
            assert helper_pids(host) == [p.pid]  # the waiting parent (the child became bwrap)
            os.kill(p.pid, sig)
            p.wait(timeout=10)
            assert p.returncode == -sig, p.returncode
            assert_nothing_left(host, alice)
            time.sleep(0.5)
            assert cores_in(cores) == [], f"core of the root helper written: {cores_in(cores)}"
            assert any("decision=allow" in l for l in host.audit_lines(f"session={s}"))
    finally:
        shutil.rmtree(cores, ignore_errors=True)
    guard.check()


def _demote_and_limit(user, limits):
    if user:
        pw = pwd.getpwnam(user)
        os.initgroups(user, pw.pw_gid)
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    for res, val in limits:
        resource.setrlimit(res, val)
