"""The jail never outlives its caller or its front, and the PAM session is
closed by the tenant's supervisor (which owns the one-off jail too):
SIGKILL of the caller (ttyd), SIGTERM/SIGHUP relayed by the front, a
terminal hang-up, and session = false."""
import os
import re
import pwd
import shlex
import signal
import subprocess
import time

import pytest

from conftest import PROXY, new_session, pam_closed, pids, wait_until
from ownerutil import ancestors
from ptyutil import PtyProcess


def start_sleeping_jail(host, tenant, s, config=None):
    """A caller shell (standing in for ttyd) that runs the helper."""
    cmd = shlex.join(host.jail(tenant, "sleep 1000", session=s))
    env = {"PATH": "/usr/bin:/bin"}
    if config:
        env["CLIHOST_JAIL_CONFIG"] = config
    caller = subprocess.Popen(["/bin/sh", "-c", f"{cmd}; echo done"], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_until(lambda: pids(uid=pwd.getpwnam(tenant).pw_uid, comm="sleep"))
    return caller


def test_sigkill_of_the_caller_takes_the_whole_jail_and_closes_pam(host, alice):
    s = new_session()
    caller = start_sleeping_jail(host, alice, s)
    os.kill(caller.pid, signal.SIGKILL)
    caller.wait()
    assert host.wait_gone(alice), host.processes_of(alice)
    assert wait_until(lambda: not host.helper_pids())
    lines = host.audit_lines(f"session={s}", want=2, until=pam_closed)
    assert any(pam_closed(l) for l in lines), lines


def test_sigterm_to_the_helper_is_relayed_and_pam_closed(host, alice):
    s = new_session()
    caller = start_sleeping_jail(host, alice, s)
    helper = host.fronts()
    assert len(helper) == 1, helper
    os.kill(helper[0], signal.SIGTERM)
    assert host.wait_gone(alice)
    caller.wait(10)
    lines = host.audit_lines(f"session={s}", want=2, until=pam_closed)
    assert any("status 143" in l and "PAM session closed" in l for l in lines), lines


def test_sighup_to_the_helper_is_relayed(host, alice):
    s = new_session()
    caller = start_sleeping_jail(host, alice, s)
    os.kill(host.fronts()[0], signal.SIGHUP)
    assert host.wait_gone(alice)
    caller.wait(10)
    lines = host.audit_lines(f"session={s}", want=2, until=lambda l: "status 129" in l)
    assert any("status 129" in l for l in lines), lines


def test_sigkill_of_the_helper_takes_the_jail(host, alice):
    s = new_session()
    caller = start_sleeping_jail(host, alice, s)
    os.kill(host.fronts()[0], signal.SIGKILL)
    assert host.wait_gone(alice), host.processes_of(alice)
    caller.wait(10)


def test_terminal_hangup_ends_the_attach_jail_and_stop_the_session_jail(host, alice):
    s = new_session()
    t = PtyProcess([host.bin, "run", "--user", alice, "--session", s], user=PROXY)
    try:
        t.write("echo UP_$((6*7))\r")
        assert t.wait_for("UP_42", 15), t.output()
        listed = host.run_as(PROXY, [host.bin, "list", "--user", alice]).stdout
        assert f"sessions={s}" in listed, listed
        os.close(t.master)  # ttyd closes the pty master when the browser goes away
        t.master = -1
        assert t.wait(10) is not None
        # Only the connection's attach jail ended: the session jail runs on.
        time.sleep(0.5)
        # (its usage aside: the attach jail's memory and tasks went with it)
        usage = re.compile(r" memory=\S+ tasks=\S+")
        assert usage.sub("", host.run_as(PROXY, [host.bin, "list", "--user", alice]).stdout) == usage.sub("", listed)
        r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
        assert r.returncode == 0, r.stderr
        assert host.wait_gone(alice), host.processes_of(alice)
    finally:
        t.close()
        host.stop_all()


@pytest.mark.parametrize("network", ["host", "isolated"])
def test_session_false_the_supervisor_still_owns_the_jail(host, alice, network):
    """No PAM session: the one-off jail is still the tenant's supervisor's
    (no jail of a caller's own, whatever the network), and still dies with
    the caller."""
    s = new_session()
    conf = host.config_variant({"pam": "session = false", "jail": f"network = {network}"})
    caller = start_sleeping_jail(host, alice, s, config=conf)
    started = lambda l: ("one-off jail started by supervisor" in l and
                         f"network {network}, no PAM session" in l)
    lines = host.audit_lines(f"session={s}", want=2, until=started)
    assert any(started(l) for l in lines), lines
    sup = host.supervisors()
    assert len(sup) == 1, sup
    sleeper = pids(uid=pwd.getpwnam(alice).pw_uid, comm="sleep")[0]
    assert sup[0] in ancestors(sleeper), (sup, ancestors(sleeper))
    os.kill(caller.pid, signal.SIGKILL)
    caller.wait()
    assert host.wait_gone(alice), host.processes_of(alice)
    assert wait_until(lambda: not host.helper_pids(), 10), host.helper_pids()


def test_exit_status_of_the_jailed_command_is_returned(host, alice):
    r = host.run_as(PROXY, host.jail(alice, "exit 7"))
    assert r.returncode == 7


def test_no_process_of_the_jail_outlives_the_helper(host, alice):
    # The waiting parent is the jail's subreaper: when it returns (and closes
    # the PAM session) bwrap's pid 1 has been reaped too, not left to init.
    # Start from none at all: earlier tests' SIGKILLs leave orphans to init,
    # which may reap them seconds later (INIT_REAP_WAIT).
    assert host.wait_reaped(alice), host.processes_of(alice)
    for _ in range(5):
        r = host.run_as(PROXY, host.jail(alice, "true"))
        assert r.returncode == 0, r.stderr
        assert host.processes_of(alice) == []
        # The supervisor that a one-off started ends with it.
        assert wait_until(lambda: not host.helper_pids(), 5), host.helper_pids()
