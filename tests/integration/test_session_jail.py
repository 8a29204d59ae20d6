"""Session jails: a tenant's terminal outlives the connection that started it.

Every connection is a real pseudo-terminal driven the way ttyd drives its
command (a new pty per connection; on disconnect SIGHUP to the command and
the master closed). The first `run` for a tenant starts its session jail
(root supervisor, tenant watcher, bwrap running the tmux server in the
foreground); every `run` is an attach jail whose tmux client attaches to it.
"""
import fcntl
import os
import pwd
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from conftest import PROXY, RUNTIME_DIR, attach_clients, install_faults_bin, new_session, prepared_attach_jails, sh, \
    wait_until
from ptyutil import PtyProcess, attach, attach_once, shell_ready


# ---------------------------------------------------------------- helpers --

def record(host, tenant):
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.state")
    try:
        return open(path).read().split()
    except FileNotFoundError:
        return None


def supervisors(host, tenant=None):
    """Live root helper processes that are session supervisors (their own
    session leader's child, not attached to any terminal)."""
    out = []
    for pid in host.waiting_parents():
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        tty_nr = int(stat[stat.rfind(")") + 2:].split()[4])
        if tty_nr == 0:
            out.append(pid)
    if tenant is None:
        return out
    rec = record(host, tenant)
    return [p for p in out if rec and int(rec[3]) == p]


def list_lines(host, *args):
    r = host.run_as(PROXY, [host.bin, "list", *args])
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def tenant_processes(host, tenant):
    return host.processes_of(tenant)


def states_of(pids):
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
            out[pid] = s[s.rfind(")") + 2]
        except OSError:
            pass
    return out


def job_log_grows(host, tenant, name="ctj-job.log"):
    path = os.path.join(host.home(tenant), name)
    before = os.path.getsize(path)
    return wait_until(lambda: os.path.getsize(path) > before, timeout=5)


START_JOB = ("cd /tmp; export CTJ_VAR=kept42; "
             "(while :; do date +%s%N >> ~/ctj-job.log; sleep 0.1; done) & echo STARTED_$((6*7))\r")


def start_job(t):
    t.write(START_JOB)
    assert t.wait_for("STARTED_42"), t.output()


def check_state_kept(t):
    t.write('echo "cwd=$PWD var=$CTJ_VAR"; jobs -l\r')
    assert t.wait_for("cwd=/tmp var=kept42", 15), t.output()[-1500:]
    assert t.wait_for("Running", 5), t.output()[-1500:]


# ------------------------------------------------------------------ tests --

def test_state_survives_a_disconnect(host, alice, terms):
    s = new_session()
    first = attach(host, alice, s, terms)
    assert shell_ready(first), first.output()
    start_job(first)
    first.hangup()
    assert first.wait(10) is not None
    # The background job keeps running with no connection at all.
    assert job_log_grows(host, alice)
    again = attach(host, alice, s, terms)
    # tmux redraws the screen: the earlier output is there.
    assert again.wait_for("STARTED_42", 15), again.output()
    check_state_kept(again)


def test_window_size_changes_reach_the_jail_through_the_relay(host, alice, terms):
    """The jail's terminal is the front's own pty (the relay): it starts at
    the caller's size, and a resize of the caller's terminal (ttyd's, on a
    browser's resize: TIOCSWINSZ, so SIGWINCH to the front) reaches the
    tmux client there, which resizes the pane. The first size is the
    control: `stty size` in the pane reports the pane's size."""
    s = new_session()
    t = attach(host, alice, s, terms)  # a 30 x 100 terminal; tmux's status line takes a row
    assert shell_ready(t), t.output()
    t.write("stty size | tr ' ' x\r")
    assert t.wait_for("29x100", 10), t.output()
    fcntl.ioctl(t.master, termios.TIOCSWINSZ, struct.pack("HHHH", 41, 133, 0, 0))
    t.write("stty size | tr ' ' x\r")
    assert t.wait_for("40x133", 10), t.output()


@pytest.mark.parametrize("closes_first", ["first", "second"])
def test_two_clients_on_one_session_either_may_close_first(host, alice, terms, closes_first):
    s = new_session()
    a = attach(host, alice, s, terms)
    assert shell_ready(a, "A"), a.output()
    b = attach(host, alice, s, terms)
    assert b.wait_for("A_42", 15), b.output()
    gone, stays = (a, b) if closes_first == "first" else (b, a)
    gone.hangup()
    assert gone.wait(10) is not None
    assert shell_ready(stays, "STILL"), stays.output()
    assert "server exited" not in stays.output()


def test_a_racing_first_connection_starts_exactly_one_session_jail(host, bob, terms):
    s = new_session()
    ts = [attach(host, bob, s, terms) for _ in range(10)]
    for i, t in enumerate(ts):
        assert shell_ready(t, f"R{i}", timeout=30), t.output()
    assert len(supervisors(host, bob)) == 1
    lines = [l for l in list_lines(host, "--user", bob)]
    assert len(lines) == 1 and lines[0].startswith(f"tenant={bob} "), lines


def test_twenty_tenants_three_reconnects_each_one_session_jail_per_tenant(host, terms):
    names = [f"ctj-st{i:02d}" for i in range(20)]
    host.extra_users = getattr(host, "extra_users", []) + names
    for n in names:
        host.add_tenant(n)
    failures = []

    def tenant_worker(name):
        for round_ in range(3):
            t = PtyProcess([host.bin, "run", "--user", name, "--session", "main"], user=PROXY)
            try:
                if not shell_ready(t, f"W{round_}", timeout=60):
                    failures.append((name, round_, t.output()[-300:]))
                t.hangup()
                t.wait(20)
            finally:
                t.close()

    threads = [threading.Thread(target=tenant_worker, args=(n,)) for n in names]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
    try:
        assert failures == []
        lines = list_lines(host)
        for n in names:
            mine = [l for l in lines if l.startswith(f"tenant={n} ")]
            assert len(mine) == 1, (n, lines)
            assert re.search(r" sessions=main memory=\d+ tasks=\d+$", mine[0]), mine
            assert len(supervisors(host, n)) == 1
    finally:
        for n in names:
            host.run_root([host.bin, "stop", "--user", n], timeout=30)
        for n in names:
            assert host.wait_gone(n, 10), (n, host.processes_of(n))


def _standin_script():
    # A stand-in for ttyd's process: owns the pty master and runs the helper
    # on the slave as session leader, like ttyd's pty_spawn.
    return ("import os, pty, sys\n"
            "pid, fd = pty.fork()\n"
            "if pid == 0:\n"
            "    os.execve(sys.argv[1], sys.argv[1:], {'PATH': '/usr/bin:/bin', 'TERM': 'xterm'})\n"
            "while True:\n"
            "    try:\n"
            "        if not os.read(fd, 4096): break\n"
            "    except OSError: break\n")


@pytest.mark.parametrize("what", ["attach", "ttyd", "every attach"])
def test_sigkill_of_connections_leaves_the_session_running(host, alice, terms, what):
    s = new_session()
    first = attach(host, alice, s, terms)
    assert shell_ready(first), first.output()
    start_job(first)
    if what == "attach":
        first.proc.send_signal(signal.SIGKILL)
        first.wait(10)
    elif what == "ttyd":
        pw = pwd.getpwnam(PROXY)

        def demote():
            os.initgroups(PROXY, pw.pw_gid)
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)

        standin = subprocess.Popen([sys.executable, "-c", _standin_script(), host.bin, "run", "--user", alice,
                                    "--session", s], preexec_fn=demote, cwd="/",
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The stand-in's attach jail is up once a second attach client runs.
        assert wait_until(lambda: len(attach_clients(alice)) >= 2, 10), attach_clients(alice)
        standin.kill()
        standin.wait(10)
        first.proc.send_signal(signal.SIGKILL)
        first.wait(10)
    else:  # a proxy restart: every connection killed at once
        more = [attach(host, alice, s, terms) for _ in range(2)]
        for t in more:
            assert t.wait_for("STARTED_42", 15), t.output()
        for t in [first, *more]:
            t.proc.send_signal(signal.SIGKILL)
        for t in [first, *more]:
            t.wait(10)
    assert job_log_grows(host, alice)
    again = attach(host, alice, s, terms)
    assert again.wait_for("STARTED_42", 15), again.output()
    check_state_kept(again)


LEFTOVERS = ("setsid sh -c 'sleep 1000 & exit' ; sleep 1001 & kill -STOP $! ; "
             "sh -c 'trap \"\" TERM HUP; sleep 1002' & echo PLANTED_$((6*7))\r")


def plant_leftovers(t):
    t.write(LEFTOVERS)
    assert t.wait_for("PLANTED_42"), t.output()


def assert_everything_ended(host, tenant, since):
    assert host.wait_gone(tenant, 10), [open(f"/proc/{p}/cmdline").read() for p in host.processes_of(tenant)]
    assert wait_until(lambda: not supervisors(host, tenant), 10)
    assert record(host, tenant) is None
    uid = pwd.getpwnam(tenant).pw_uid
    assert not os.path.exists(os.path.join(RUNTIME_DIR, f"{uid}.state"))
    closed = [l for l in host.audit_lines(f"session closed for user {tenant}", want=1, timeout=5)
              if l >= since]
    assert closed, "pam_unix logged no session close"
    ended = [l for l in host.audit_lines("session jail ended", timeout=5) if f"tenant={tenant}" in l and l >= since]
    assert ended and "PAM session closed" in ended[-1], ended


def log_stamp():
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def test_kill_of_the_last_session_ends_everything(host, alice, terms):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    plant_leftovers(t)
    since = log_stamp()
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", s])
    assert k.returncode == 0, k.stderr
    # The attached client ends with the session.
    assert t.wait(10) is not None
    assert_everything_ended(host, alice, since)


def test_an_attach_to_a_session_jail_whose_tmux_is_gone_waits_and_gets_a_new_one(host, alice, terms):
    """The window after the tenant's last shell exits: tmux is gone, its
    supervisor (and so the record an attach finds) not yet. Held open here
    by stopping the supervisor first. The attach must start no client (the
    client could only say "no server running" and end the connection); it
    waits for the old jail to end, then attaches to a new one."""
    s = new_session()
    first = attach(host, alice, s, terms)
    assert shell_ready(first), first.output()
    first.hangup()
    assert first.wait(10) is not None
    old = supervisors(host, alice)
    assert len(old) == 1, old
    os.kill(old[0], signal.SIGSTOP)
    try:
        assert host.tmux(alice, "kill-server").returncode == 0
        assert wait_until(lambda: not host.has_tmux_session(alice, s), 5)
        t = attach(host, alice, s, terms)
        # Positive control of the window: the record still names a live
        # supervisor, and no client of the new connection ran meanwhile.
        time.sleep(1.0)
        assert supervisors(host, alice) == old
        assert "no server running" not in t.output(), t.output()
        assert t.proc.poll() is None
    finally:
        os.kill(old[0], signal.SIGCONT)
    assert shell_ready(t, timeout=30), t.output()[-300:]
    assert "no server running" not in t.output(), t.output()
    new = supervisors(host, alice)
    assert len(new) == 1 and new != old, (old, new)
    warn = host.audit_lines(f"session={s} decision=warn", want=1)
    assert any("attaching to a new one" in l for l in warn), warn


def test_an_attach_whose_tmux_goes_away_during_its_account_check_gets_a_new_one(host, alice, terms):
    """The same race, held open by a slow front (fault injection: 2 s
    before its handover): tmux is killed meanwhile, so
    the session jail and its supervisor end as the front hands over. The
    connection must not end, nor show "no server running": the front
    meets a supervisor that is gone or answers `retry`, waits for it to
    end and hands over to a new one (the retry's supervisor is the faults
    build's, double-forked: a child of init, not of the front)."""
    faults = install_faults_bin(host, "clihost-jail-faults-race")
    s = new_session()
    first = attach(host, alice, s, terms)
    assert shell_ready(first), first.output()
    old = supervisors(host, alice)
    assert len(old) == 1, old
    first.hangup()
    assert first.wait(10) is not None
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "slow_handover"}
    t = PtyProcess([faults, "run", "--user", alice, "--session", s], env=env)
    terms.append(t)
    time.sleep(0.5)
    assert host.tmux(alice, "kill-server").returncode == 0
    assert shell_ready(t, timeout=30), t.output()[-300:]
    assert "no server running" not in t.output(), t.output()
    assert t.proc.poll() is None
    assert wait_until(lambda: not os.path.exists(f"/proc/{old[0]}"), 5)
    assert host.has_tmux_session(alice, s)
    new = int(record(host, alice)[3])  # the faults build's supervisor
    assert new != old[0]
    assert int(open(f"/proc/{new}/stat").read().rsplit(")", 1)[1].split()[1]) == 1


def test_stop_ends_every_session_and_everything_in_them(host, alice, terms):
    a = attach(host, alice, new_session(), terms)
    b = attach(host, alice, new_session(), terms)
    for t in (a, b):
        assert shell_ready(t), t.output()
    plant_leftovers(a)
    since = log_stamp()
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{alice}: session jail stopped\n"
    # A client attached to a jail that ends, ends too.
    assert a.wait(10) is not None and b.wait(10) is not None
    assert_everything_ended(host, alice, since)
    again = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert again.returncode == 0 and again.stdout == f"{alice}: no session jail was running\n"


def test_list_names_each_live_session_jail_with_its_sessions(host, alice, terms):
    s1, s2 = "ctjlist-a", "ctjlist-b"
    for s in (s1, s2):
        assert shell_ready(attach(host, alice, s, terms)), terms[-1].output()
    lines = list_lines(host, "--user", alice)
    assert len(lines) == 1, lines
    m = re.fullmatch(r"tenant=(\S+) uid=(\d+) supervisor=(\d+) started=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) "
                     r"changed=- sessions=(\S+) memory=(\d+) tasks=(\d+)", lines[0])
    assert m, lines[0]
    assert m.group(1) == alice and int(m.group(2)) == pwd.getpwnam(alice).pw_uid
    assert [int(m.group(3))] == supervisors(host, alice)
    assert sorted(m.group(5).split(",")) == [s1, s2]


@pytest.mark.parametrize("attack", [
    "import os, signal; os.kill(0, signal.SIGSTOP)",
    "import os, signal; os.setpgid(0, 0); os.kill(0, signal.SIGSTOP)",
    "import os, signal; os.kill(-1, signal.SIGSTOP)",
    "import os, signal; os.kill(-1, signal.SIGKILL)",
])
def test_signals_from_inside_reach_no_helper_process(host, alice, terms, attack):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    helpers = host.helper_pids()
    assert len(helpers) >= 2  # the supervisor and its watcher (the attach is bwrap now)
    # Positive control: the probe sees a stopped helper process.
    os.kill(helpers[-1], signal.SIGSTOP)
    assert wait_until(lambda: states_of([helpers[-1]]).get(helpers[-1]) == "T", 5)
    os.kill(helpers[-1], signal.SIGCONT)
    assert wait_until(lambda: states_of([helpers[-1]]).get(helpers[-1]) != "T", 5)
    # The attack, from a tmux pane in the session jail.
    since = log_stamp()
    t.write(f"python3 -c '{attack}'; echo DONE_$((6*7))\r")
    time.sleep(1.5)
    stopped = {p: st for p, st in states_of(host.helper_pids()).items() if st == "T"}
    assert stopped == {}, stopped
    r = host.run_root([host.bin, "stop", "--user", alice], timeout=30)
    assert r.returncode == 0, r.stderr
    assert t.wait(10) is not None  # reaped: the attach's bwrap is no zombie of the tenant's
    assert_everything_ended(host, alice, since)
    assert host.helper_pids() == []


def test_a_crashed_supervisor_takes_its_jail_along_and_the_next_run_starts_afresh(host, alice, terms):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    start_job(t)
    old = supervisors(host, alice)
    assert len(old) == 1
    os.kill(old[0], signal.SIGKILL)
    assert t.wait(10) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)
    stale = record(host, alice)
    assert stale is not None and int(stale[3]) == old[0]  # left behind by the crash
    fresh = attach(host, alice, s, terms)
    assert shell_ready(fresh), fresh.output()
    new = supervisors(host, alice)
    assert len(new) == 1 and new != old
    assert int(record(host, alice)[3]) == new[0]
    fresh.write('echo "var=[$CTJ_VAR]"\r')
    assert fresh.wait_for("var=[]"), fresh.output()


def test_every_attach_runs_the_pam_account_check(host, alice, terms):
    """The supervisor runs PAM's account check for every connection, also
    while the session jail runs (stop ends it). Control: the same reconnect
    before the account expired is allowed (shell_ready above)."""
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    sh("usermod", "-e", "1", alice)
    try:
        refused = attach(host, alice, s, terms)
        assert refused.wait(15) == 1, refused.output()
        # The exit can come before the pty's reader has the line.
        wait_until(lambda: re.search(r"clihost-jail: [^\n]*\n", refused.output()), 5)
        said = [l for l in refused.output().replace("\r", "").splitlines() if l]
        assert len(said) == 1 and said[0].startswith("clihost-jail: PAM account check refused the tenant: "), said
        assert len(supervisors(host, alice)) == 1  # still running: stop ends it
        assert host.run_root([host.bin, "stop", "--user", alice]).returncode == 0
        assert t.wait(10) is not None
        assert host.wait_gone(alice, 10), host.processes_of(alice)
    finally:
        sh("usermod", "-e", "", alice)


def _attached_marker(host, tenant):
    """A tmux hook in the tenant's session jail counts the clients that
    attach (one line each, written by the server, inside the jail)."""
    path = os.path.join(host.home(tenant), f"ctj-attached-{uuid_hex()}")
    r = host.tmux(tenant, "set-hook", "-g", "client-attached", f"run-shell 'echo x >> {path}'")
    assert r.returncode == 0, r
    return lambda: open(path).read().count("x") if os.path.exists(path) else 0


def uuid_hex():
    import uuid
    return uuid.uuid4().hex[:8]


def _attach_jail_processes(host, tenant, session_jail):
    """The tenant's processes that are not its session jail's, nor of the
    attach jail prepared for its next connection (no client runs there)."""
    prepared = prepared_attach_jails(pwd.getpwnam(tenant).pw_uid)
    return [p for p in host.processes_of(tenant) if p not in session_jail and p not in prepared]


def test_a_reconnect_refused_by_the_account_check_attaches_no_client(host, alice, terms):
    """A reconnect's account check runs in the supervisor before it starts
    the attach jail; refused, no tmux client ever ran: the server sees no
    client attach (a client-attached hook counts them), and nothing of an
    attach jail is there. The control: the same reconnect
    with the account valid attaches a client the hook counts."""
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    attached = _attached_marker(host, alice)
    session_jail = set(host.processes_of(alice))
    t2 = attach(host, alice, s, terms)
    assert shell_ready(t2), t2.output()
    assert wait_until(lambda: attached() == 1, 5), attached()
    t2.hangup()
    assert t2.wait(10) is not None
    assert wait_until(lambda: not _attach_jail_processes(host, alice, session_jail), 10)
    sh("usermod", "-e", "1", alice)
    try:
        refused = attach(host, alice, s, terms)
        assert refused.wait(15) == 1, refused.output()
        # The exit can come before the pty's reader has the line.
        wait_until(lambda: re.search(r"clihost-jail: [^\n]*\n", refused.output()), 5)
        said = [l for l in refused.output().replace("\r", "").splitlines() if l]
        assert len(said) == 1 and said[0].startswith("clihost-jail: PAM account check refused the tenant: "), said
        assert wait_until(lambda: not _attach_jail_processes(host, alice, session_jail), 5), \
            _attach_jail_processes(host, alice, session_jail)
        time.sleep(0.5)
        assert attached() == 1
    finally:
        sh("usermod", "-e", "", alice)


def test_a_sigkill_before_the_handover_attaches_no_client(host, alice, terms):
    """A front held before it hands anything over (fault injection: 2 s):
    SIGKILLed meanwhile, it has started no jail, and none starts later.
    The control: the same slow front, not interrupted, attaches a client
    once its wait passed."""
    faults = install_faults_bin(host, "clihost-jail-faults-gate")
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    attached = _attached_marker(host, alice)
    session_jail = set(host.processes_of(alice))
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "slow_handover"}

    slow = PtyProcess([faults, "run", "--user", alice, "--session", s], env=env)
    terms.append(slow)
    assert shell_ready(slow, timeout=20), slow.output()
    assert wait_until(lambda: attached() == 1, 5), attached()
    slow.hangup()
    assert wait_until(lambda: not _attach_jail_processes(host, alice, session_jail), 10)

    killed = PtyProcess([faults, "run", "--user", alice, "--session", s], env=env)
    terms.append(killed)
    time.sleep(0.5)
    assert not _attach_jail_processes(host, alice, session_jail)
    os.kill(killed.proc.pid, signal.SIGKILL)
    time.sleep(2.5)  # past the moment the slow check would have passed
    assert attached() == 1
    assert not _attach_jail_processes(host, alice, session_jail)


def test_a_session_jail_that_cannot_start_fails_closed(host, alice, terms):
    conf = host.config_variant({"jail": "tmpfs = /tmp /usr/ctj-cannot-exist"})
    since = log_stamp()
    # On a terminal: an attach without one is refused before any start.
    r = attach_once([host.bin, "run", "--user", alice, "--session", new_session()], user=None,
                    env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "CLIHOST_JAIL_CONFIG": conf})
    assert r.returncode == 3, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "clihost-jail: the session jail ended during start-up: bwrap: "), r.stderr
    assert host.wait_gone(alice, 5), host.processes_of(alice)
    assert record(host, alice) is None
    fails = [l for l in host.audit_lines("session jail not started", timeout=5) if l >= since]
    assert fails and f"tenant={alice}" in fails[-1]


def test_the_session_jail_is_detached_from_the_caller(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    sup = supervisors(host, alice)
    assert len(sup) == 1
    stat = open(f"/proc/{sup[0]}/stat").read()
    fields = stat[stat.rfind(")") + 2:].split()
    ppid, pgrp, session, tty_nr = int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4])
    assert tty_nr == 0 and ppid != t.proc.pid  # nobody's child but init's (or a subreaper's)
    assert session != os.getsid(t.proc.pid) and pgrp != os.getpgid(t.proc.pid)
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{sup[0]}/fd/{fd}") == "/dev/null"
    # The runtime state is root's, never the tenant's.
    st = os.stat(RUNTIME_DIR)
    assert st.st_uid == 0 and (st.st_mode & 0o777) == 0o700


def test_the_session_jail_is_a_jail(host, alice, bob, terms):
    # Control: outside any jail, /home shows both tenants.
    assert {alice, bob} <= set(os.listdir("/home"))
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    t.write('echo "SB=$TTYD_SANDBOX $(grep NoNewPrivs /proc/self/status | tr -d "\\t ")'
            ' $(grep CapEff /proc/self/status | tr -d "\\t ")"; echo "HOME:$(ls /home | tr "\\n" " ")";'
            ' echo "PROCS:$(ls -d /proc/[0-9]* | wc -l)"; touch /etc/ctj-x 2>/dev/null || echo ETC-RO;'
            ' echo END_$((6*7))\r')
    assert t.wait_for("END_42"), t.output()
    out = t.output()
    assert "SB=true NoNewPrivs:1 CapEff:0000000000000000" in out, out[-800:]
    assert f"HOME:{alice} " in out and bob not in out.split("HOME:")[-1].split("\n")[0], out[-800:]
    assert "ETC-RO" in out
    procs = int(out.split("PROCS:")[-1].split()[0])
    assert 0 < procs < 20, procs  # the jail's own processes, not the host's
