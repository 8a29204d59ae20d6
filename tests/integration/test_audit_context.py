"""Every audit line names the request or event it is about (SECURITY.md,
"Audit lines"; issue 40, finding 5): the supervisor logs each request's
lines in that request's context (its action, caller, uid, via, session),
and its own events (a stop, a reaped jail of no request) as
action=supervise with no caller; a refusal writes one decision line."""
import os
import pwd
import subprocess

import pytest

from conftest import PROXY, RUNTIME_DIR, log_lines, logged_at, new_session, sh, spawn, start_as, wait_until
from ptyutil import attach, shell_ready

DECISIONS = ("decision=allow", "decision=deny", "decision=fail")


def _since(since, select, want=1, timeout=5.0):
    return log_lines(lambda l: logged_at(l) >= since - 1.0 and select(l), want, timeout)


def test_an_attach_ending_after_a_root_list_is_logged_as_the_attach(host, alice, terms):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    r = host.run_root([host.bin, "list", "--user", alice])
    assert r.returncode == 0 and s in r.stdout, r
    t.hangup()
    assert wait_until(lambda: t.proc.poll() is not None, 10)
    ended = _since(t.proc.started, lambda l: "attach jail ended" in l and f" session={s} " in l)
    assert len(ended) == 1, ended
    uid = pwd.getpwnam(PROXY).pw_uid
    assert f"action=run caller={PROXY} caller_uid={uid} via=setuid tenant={alice} session={s} " in ended[0], ended
    # Control: the list's own line in the supervisor is the list's.
    listed = _since(t.proc.started, lambda l: "action=list caller=root caller_uid=0 via=root" in l)
    assert listed, "the list left no line to compare with"


def test_a_stop_is_the_supervisors_own_event(host, alice, terms):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    assert host.run_root([host.bin, "list", "--user", alice]).returncode == 0
    sup = open(os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(alice).pw_uid}.state")).read().split()[3]
    assert host.run_root([host.bin, "stop", "--user", alice]).returncode == 0
    tag = f"clihost-jail[{sup}]:"
    asked = _since(t.proc.started, lambda l: tag in l and "the supervisor was asked to stop" in l)
    assert len(asked) == 1, asked
    assert "action=supervise caller=- caller_uid=-1 via=- " in asked[0] and " session=- " in asked[0], asked
    ended = _since(t.proc.started, lambda l: tag in l and "session jail ended (stop)" in l)
    assert len(ended) == 1 and "caller=- caller_uid=-1 via=- " in ended[0], ended


@pytest.fixture
def scratch_tenant(host):
    name = host.add_tenant("ctj-erin")
    host.extra_users = ["ctj-erin"]
    yield name
    host.run_root([host.bin, "stop", "--user", name])
    sh("userdel", "-r", "-f", name, check=False)


def test_a_refusal_of_the_supervisor_writes_one_decision_line(host, scratch_tenant):
    """PAM's account check is the supervisor's, for every connection: with
    its supervisor running (a one-off keeps it), an expired tenant's next
    request is refused there, and that is the one decision line; the front
    says why on stderr and logs only its handover (decision=note)."""
    keeper = start_as(PROXY, host.jail(scratch_tenant, "sleep 30"), stdin=subprocess.DEVNULL,
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        uid = pwd.getpwnam(scratch_tenant).pw_uid
        assert wait_until(lambda: os.path.exists(os.path.join(RUNTIME_DIR, f"{uid}.state")), 10)
        sh("usermod", "-e", "1", scratch_tenant)
        s = new_session()
        r = spawn(host.jail(scratch_tenant, "echo RAN", session=s))
    finally:
        keeper.kill()
        keeper.wait()
    assert r.returncode == 1 and "RAN" not in r.stdout, r
    assert r.stderr.startswith("clihost-jail: ") and "PAM" in r.stderr and r.stderr.count("\n") == 1, r
    lines = _since(r.started, lambda l: f" session={s} " in l, want=3, timeout=3)
    decisions = [l for l in lines if any(d in l for d in DECISIONS)]
    assert len(decisions) == 1, lines
    assert "decision=deny" in decisions[0] and r.stderr[len("clihost-jail: "):-1] in decisions[0], decisions
    # Control: the front handed over (its line is there), and it is no decision.
    assert any("decision=note" in l and "handing over to the supervisor" in l for l in lines), lines
