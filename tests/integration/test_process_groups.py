"""No tenant process can freeze, keep alive or orphan a process of the helper
(issue: a jail process that joined the watcher's process group stopped it
with kill(0, SIGSTOP); SIGKILL of the root parent then left the jail running,
and a hang-up left the root parent waiting forever with PAM open).

One-off jails (`run -- COMMAND`) run on the caller's terminal: the front
hands its stdio to the tenant's supervisor, which starts the jail (its
watcher, then bwrap) in a session of its own, so the caller's terminal is
no controlling terminal of the jail; the front keeps the terminal's
foreground and relays ^C, ^\\ and ^Z to the jail's process group."""
import os
import pwd
import signal
import time

import pytest

from conftest import PROXY, new_session, prepared_oneoff_jails, wait_until
from ptyutil import PtyProcess


def state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
        return s[s.rfind(")") + 2]
    except OSError:
        return None


def front_supervisor_watcher(host, tenant, timeout=10.0):
    """The one-off jail's front, its supervisor and its watcher, read in one
    consistent snapshot (a process list read twice can differ in between).
    Not the watcher of the jail the supervisor prepares for the tenant's
    next one-off (50 ms after this one's start)."""
    found = []
    uid = pwd.getpwnam(tenant).pw_uid

    def one_each():
        fronts, sups = host.fronts(), host.supervisors()
        helpers = host.helper_pids()
        prepared = prepared_oneoff_jails(uid)
        others = [p for p in helpers if p not in host.waiting_parents() and p not in prepared]
        if len(fronts) == 1 and len(sups) == 1 and len(others) == 1:
            found[:] = [fronts[0], sups[0], others[0]]
            return True
        return False

    assert wait_until(one_each, timeout), (host.fronts(), host.supervisors(), host.helper_pids())
    return found


@pytest.fixture
def one_off(host, alice):
    opened = []

    def start(script):
        t = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--",
                        "/bin/sh", "-c", script], user=PROXY)
        opened.append(t)
        return t

    yield start
    for t in opened:
        t.close()


def test_jail_and_helper_processes_share_no_process_group_or_session(host, alice, one_off):
    t = one_off("echo UP_$((6*7)); sleep 100")
    assert t.wait_for("UP_42"), t.output()
    front, sup, watcher = front_supervisor_watcher(host, alice)
    jail = [p for p in host.processes_of(alice) if p != watcher]
    assert jail
    helper_groups = {os.getpgid(front), os.getpgid(sup), os.getpgid(watcher)}
    helper_sessions = {os.getsid(front), os.getsid(sup)}
    for p in jail:
        assert os.getpgid(p) not in helper_groups, p
        assert os.getsid(p) not in helper_sessions, p
        # No controlling terminal: the caller's terminal is not the jail's
        # (no TIOCSTI into it, no job control of the caller's).
        assert int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[4]) == 0, p
    # The front keeps the terminal's foreground (the jail is in no session
    # of the terminal's): ^C and ^Z reach the front, which relays them.
    fg = os.tcgetpgrp(t.master)
    assert fg == os.getpgid(front), (fg, front)
    t.hangup()
    assert t.wait(10) is not None


def test_ctrl_c_and_ctrl_z_in_a_cooked_one_off_reach_the_command(host, alice, one_off):
    """^Z stops the command (the jail's process group) and SIGCONT, relayed
    as a terminal's, resumes it; ^C ends it, as a shell's job would end."""
    t = one_off("echo UP_$((6*7)); i=0; while :; do i=$((i+1)); echo TICK_$i; sleep 0.2; done")
    assert t.wait_for("UP_42"), t.output()
    front, _, _ = front_supervisor_watcher(host, alice)
    assert t.wait_for("TICK_3", 10), t.output()
    t.write("\x1a")  # ^Z
    assert wait_until(lambda: any(state(p) == "T" for p in host.processes_of(alice)), 5), \
        [(p, state(p)) for p in host.processes_of(alice)]
    before = t.output().count("TICK_")
    time.sleep(1)
    assert t.output().count("TICK_") == before, "the command ran on after ^Z"
    os.kill(front, signal.SIGCONT)  # as a shell's `fg` would
    assert wait_until(lambda: t.output().count("TICK_") > before + 1, 5), t.output()[-200:]
    t.write("\x03")  # ^C
    assert t.wait(10) == 128 + signal.SIGINT
    assert host.wait_gone(alice, 10), host.processes_of(alice)


# Run in the jail: for each process group named on the command line, a
# child joins it and stops the whole group (and so itself); the parent
# reports whether the join worked, then kills the stopped child.
JOIN_AND_STOP = """import os, signal, sys, time
for g in map(int, sys.argv[1:]):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, g)
        except OSError as e:
            os.write(w, b"REFUSED %d errno=%d\\n" % (g, e.errno)); os._exit(0)
        os.write(w, b"JOINED %d\\n" % g)
        os.kill(0, signal.SIGSTOP)
        os._exit(0)
    os.close(w)
    print(os.read(r, 100).decode().strip(), flush=True)
    time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


def test_a_jail_joining_the_helpers_process_group_cannot_stop_the_watcher(host, alice, one_off):
    script = os.path.join(host.home(alice), "ctj-join.py")
    with open(script, "w") as f:
        f.write(JOIN_AND_STOP)
    pw = pwd.getpwnam(alice)
    os.chown(script, pw.pw_uid, pw.pw_gid)
    t = one_off("read PG; python3 ~/ctj-join.py $PG; echo ATTACKED_$((6*7)); sleep 100")
    parent, sup, watcher = front_supervisor_watcher(host, alice)
    # Positive control: the probe sees a stopped watcher.
    os.kill(watcher, signal.SIGSTOP)
    assert wait_until(lambda: state(watcher) == "T", 5)
    os.kill(watcher, signal.SIGCONT)
    assert wait_until(lambda: state(watcher) != "T", 5)
    # The attack: join the root parent's group and the watcher's, by the
    # numbers the host sees. The jail started in a group of its own, so it
    # has no helper process to hit with kill(0, ...); joining another group
    # is refused (EPERM): from inside its pid namespace no group outside is
    # nameable, and the watcher's is in another session besides.
    pg_parent, pg_sup, pg_watcher = os.getpgid(parent), os.getpgid(sup), os.getpgid(watcher)
    t.write(f"{pg_parent} {pg_sup} {pg_watcher}\r")
    assert t.wait_for("ATTACKED_42", 10), t.output()
    assert f"REFUSED {pg_parent} errno=1" in t.output()
    assert f"REFUSED {pg_sup} errno=1" in t.output()
    assert f"REFUSED {pg_watcher} errno=1" in t.output()
    time.sleep(0.3)
    assert state(watcher) not in ("T", None), state(watcher)
    assert state(parent) not in ("T", None), state(parent)
    assert state(sup) not in ("T", None), state(sup)
    # And the hang-up still ends everything.
    t.hangup()
    assert t.wait(15) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)


def test_a_frozen_watcher_does_not_keep_the_root_parent_waiting(host, alice, one_off):
    t = one_off("echo UP_$((6*7)); sleep 100")
    assert t.wait_for("UP_42"), t.output()
    _, _, watcher = front_supervisor_watcher(host, alice)
    # Frozen by whatever means: neither the front nor the supervisor waits
    # on it forever.
    os.kill(watcher, signal.SIGSTOP)
    start = time.time()
    t.hangup()
    assert t.wait(15) is not None
    assert time.time() - start < 10
    assert host.wait_gone(alice, 10), host.processes_of(alice)
    assert wait_until(lambda: host.helper_pids() == [], 10), host.helper_pids()
