"""Each privileged step made to fail on purpose (the fault-injection build
reads CLIHOST_JAIL_FAULT, honoured only when the real uid is 0): the helper
fails closed with the documented exit code and message, runs nothing, writes
an audit line, and leaves no jail or PAM session behind."""
import os

import pytest

from attackutil import assert_refusal_line
from conftest import attach_clients, install_faults_bin, new_session, refused



@pytest.fixture(scope="module")
def faults_bin(host):
    return install_faults_bin(host, "clihost-jail-faults")


def inject(host, faults_bin, tenant, fault, config=None):
    s = new_session()
    marker = os.path.join(host.home(tenant), f"ctj-ran-{s}")
    argv = [faults_bin, "run", "--user", tenant, "--session", s, "--", "/bin/sh", "-c", f"touch {marker}; echo RAN"]
    env = {"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_FAULT": fault}
    r = host.run_root(argv, env=env, config=config)
    assert "RAN" not in r.stdout and not os.path.exists(marker), (fault, r.stdout)
    assert_refusal_line(r, codes=(1, 3, 4))  # one printable "clihost-jail: " line
    assert host.wait_gone(tenant)
    lines = host.audit_lines(f"session={s}", until=refused)
    assert any(refused(l) for l in lines), (fault, lines)
    return r, lines


@pytest.mark.parametrize("fault,code,message", [
    ("pam_start", 3, "PAM start failed"),
    ("pam_acct", 1, "account check"),
    ("pam_open", 1, "open_session"),
    ("setgroups", 4, "privilege drop failed at setgroups"),
    ("setresgid", 4, "privilege drop failed at setresgid"),
    ("setresuid", 4, "privilege drop failed at setresuid"),
    ("bounding_set", 4, "privilege drop failed at clearing the bounding set: Operation not permitted"),
    ("capng_caps", 4, "privilege drop failed at clearing capabilities"),
    ("dumpable", 4, "cannot make the tenant's process not dumpable"),
    ("fork", 4, "fork failed"),
    ("fork_bwrap", 4, "fork failed"),
    ("enter_jails", 3, "cannot enter the tenant's jails cgroup: Permission denied"),
    ("exec", 3, "cannot execute /usr/bin/bwrap"),
    ("probe", 3, "user namespaces are unavailable"),
])
def test_failing_step_fails_closed(host, faults_bin, alice, fault, code, message):
    r, _ = inject(host, faults_bin, alice, fault)
    assert r.returncode == code, (fault, r.returncode, r.stderr)
    assert message in r.stderr, (fault, r.stderr)


@pytest.mark.parametrize("fault,code,message", [
    ("setresuid", 4, "privilege drop failed at setresuid"),
    ("capng_caps", 4, "privilege drop failed at clearing capabilities"),
])
def test_a_jail_that_ended_before_its_connection_still_says_why(host, faults_bin, alice, fault, code, message):
    """The one-off jail started for this connection fails in its watcher's
    drop before the supervisor sends it the connection (pause_before_send:
    2 s before every send), so the send fails: the front still gets the
    watcher's reason, not "cannot hand the connection to a one-off jail"
    (which CI's ASan run once printed, the watcher winning the race)."""
    r, _ = inject(host, faults_bin, alice, fault + ",pause_before_send")
    assert r.returncode == code, (fault, r.returncode, r.stderr)
    assert message in r.stderr, (fault, r.stderr)
    assert "cannot hand the connection" not in r.stderr, r.stderr


@pytest.mark.parametrize("fault", ["probe", "probe_fork"])
def test_failing_host_trial_fails_closed_before_pam(host, faults_bin, alice, fault):
    # private-or-hidepid needs the trial's answer to plan, so it runs first.
    conf = host.config_variant({"jail": "proc = private-or-hidepid"})
    r, lines = inject(host, faults_bin, alice, fault, config=conf)
    code, message = 3, "user namespaces are unavailable"
    assert r.returncode == code, (fault, r.returncode, r.stderr)
    assert message in r.stderr, (fault, r.stderr)


@pytest.mark.parametrize("fault,message", [
    ("skip_setresuid", "privilege drop not verified: uids"),
    ("skip_no_new_privs", "privilege drop not verified: no_new_privs not set"),
    ("skip_bounding", "privilege drop not verified: bounding set not empty"),
])
def test_a_drop_that_silently_did_nothing_is_caught_by_verification(host, faults_bin, alice, fault, message):
    r, _ = inject(host, faults_bin, alice, fault)
    assert r.returncode == 4
    assert message in r.stderr


@pytest.mark.parametrize("fault", ["setresuid", "capng_caps", "fork", "fork_bwrap", "exec"])
def test_pam_session_is_closed_after_a_failure_past_open(host, faults_bin, alice, fault):
    before = len(host.audit_lines(f"session closed for user {alice}", want=0, timeout=0))
    inject(host, faults_bin, alice, fault)
    after = host.audit_lines(f"session closed for user {alice}", want=before + 1)
    assert len(after) == before + 1


def test_fault_variable_is_ignored_by_the_shipped_build(host, alice):
    s = new_session()
    r = host.run_root(host.jail(alice, "echo RAN", session=s), env={"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_FAULT": "exec"})
    assert r.returncode == 0 and "RAN" in r.stdout


def test_an_attach_that_cannot_join_the_tenants_namespace_fails_closed(host, faults_bin, alice):
    """setns into the tenant's empty network namespace fails in the attach
    jail's watcher (before the drop): no tmux client starts (its argv has no
    --unshare-net: it would have the host's network), one line on stderr,
    exit 4, an audit line; the session jail itself is not harmed."""
    host.run_root([host.bin, "stop", "--user", alice])
    s = new_session()
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "setns"}
    # On a terminal, as ttyd runs it: the supervisor starts the attach jail
    # on the handed-over terminal, whose child fails to join; the line goes
    # to that terminal and the status back to the front.
    from ptyutil import PtyProcess
    t = PtyProcess([faults_bin, "run", "--user", alice, "--session", s], env=env)
    try:
        assert t.wait(20) == 4, t.output()
        assert t.wait_for("clihost-jail: cannot join the tenant's empty network namespace", 5), t.output()
    finally:
        t.close()
    clients = attach_clients(alice)
    assert clients == [], clients
    not_joined = lambda l: ("decision=fail" in l and
                            "cannot join the tenant's empty network namespace" in l)
    lines = host.audit_lines(f"session={s}", want=2, until=not_joined)
    assert any(not_joined(l) for l in lines), lines
    # The session jail started and still runs.
    listed = host.run_root([host.bin, "list"])
    assert f"tenant={alice} " in listed.stdout, listed
    host.run_root([host.bin, "stop", "--user", alice])
