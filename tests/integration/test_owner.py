"""One owner per tenant: the tenant's supervisor starts every jail of the
tenant (docs/ARCHITECTURE.md, "Process model"). A front (`run`, what ttyd
runs) hands its terminal over to the supervisor (SCM_RIGHTS) and relays.

Each finding of issue 22 as a test, each with its positive control: the
attach jail (a tenant can turn its tmux client into any command with
`detach-client -E`) carries the tenant's context, not the caller's; `stop`
ends every process of the tenant; the supervisor is root through and
through; the endpoint trusts root only, speaks one protocol version, and
a stalled or flooding caller costs it nothing lasting.
"""
import os
import pwd
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import (PROXY, RUNTIME_DIR, cgroup_missing, install_faults_bin, log_lines, logged_at, new_session,
                      proc_status, sh, spawn, tenant_cgroup, wait_until)
from ownerutil import listed_json
from ptyutil import PtyProcess, attach, shell_ready


def record(tenant):
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.state")
    try:
        return open(path).read().split()
    except FileNotFoundError:
        return None


def supervisor_pid(tenant):
    rec = record(tenant)
    return int(rec[3]) if rec else None


def endpoint(tenant):
    return os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.sock")


def detach_exec(t, command):
    """The tenant turns its tmux client (in the attach jail) into `command`
    (single-quoted: the tenant's shell in the session jail expands nothing
    of it; the client's shell, in the attach jail, does)."""
    t.write(f"tmux detach-client -E '{command}'\r")


def probe_script(host, tenant, name, text):
    """A script in the tenant's home, run by a detached client's command."""
    path = os.path.join(host.home(tenant), name)
    with open(path, "w") as f:
        f.write(text)
    sh("chown", f"{tenant}:", path)
    return path


def request(version, tenant_session="s1"):
    fields = ["attach", tenant_session, "root", "0", "root", "-", "0", "0"]
    return f"clihost-jail-request {version}\0".encode() + b"".join(f.encode() + b"\0" for f in fields)


def connect_root(tenant):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(endpoint(tenant))
    return s


# -------------------------------------------------------------- context --

def test_a_detached_client_command_has_the_tenants_keyring_loginuid_and_limits(host, alice, terms):
    limits = "/etc/security/limits.d/ctj-owner-test.conf"
    with open(limits, "w") as f:
        f.write(f"{alice} soft nofile 100\n{alice} hard nofile 100\n")
    try:
        s = new_session()
        # The caller holds a key in its session keyring, and then runs the
        # front in it, as a proxy's service would.
        script = (f"keyctl add user ctjowner CALLERSECRET42 @s >/dev/null && "
                  f"echo CONTROL_$(keyctl print %user:ctjowner) && "
                  f"echo CALLER_LOGINUID_$(cat /proc/self/loginuid) && "
                  f"exec {host.bin} run --user {alice} --session {s}")
        t = PtyProcess(["keyctl", "session", "-", "/bin/sh", "-c", script], user=PROXY)
        terms.append(t)
        assert shell_ready(t), t.output()
        # Positive control: a process that inherits the caller's keyring
        # reads the key.
        assert "CONTROL_CALLERSECRET42" in t.output(), t.output()
        uid = pwd.getpwnam(alice).pw_uid
        caller_loginuid = re.search(r"CALLER_LOGINUID_(\d+)", t.output()).group(1)
        assert caller_loginuid != str(uid)
        script = probe_script(host, alice, "ctx.sh",
                              "keyctl print %user:ctjowner 2>/dev/null | sed s/^/KEYPRINT_/\n"
                              "echo KEYSEARCH_$(keyctl search @s user ctjowner >/dev/null 2>&1; echo $?)\n"
                              "echo LOGINUID_$(cat /proc/self/loginuid)\n"
                              "echo NOFILE_$(ulimit -n)\n"
                              "echo PROBE_DONE\n"
                              "sleep 60\n")
        detach_exec(t, f"sh {script}")
        assert t.wait_for("PROBE_DONE", 15), t.output()
        out = t.output().split("detach-client")[-1]
        assert "KEYSEARCH_1" in out, out
        assert "KEYPRINT_" not in out and "CALLERSECRET42" not in out, out
        assert f"LOGINUID_{uid}" in out, out
        assert "NOFILE_100" in out, out
    finally:
        os.unlink(limits)


def has_cap_sys_resource():
    for line in open("/proc/self/status"):
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def test_the_supervisor_keeps_its_baseline_under_a_tenants_nofile(host, alice, terms):
    if not has_cap_sys_resource():
        pytest.skip("this host withholds CAP_SYS_RESOURCE (bounding set): no process can raise a hard limit "
                    "that pam_limits lowered, so the supervisor keeps the tenant's (documented)")
    limits = "/etc/security/limits.d/ctj-owner-test.conf"
    with open(limits, "w") as f:
        f.write(f"{alice} soft nofile 64\n{alice} hard nofile 64\n")
    try:
        t = attach(host, alice, new_session(), terms)
        assert shell_ready(t), t.output()
        # Control: the tenant's shell has the tenant's limit.
        t.write("echo NOFILE_$(ulimit -n)\r")
        assert t.wait_for("NOFILE_64", 10), t.output()
        sup = supervisor_pid(alice)
        line = [l for l in open(f"/proc/{sup}/limits").read().splitlines() if l.startswith("Max open files")][0]
        assert line.split()[3] != "64" and line.split()[4] != "64", line
    finally:
        os.unlink(limits)


def test_stop_ends_every_process_of_the_tenant_after_detach_client_exec(host, alice, terms):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    detach_exec(t, "exec sleep 4242")
    uid = pwd.getpwnam(alice).pw_uid

    def sleeping():
        for pid in host.processes_of(alice):
            try:
                if open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[:2] == [b"sleep", b"4242"]:
                    return True
            except OSError:
                pass
        return False
    # Control: the detached client's command runs as the tenant.
    assert wait_until(sleeping, 10), host.processes_of(alice)
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0, r
    # Zero processes of the tenant on the whole host (zombies reaped too).
    assert wait_until(lambda: not host.processes_of(alice), 5), \
        [(p, open(f"/proc/{p}/cmdline", "rb").read()) for p in host.processes_of(alice) if os.path.exists(f"/proc/{p}")]
    assert uid


def test_the_supervisor_is_root_through_and_through(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    assert proc_status(sup, "Uid") == ["0", "0", "0", "0"]
    assert proc_status(sup, "Gid") == ["0", "0", "0", "0"]
    assert proc_status(sup, "Groups") == []
    # Its parent is init (double fork), never a front.
    assert int(proc_status(sup, "PPid")[0]) == 1
    r = host.run_as(PROXY, ["/bin/kill", "-STOP", str(sup)])
    assert r.returncode != 0 and "Operation not permitted" in r.stderr, r
    # Control: the front (real uid the proxy's) can be signalled by the proxy.
    r = host.run_as(PROXY, ["/bin/kill", "-0", str(t.proc.pid)])
    assert r.returncode == 0, r


def test_the_jail_has_no_controlling_terminal_and_tiocsti_fails(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    prog = probe_script(host, alice, "sti.py",
                        "import fcntl, os, termios\n"
                        "stat = open('/proc/self/stat').read()\n"
                        "print('TTYNR_%s' % stat[stat.rfind(')') + 2:].split()[4])\n"
                        "print('ISATTY_%s' % os.isatty(0))\n"
                        "try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('STI_OK')\n"
                        "except OSError as e:\n    print('STI_ERR_%d' % e.errno)\n")
    detach_exec(t, f"python3 {prog}; sleep 30")
    assert t.wait_for("STI_", 15), t.output()
    out = t.output().split("detach-client")[-1]
    # The handed-over terminal is the jail's stdio (control: isatty), never
    # its controlling terminal (tty_nr 0), and TIOCSTI fails (EPERM: the
    # seccomp filter, and no controlling terminal behind it).
    assert "ISATTY_True" in out, out
    assert "TTYNR_0" in out, out
    assert "STI_OK" not in out and "STI_ERR_1" in out, out


# ------------------------------------------------------------- endpoint --

def test_the_endpoint_refuses_a_non_root_peer(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    ep = endpoint(alice)
    st = os.stat(ep)
    assert st.st_uid == 0 and (os.stat(RUNTIME_DIR).st_mode & 0o777) == 0o700
    # Open the first lock (the directory's mode) for this test only: the
    # second (SO_PEERCRED) must refuse on its own.
    os.chmod(RUNTIME_DIR, 0o711)
    os.chmod(ep, 0o777)
    try:
        code = ("import socket,sys\n"
                "s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); s.settimeout(5); s.connect(sys.argv[1])\n"
                "print(s.recv(2000).decode())\n")
        p = subprocess.run(["python3", "-c", code, ep], input=request(3), capture_output=True,
                           preexec_fn=lambda: os.setuid(65534), timeout=20)
        assert "fail 1 the supervisor speaks to root only" in p.stdout.decode(), p
        # Control: root's connection passes that check (and meets the next).
        s = connect_root(alice)
        s.send(request(3))
        assert "speaks to root only" not in s.recv(2000).decode()
    finally:
        os.chmod(ep, 0o755)
        os.chmod(RUNTIME_DIR, 0o700)


def test_a_wrong_protocol_version_is_refused_with_its_line(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    s = connect_root(alice)
    s.send(request(1))
    reply = s.recv(2000).decode()
    assert reply.startswith("fail 3 protocol version 1 is not this supervisor's (3)"), reply
    assert f"clihost-jail stop --user {alice}" in reply, reply
    # A front of another version (the fault-injection build stands in).
    faults = install_faults_bin(host, "clihost-jail-faults-proto")
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "old_protocol"}
    old = PtyProcess([faults, "run", "--user", alice, "--session", new_session()], env=env)
    terms.append(old)
    assert old.wait(15) == 3
    assert old.wait_for(f"clihost-jail stop --user {alice}", 5), old.output()


def test_a_half_open_handshake_times_out(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    s = connect_root(alice)
    started = time.monotonic()
    assert s.recv(2000) == b""  # closed by the supervisor, no reply
    assert time.monotonic() - started < 5
    # Control: a connection that speaks gets an answer.
    s = connect_root(alice)
    s.send(b"garbage")
    assert s.recv(2000).decode().startswith("fail 1 malformed request")


def test_a_flood_of_fronts_leaves_stop_working(host, alice, terms):
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    flood = []
    for _ in range(40):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.setblocking(False)
        try:
            s.connect(endpoint(alice))
        except (BlockingIOError, ConnectionRefusedError, OSError):
            pass
        flood.append(s)
    started = time.monotonic()
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and "session jail stopped" in r.stdout, r
    assert time.monotonic() - started < 8

    def gone(pid):
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except FileNotFoundError:
            return True
        return stat[stat.rfind(")") + 2] == "Z"
    assert gone(sup)
    assert wait_until(lambda: not host.processes_of(alice), 5)
    for s in flood:
        s.close()


def test_a_full_backlog_refuses_a_front_in_time_not_never(host, alice, terms):
    """A supervisor that takes no connections (stopped here; or holding its
    256): its backlog fills, and a front's connect would wait for room for as
    long as that lasts. A front waits 5 s for room, then fails closed: its
    line, exit 3, an audit line. Control: a connect made right before it finds
    the backlog full (EAGAIN)."""
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    os.kill(sup, signal.SIGSTOP)
    flood = []
    try:
        for _ in range(40):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            flood.append(s)
            try:
                s.connect(endpoint(alice))
            except BlockingIOError:
                break  # the control: the backlog is full
        else:
            pytest.fail("the supervisor's backlog never filled")
        s = new_session()
        started = time.monotonic()
        late = attach(host, alice, s, terms)
        status = late.wait(20)
        took = time.monotonic() - started
        assert status == 3, (status, late.output())
        assert 4.5 < took < 10, took
        assert f"clihost-jail: the supervisor {sup} of {alice} took no connection within 5 s" in late.output(), \
            late.output()
        assert host.audit_lines(f"session={s}", until=lambda l: "took no connection" in l)
    finally:
        os.kill(sup, signal.SIGCONT)
        for s in flood:
            s.close()
    # The supervisor serves again.
    again = attach(host, alice, new_session(), terms)
    assert shell_ready(again), again.output()


# -------------------------------------------------------------- upgrade --

def test_a_session_jail_of_the_previous_version_is_refused_by_name(host, alice, terms):
    faults = install_faults_bin(host, "clihost-jail-faults-upgrade")
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "old_record"}
    old = PtyProcess([faults, "run", "--user", alice, "--session", new_session()], env=env)
    terms.append(old)
    # A v1 record and no endpoint: what a build before the owner model left.
    assert wait_until(lambda: record(alice) is not None, 15), old.output()
    assert record(alice)[0] == "v1"
    assert not os.path.exists(endpoint(alice))
    started = time.monotonic()
    t = attach(host, alice, new_session(), terms)
    assert t.wait(15) == 3
    assert time.monotonic() - started < 10
    assert t.wait_for(f"end it with clihost-jail stop --user {alice}", 5), t.output()
    # list --json says which session jail is of the earlier version (it
    # stays in its caller's cgroup until stopped).
    assert listed_json(host, alice)["earlier_version"] is True
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and "session jail stopped" in r.stdout, r
    # Control: after the stop, a front attaches.
    t2 = attach(host, alice, new_session(), terms)
    assert shell_ready(t2), t2.output()
    assert listed_json(host, alice)["earlier_version"] is False


def test_a_supervisor_of_the_build_before_the_split_serves_until_stop(host, alice, terms):
    """An upgrade across the split by privilege: a session jail whose
    supervisor a build before it started (a v3 record, the same endpoint and
    protocol; the fault build writes one as that build did) keeps running:
    the new front attaches to it, `list --json` marks it earlier_version,
    `stop` ends it, and the next start is the new programs' (a v4 record,
    the supervisor program)."""
    faults = install_faults_bin(host, "clihost-jail-faults-split")
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "pre_split_record"}
    s = new_session()
    old = PtyProcess([faults, "run", "--user", alice, "--session", s], env=env)
    terms.append(old)
    assert wait_until(lambda: record(alice) is not None, 15), old.output()
    assert record(alice)[0] == "v3"
    sup = int(record(alice)[3])
    old.write("echo OLD_$((6*7))\r")
    assert old.wait_for("OLD_42", 15), old.output()
    assert listed_json(host, alice)["earlier_version"] is True
    # The new front's attach reaches the same session jail's screen.
    t = attach(host, alice, s, terms)
    assert t.wait_for("OLD_42", 15), t.output()
    assert int(record(alice)[3]) == sup
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and "session jail stopped" in r.stdout, r
    # Control: after the stop the next start is this build's.
    t2 = attach(host, alice, new_session(), terms)
    assert shell_ready(t2), t2.output()
    assert record(alice)[0] == "v4"
    assert listed_json(host, alice)["earlier_version"] is False
    assert os.readlink(f"/proc/{record(alice)[3]}/exe") == host.supervisor_bin


def test_a_supervisor_that_does_not_end_is_killed_by_stop_and_leaves_nothing(host, alice, terms):
    """A supervisor that cannot handle stop's SIGTERM (stopped here, as a
    hung one would be) is SIGKILLed after stop's 10 s grace, and stop removes
    what it would have: its endpoint, its record, the tenant's cgroup.
    (Issue 42: at 400 tenants 8 supervisors were killed so, and their
    sockets and cgroups were left.)"""
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    assert os.path.exists(endpoint(alice))
    # Control: the tenant's cgroup exists while it runs (where cgroups work).
    dirs = [os.path.dirname(tenant_cgroup(alice, c)) for c in ("memory", "pids")]
    have_cgroups = cgroup_missing() is None
    if have_cgroups:
        assert all(os.path.isdir(d) for d in dirs), dirs
    since = time.time()
    os.kill(sup, signal.SIGSTOP)
    r = host.run_root([host.bin, "stop", "--user", alice], timeout=60)
    assert r.returncode == 0, r.stderr
    assert time.time() - since >= 10, "stop did not wait its grace"
    assert wait_until(lambda: not os.path.exists(f"/proc/{sup}"), 5)
    assert record(alice) is None
    assert not os.path.exists(endpoint(alice))
    if have_cgroups:
        assert not any(os.path.exists(d) for d in dirs), [d for d in dirs if os.path.exists(d)]
    assert log_lines(lambda l: "did not end within 10 s and was killed" in l and f"tenant={pwd.getpwnam(alice).pw_uid}" in l,
                     timeout=5)
    assert host.wait_gone(alice, 10), host.processes_of(alice)


# ---------------------------------------------------------------- races --

RACE_ROUNDS = int(os.environ.get("CTJ_RACE_ROUNDS", "20"))


def session_closed_counts(since_bytes):
    """{supervisor pid: its "session closed" lines} in the log written since."""
    counts = {}
    with open("/var/log/auth.log", "rb") as f:
        f.seek(since_bytes)
        for line in f.read().decode(errors="replace").splitlines():
            m = re.search(r"clihost-jail\[(\d+)\]: pam_unix\(clihost-jail:session\): session (opened|closed)", line)
            if m:
                counts.setdefault(int(m.group(1)), {"opened": 0, "closed": 0})[m.group(2)] += 1
    return counts


@pytest.mark.parametrize("ender", [
    "stop",
    "exit"])
def test_a_session_jail_ending_as_a_connection_arrives_leaves_a_jail_that_outlives_it(host, alice, terms, ender):
    """The session jail ends (`stop`, or `exit` in its last shell) just as a
    second connection arrives, RACE_ROUNDS times. Whatever the second
    connection meets, a session jail it gets is its supervisor's (a child
    of init, never of the front) and outlives the connection; every
    supervisor opened and closed its PAM session exactly once."""
    since = os.path.getsize("/var/log/auth.log")
    faults = install_faults_bin(host, "clihost-jail-faults-race") if ender == "stop" else None
    outlived = 0
    for round_no in range(RACE_ROUNDS):
        s = new_session()
        first = attach(host, alice, s, terms)
        assert shell_ready(first), first.output()
        if ender == "exit":
            first.write("exit\r")
            second = attach(host, alice, s, terms)
        else:
            # Every other round, the second front (the faults build, as
            # root) is held 2 s before its handover, so that `stop` ends the
            # jail it found in that window: it must then get a new jail of
            # its own supervisor, not end. The other rounds race freely.
            if round_no % 2:
                env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_FAULT": "slow_handover"}
                second = PtyProcess([faults, "run", "--user", alice, "--session", s], env=env)
                terms.append(second)
                time.sleep(0.3)
            else:
                second = attach(host, alice, s, terms)
            r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
            assert r.returncode == 0, r
        # A connection handed to the ending jail's supervisor just before
        # `stop` may get its shell and answer, then lose it with the jail:
        # it ends, as a client whose server was stopped does (guarantee 12).
        # One handed to a new supervisor finds that supervisor's record.
        got_shell = shell_ready(second, timeout=20)
        if got_shell:
            assert wait_until(lambda: supervisor_pid(alice) is not None or second.proc.poll() is not None, 5), \
                second.output()[-300:]
        if got_shell and supervisor_pid(alice) is not None:
            sup = supervisor_pid(alice)
            assert int(proc_status(sup, "PPid")[0]) == 1, sup
            second.hangup()
            assert second.wait(10) is not None
            # The session jail outlives the connection that started it.
            time.sleep(0.3)
            assert host.has_tmux_session(alice, s) and supervisor_pid(alice) == sup
            outlived += 1
        else:
            # It met the end of the jail and ended: nothing of it is left.
            assert second.wait(10) is not None, second.output()[-300:]
        r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
        assert r.returncode == 0, r
        assert wait_until(lambda: not host.processes_of(alice), 5)
        for t in (first, second):
            t.close()
    # syslog writes the last supervisors' lines after they have ended.
    each_once = lambda: all(c == {"opened": 1, "closed": 1} for c in session_closed_counts(since).values())
    wait_until(each_once, 5)
    counts = session_closed_counts(since)
    assert counts and all(c == {"opened": 1, "closed": 1} for c in counts.values()), counts
    # The race was met with a connection that got a jail at least once.
    assert outlived > 0


def test_a_subreaper_above_the_caller_is_named_in_the_audit_log(host, alice, terms):
    """The supervisor is init's child (double fork) unless a process above
    its caller is a subreaper: then that process adopts it. It can only see
    the supervisor's end (it cannot signal a root process), and the
    supervisor says so in the audit log."""
    said = "a subreaper above its caller"
    since = time.time()
    # A root caller that is a subreaper (prctl PR_SET_CHILD_SUBREAPER = 36)
    # runs a one-off jail, which starts the tenant's supervisor, and waits.
    reaper = ("import ctypes, os, subprocess, sys, time\n"
              "assert ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0\n"
              "print(os.getpid(), flush=True)\n"
              "subprocess.run(sys.argv[1:], check=True)\n"
              "time.sleep(30)\n")
    p = subprocess.Popen(["/usr/bin/python3", "-c", reaper, *host.jail(alice, "sleep 2")], stdout=subprocess.PIPE,
                         text=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    try:
        reaper_pid = int(p.stdout.readline())
        lines = log_lines(lambda l: said in l and logged_at(l) >= since - 1, timeout=10)
        assert lines and f"the supervisor's parent is pid {reaper_pid}," in lines[-1], lines
    finally:
        p.kill()
        p.wait()
        host.run_root([host.bin, "stop", "--user", alice])
    # Control: started by a caller with no subreaper above it, the
    # supervisor is init's child and says nothing of it.
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    assert int(proc_status(sup, "PPid")[0]) == 1
    assert log_lines(lambda l: f"clihost-jail[{sup}]:" in l and "session jail started" in l), sup
    assert not log_lines(lambda l: f"clihost-jail[{sup}]:" in l and said in l, timeout=1)
