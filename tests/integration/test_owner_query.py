"""Report verbs never start a supervisor: `list` and `kill` ask the tenant's
running one (issue 22, item 1), which starts the query jail (a tmux client)
as its own child, in the tenant's jails cgroup, and answers; with no session
jail (only one-off jails) it answers at once. The endpoint answers a query
from root only."""
import json
import os
import pwd
import socket
import subprocess
import time

import pytest

from conftest import (CGROUP_PARENT, PROXY, RUNTIME_DIR, cgroup_missing, new_session, pids, start_as,
                      tenant_cgroup, wait_until)
from forkbomb import FORKS
from ownerutil import ancestors, listed_json, ppid, supervisor_pid
from ptyutil import PtyProcess, attach, shell_ready


def uid_of(tenant):
    return pwd.getpwnam(tenant).pw_uid


def record_path(tenant):
    return os.path.join(RUNTIME_DIR, f"{uid_of(tenant)}.state")


def endpoint(tenant):
    return os.path.join(RUNTIME_DIR, f"{uid_of(tenant)}.sock")


def cmdline(pid):
    try:
        return b" ".join(open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0"))
    except OSError:
        return b""


def tenant_processes_running(tenant, needle):
    """The live processes of the tenant whose command line holds needle."""
    return [p for p in pids(uid=uid_of(tenant), live=True) if needle in cmdline(p)]


def query_request(kind, session=""):
    fields = [kind, session, "root", "0", "root", "-", "0", "0"]
    return b"clihost-jail-request 3\0" + b"".join(f.encode() + b"\0" for f in fields)


def test_the_query_jail_is_the_supervisors_in_the_tenants_jails_cgroup(host, alice, terms):
    """While `list` waits (a hook holds alice's tmux client), its query jail
    descends from alice's supervisor, not from the `list` front, and sits in
    alice's jails leaf. Positive control: the same probe finds the attach
    jail there."""
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    sup = supervisor_pid(alice)
    uid = uid_of(alice)
    cg = cgroup_missing() is None
    # The control: the attach jail (its tmux client) by the same probe.
    attach_jail = tenant_processes_running(alice, b"new-session -A")
    assert attach_jail, host.processes_of(alice)
    for p in attach_jail:
        assert sup in ancestors(p), (p, sup, ancestors(p))
        if cg:
            assert f"{CGROUP_PARENT}/{uid}/jails" in open(f"/proc/{p}/cgroup").read()
    assert host.tmux(alice, "set-hook", "-g", "after-list-sessions", "run-shell 'sleep 1.5'").returncode == 0
    front = start_as(PROXY, [host.bin, "list", "--user", alice], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: tenant_processes_running(alice, b"list-sessions"), 5), host.processes_of(alice)
        query = tenant_processes_running(alice, b"list-sessions")
        for p in query:
            up = ancestors(p)
            assert sup in up, (p, sup, up)
            assert front.pid not in up, (p, front.pid, up)
            if cg:
                # The waiting attach jail's (jails leaf) or a query jail's (its own leaf).
                where = open(f"/proc/{p}/cgroup").read()
                assert f"{CGROUP_PARENT}/{uid}/jails" in where or f"{CGROUP_PARENT}/{uid}/query" in where, where
        # No process of the tenant is a child of the front.
        for p in pids(uid=uid, live=True):
            try:
                assert ppid(p) != front.pid, (p, cmdline(p))
            except OSError:
                pass
        out, err = front.communicate(timeout=10)
    finally:
        if front.poll() is None:
            front.kill()
            front.wait()
    assert front.returncode == 0, err
    assert f" sessions={s} " in out.decode(), out
    # The query jail is gone with its answer.
    assert wait_until(lambda: not tenant_processes_running(alice, b"list-sessions"), 5)


def test_a_supervisor_of_one_off_jails_only_lists_no_session_kill_refuses_and_stop_says_so(host, alice, terms):
    one = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sleep", "4347"],
                     user=PROXY)
    terms.append(one)
    assert wait_until(lambda: tenant_processes_running(alice, b"sleep 4347"), 15), one.output()
    assert supervisor_pid(alice)
    started = time.monotonic()
    entry = listed_json(host, alice)
    # No tmux to ask: zero sessions at once, never "no answer" (sessions=?),
    # and said to be so: a supervisor of one-offs only (issue 41, item 4).
    assert entry["sessions_state"] == "none" and entry["sessions"] == [], entry
    assert time.monotonic() - started < 1.5
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice])
    assert r.returncode == 0 and " sessions=(none) " in r.stdout and "sessions=?" not in r.stdout, r
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", "main"])
    assert k.returncode == 1 and k.stderr == f"clihost-jail: tenant {alice} has no session jail\n", k
    # The one-off jail ran on throughout.
    assert tenant_processes_running(alice, b"sleep 4347")
    # stop says what it stopped: a supervisor, no session jail.
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and r.stdout == f"{alice}: supervisor stopped (no session jail)\n", r
    assert wait_until(lambda: not host.processes_of(alice), 5), host.processes_of(alice)
    # Control: a supervisor with its session jail is named as such.
    t = attach(host, alice, new_session(), terms)
    assert shell_ready(t), t.output()
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0 and r.stdout == f"{alice}: session jail stopped\n", r


def test_list_and_kill_never_start_a_supervisor(host, alice, bob, terms):
    assert supervisor_pid(bob) is None and not os.path.exists(endpoint(bob))
    r = host.run_as(PROXY, [host.bin, "list", "--user", bob])
    assert r.returncode == 0 and r.stdout == "", r
    r = host.run_as(PROXY, [host.bin, "list"])
    assert r.returncode == 0 and f"tenant={bob} " not in r.stdout, r
    k = host.run_as(PROXY, [host.bin, "kill", "--user", bob, "--session", "main"])
    assert k.returncode == 1 and k.stderr == f"clihost-jail: tenant {bob} has no session jail\n", k
    time.sleep(0.3)
    assert not os.path.exists(record_path(bob)) and not os.path.exists(endpoint(bob))
    assert not host.processes_of(bob)
    # Control: the probe sees a supervisor's record and endpoint when one runs.
    t = attach(host, bob, new_session(), terms)
    assert shell_ready(t), t.output()
    assert os.path.exists(record_path(bob)) and os.path.exists(endpoint(bob))


def test_a_query_from_a_non_root_peer_is_refused(host, alice, terms):
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    ep = endpoint(alice)
    # Control: root's query is answered with alice's session names.
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.settimeout(10)
    c.connect(ep)
    c.send(query_request("list"))
    assert c.recv(70000) == b"answer\0sessions\0" + s.encode() + b"\0"
    c.close()
    # Open the directory's lock for this test only: SO_PEERCRED must refuse.
    os.chmod(RUNTIME_DIR, 0o711)
    os.chmod(ep, 0o777)
    try:
        code = ("import socket,sys\n"
                "s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET); s.settimeout(5); s.connect(sys.argv[1])\n"
                "r=s.recv(70000)\n"
                "try:\n    s.send(sys.stdin.buffer.read())\n"
                "except OSError:\n    pass\n"
                "print(r)\n")
        p = subprocess.run(["python3", "-c", code, ep], input=query_request("kill", s), capture_output=True,
                           preexec_fn=lambda: os.setuid(65534), timeout=20)
        assert "fail 1 the supervisor speaks to root only" in p.stdout.decode(), p
    finally:
        os.chmod(ep, 0o755)
        os.chmod(RUNTIME_DIR, 0o700)
    # Nothing was killed: the session is still listed.
    assert listed_json(host, alice)["sessions"] == [s]


def test_a_tenant_at_its_tasks_max_still_has_its_sessions_listed(host, alice, terms):
    """Issue 41, item 4: a tenant whose jails hold all of its tasks_max (a
    fork-holder in its session) still has its sessions listed: the query
    jail runs in a leaf of its own with its own small allowance, in the
    cgroup and in RLIMIT_NPROC. Control: the holder really is at the limit
    (its forks failed, pids.current is pids.max)."""
    why = cgroup_missing("pids")
    if why:
        pytest.skip(why)
    conf = host.config_variant(replace={"limits": {"tasks_max": "64"}})
    s = new_session()
    t = PtyProcess([host.bin, "run", "--user", alice, "--session", s],
                   env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "CLIHOST_JAIL_CONFIG": conf})
    terms.append(t)
    assert shell_ready(t), t.output()
    home = pwd.getpwnam(alice).pw_dir
    script, out = os.path.join(home, ".ctj-forks.py"), os.path.join(home, ".ctj-forks")
    with open(script, "w") as f:
        f.write(FORKS)
    try:
        t.write(f"python3 {script} 200 {out} wait &\r")
        assert wait_until(lambda: os.path.exists(out) and open(out).read(), 30), t.output()
        assert int(open(out).read()) < 200, "the holder's forks all worked: not at the limit"
        jails = tenant_cgroup(alice, "pids")
        # RLIMIT_NPROC counts the tenant's tasks outside the leaf too (slirp4netns).
        assert int(open(f"{jails}/pids.current").read()) >= 64 - 8, open(f"{jails}/pids.current").read()
        r = host.run_root([host.bin, "list", "--json", "--user", alice], config=conf)
        assert r.returncode == 0, r
        entry = json.loads(r.stdout)
        assert entry["sessions_state"] == "listed" and entry["sessions"] == [s], entry
        # The query's leaf is empty again, and kept its own limits.
        query = tenant_cgroup(alice, "pids", leaf="query")
        assert open(f"{query}/pids.max").read().strip() == "16"
        assert wait_until(lambda: open(f"{query}/cgroup.procs").read() == "", 5)
    finally:
        for p in (script, out):
            if os.path.exists(p):
                os.unlink(p)
