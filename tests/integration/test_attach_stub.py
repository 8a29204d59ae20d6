"""The prepared attach jail (issue 24): while a tenant's session jail runs,
its supervisor keeps one attach jail started ahead of the next connection,
whose command is the attach stub (clihost-jail-attach), waiting on fd 8.
A connection's terminal, client words and environment go to it; the stub
execs the tmux client in the same process. While it waits, it answers the
tenant's queries (list, kill) with a tmux client of its own child, so that
a query starts no jail. The stub itself takes only a well-formed connection
or query, and never runs as root."""
import os
import pwd
import socket
import subprocess
import sys
import time

import pytest

from conftest import PROXY, STUB_TARGET, log_lines, pids, proc_exe, proc_status, start_as, wait_until
from ownerutil import supervisor_pid
from ptyutil import attach, shell_ready

ATTACH_FD = 8  # plan.hpp: kAttachFd


def exe_of(pid):
    try:
        return proc_exe(pid)
    except OSError:
        return None


def stubs_of(tenant):
    """The tenant's processes running the attach stub: prepared jails' commands."""
    uid = pwd.getpwnam(tenant).pw_uid
    return [p for p in pids(uid=uid, live=True) if exe_of(p) == STUB_TARGET]


def descends_from(pid, ancestor):
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def fd_target(pid, fd):
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


def fronts_ptys(front):
    """The slaves of the pseudo-terminals whose master the front holds
    (its terminal relay): /dev/pts/N from each /dev/ptmx fd's tty-index."""
    out = []
    for fd in os.listdir(f"/proc/{front}/fd"):
        if fd_target(front, int(fd)) == "/dev/ptmx":
            for line in open(f"/proc/{front}/fdinfo/{fd}"):
                if line.startswith("tty-index:"):
                    out.append(f"/dev/pts/{line.split()[1]}")
    return out


def on_the_fronts_own_pty(pid, front):
    """The jail's terminal is the front's own pseudo-terminal, never the
    caller's (SECURITY.md row 49)."""
    mine = fd_target(pid, 0)
    return mine != os.readlink(f"/proc/{front}/fd/0") and mine in fronts_ptys(front)


def test_a_prepared_attach_jail_waits_for_the_next_connection_and_becomes_its_client(host, alice, terms):
    """After an attach, one attach jail waits: the supervisor's, its stub on
    /dev/null with no terminal, confined as every attach jail (seccomp,
    no_new_privs, no capabilities, the tenant's empty network namespace).
    The next attach is served by it: the stub's process becomes that
    connection's tmux client, on the connection's terminal. Control: before
    the second attach the same process is the stub."""
    t = attach(host, alice, "one", terms)
    assert shell_ready(t), t.output()
    assert wait_until(lambda: len(stubs_of(alice)) == 1, 10), host.processes_of(alice)
    [stub] = stubs_of(alice)
    sup = supervisor_pid(alice)
    assert descends_from(stub, sup)
    assert not descends_from(stub, t.proc.pid)
    assert fd_target(stub, 0) == "/dev/null" and fd_target(stub, 1) == "/dev/null"
    assert proc_status(stub, "Seccomp") == ["2"] and proc_status(stub, "NoNewPrivs") == ["1"]
    assert proc_status(stub, "CapEff") == ["0000000000000000"] and proc_status(stub, "CapPrm") == ["0000000000000000"]
    # The same empty namespace as the running attach jail's client (no network).
    client = [p for p in pids(uid=pwd.getpwnam(alice).pw_uid, live=True)
              if exe_of(p) == "/usr/bin/tmux" and p != stub and descends_from(p, sup)
              and fd_target(p, 0) and fd_target(p, 0).startswith("/dev/pts/")]
    assert client, host.processes_of(alice)
    assert os.readlink(f"/proc/{stub}/ns/net") == os.readlink(f"/proc/{client[0]}/ns/net")
    t2 = attach(host, alice, "two", terms)
    assert shell_ready(t2), t2.output()
    # The prepared process is now the second connection's tmux client, on its pty.
    assert exe_of(stub) == "/usr/bin/tmux"
    assert on_the_fronts_own_pty(stub, t2.proc.pid), (fd_target(stub, 0), fronts_ptys(t2.proc.pid))
    # And the next one waits.
    assert wait_until(lambda: len(stubs_of(alice)) == 1 and stubs_of(alice)[0] != stub, 10), host.processes_of(alice)


def test_the_prepared_jail_ends_with_stop(host, alice, terms):
    t = attach(host, alice, "st", terms)
    assert shell_ready(t), t.output()
    assert wait_until(lambda: len(stubs_of(alice)) == 1, 10)
    r = host.run_root([host.bin, "stop", "--user", alice])
    assert r.returncode == 0, r.stderr
    assert wait_until(lambda: stubs_of(alice) == [], 5), host.processes_of(alice)
    assert host.wait_gone(alice)


def test_an_attach_without_its_stub_fails_closed(host, alice, terms):
    """The stub missing: no terminal, exit 3, one line naming it. Control:
    with the stub back, the same attach gets its shell."""
    os.rename(STUB_TARGET, STUB_TARGET + ".away")
    try:
        t = attach(host, alice, "nostub", terms)
        assert wait_until(lambda: t.proc.poll() is not None, 10)
        assert t.proc.returncode == 3
        # The line may reach the pty's reader after the front has exited.
        assert t.wait_for(f"clihost-jail: the attach stub cannot open {STUB_TARGET}: No such file", 5), t.output()
    finally:
        os.rename(STUB_TARGET + ".away", STUB_TARGET)
    t = attach(host, alice, "nostub", terms)
    assert shell_ready(t), t.output()


def test_a_one_off_without_its_stub_fails_closed(host, alice):
    """A one-off jail runs the stub too: without it nothing runs, exit 3, one
    line naming it, and an audit line. Control: with the stub back, the same
    one-off runs."""
    os.rename(STUB_TARGET, STUB_TARGET + ".away")
    try:
        r = host.run_as(PROXY, host.jail(alice, "echo RAN_$((40+2))"))
    finally:
        os.rename(STUB_TARGET + ".away", STUB_TARGET)
    assert r.returncode == 3 and "RAN_42" not in r.stdout, r
    assert r.stderr == f"clihost-jail: the attach stub cannot open {STUB_TARGET}: No such file or directory\n", r
    r = host.run_as(PROXY, host.jail(alice, "echo RAN_$((40+2))"))
    assert r.returncode == 0 and r.stdout == "RAN_42\n", r


def run_stub(messages, user="nobody", as_root=False, answers=None):
    """The stub with fd 8 a SOCK_SEQPACKET socket; `messages` a list of
    (bytes, [fds]) sent before our end closes; with a list `answers`, as
    many messages as it holds items are read from the stub into it first.
    Returns (status, stdout, stderr)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    uid = 0 if as_root else pwd.getpwnam(user).pw_uid

    def child():
        if not as_root:
            os.setgroups([])
            os.setgid(pwd.getpwnam(user).pw_gid)
            os.setuid(uid)

    # The socket as fd 8, then the stub in that process's place.
    place = "import os, sys; os.dup2(int(sys.argv[1]), int(sys.argv[2])); os.execv(sys.argv[3], sys.argv[3:])"
    p = subprocess.Popen([sys.executable, "-c", place, str(theirs.fileno()), str(ATTACH_FD), STUB_TARGET],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         pass_fds=(theirs.fileno(),), preexec_fn=child, env={})
    theirs.close()
    for data, fds in messages:
        socket.send_fds(ours, [data], fds)
    ours.settimeout(10)
    for i in range(len(answers or [])):
        answers[i] = ours.recv(64)
    ours.close()
    out, err = p.communicate(timeout=10)
    return p.returncode, out, err


def words(argv, env):
    """As base/handed.hpp lays them out: '+' and each argv word, an empty
    word, the environment; every word NUL-terminated."""
    return b"".join(b"+" + w.encode() + b"\0" for w in argv) + b"\0" + b"".join(e.encode() + b"\0" for e in env)


def run_stub_into_pipe(message, stdio):
    """The stub handed `message` and the descriptors `stdio` names: 0 (our
    stdin) or "pipe" (the write end of a pipe whose output is returned).
    Returns (status, stderr, what the pipe got)."""
    r, w = os.pipe()
    try:
        status, _, err = run_stub([(message, [w if fd == "pipe" else fd for fd in stdio])])
        os.close(w)
        w = -1
        got = os.read(r, 4096)
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    return status, err, got


def test_the_stub_execs_what_it_is_handed_on_the_terminal_it_is_handed():
    status, err, got = run_stub_into_pipe(words(["/bin/sh", "-c", "echo \"$X\"; echo to-stdout"], ["X=handed"]),
                                          [0, "pipe"])
    assert status == 0, err
    assert got == b"handed\nto-stdout\n"


def test_the_stub_gives_a_one_off_its_stderr_and_finds_a_bare_name_in_the_handed_path():
    """Three descriptors (a one-off's): stdin, stdout and stderr. A name
    without '/' is looked up in the handed PATH, as bwrap's execvp did;
    with none handed, nothing is searched and nothing runs (127)."""
    status, err, got = run_stub_into_pipe(words(["sh", "-c", "echo out; echo err >&2"], ["PATH=/nonexistent:/bin"]),
                                          [0, "pipe", "pipe"])
    assert status == 0, err
    assert got == b"out\nerr\n"
    null = os.open("/dev/null", os.O_RDWR)
    try:
        status, _, err = run_stub([(words(["true"], []), [null, null])])
    finally:
        os.close(null)
    assert status == 127 and err == b"clihost-jail-attach: cannot execute true: No such file or directory\n", err


@pytest.mark.parametrize("message,fds,why", [
    (words(["/bin/true"], []), 1, "malformed connection"),
    (words(["/bin/true"], []), 4, "malformed connection"),
    (b"+/bin/true\0", 2, "malformed command"),
    (b"/bin/true\0\0", 2, "malformed command"),  # an argv word without its '+'
    (words(["/bin/true"], ["NOEQUALS"]), 2, "malformed environment"),
    (b"+/bin/true\0\0X=1", 2, "malformed connection"),
    (b"query\0" + words(["/bin/true"], []), 1, "malformed connection"),
    (b"query\0" + words(["/bin/true"], []), 3, "malformed connection"),
    (b"query\0+/bin/true\0", 2, "malformed command"),
    (b"query\0" + words(["/bin/true"], ["=x"]), 2, "malformed environment"),
])
def test_the_stub_refuses_a_malformed_connection_or_query(message, fds, why):
    null = os.open("/dev/null", os.O_RDWR)
    try:
        status, _, err = run_stub([(message, [null] * fds)])
    finally:
        os.close(null)
    assert status == 127
    assert err.decode() == f"clihost-jail-attach: {why}\n"


def test_the_stub_without_a_connection_runs_nothing_and_never_runs_as_root():
    status, _, err = run_stub([])
    assert (status, err) == (0, b"")
    null = os.open("/dev/null", os.O_RDWR)
    try:
        status, _, err = run_stub([(words(["/bin/true"], []), [null, null])], as_root=True)
    finally:
        os.close(null)
    assert status == 127 and err == b"clihost-jail-attach: not to be run as root\n"


def query(argv, env):
    return b"query\0" + words(argv, env)


def test_the_stub_answers_a_query_with_its_clients_status_and_still_takes_its_connection():
    """A query: its command runs with the two descriptors handed as stdout
    and stderr (not the stub's), and the stub answers "exit N" with its
    status, then waits on; the connection after it is exec'd as always."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    term_r, term_w = os.pipe()
    null = os.open("/dev/null", os.O_RDONLY)
    answers = [None, None]
    try:
        status, stub_out, err = run_stub([
            (query(["/bin/sh", "-c", 'echo "$Q"; echo said >&2; exit 3'], ["Q=asked"]), [out_w, err_w]),
            (query(["/bin/sh", "-c", "kill -TERM $$"], []), [out_w, err_w]),
            (words(["/bin/sh", "-c", "echo connected"], []), [null, term_w]),
        ], answers=answers)
        for fd in (out_w, err_w, term_w, null):
            os.close(fd)
        got = [os.read(fd, 4096) for fd in (out_r, err_r, term_r)]
    finally:
        for fd in (out_r, err_r, term_r):
            os.close(fd)
    assert answers == [b"exit 3", b"exit 143"], answers
    assert got == [b"asked\n", b"said\n", b"connected\n"], got
    assert status == 0 and stub_out == b"" and err == b"", (status, err)


def query_lines(sup, how, kind):
    """The supervisor's audit lines of its queries: asked of its waiting
    jail, or answered by a query jail it started (syslog writes them
    asynchronously: callers wait for the count they expect)."""
    token = (f"query ({kind}) asked of the waiting attach jail by supervisor {sup}," if how == "asked"
             else f"query jail ({kind}) started by supervisor {sup},")
    return log_lines(lambda l: token in l, want=0, timeout=0)


def more_lines(sup, how, kind, before, want):
    """Whether `want` more such lines than `before` are written (within 5 s)."""
    return wait_until(lambda: len(query_lines(sup, how, kind)) >= before + want, 5)


def test_list_and_kill_are_answered_by_the_waiting_jail_without_a_jail_of_their_own(host, alice, terms):
    """With an attach jail waiting, `list` and `kill` are asked of it: its
    stub runs their tmux client and stays the same waiting process, no
    query jail starts, and the answers are right. Control: with no jail
    waiting (its watcher killed), the same `list` starts a query jail, and
    the probe sees it."""
    t = attach(host, alice, "one", terms)
    assert shell_ready(t), t.output()
    t2 = attach(host, alice, "two", terms)
    assert shell_ready(t2), t2.output()
    assert wait_until(lambda: len(stubs_of(alice)) == 1, 10), host.processes_of(alice)
    [stub] = stubs_of(alice)
    sup = supervisor_pid(alice)
    before = {(how, kind): len(query_lines(sup, how, kind)) for how in ("asked", "started") for kind in ("list", "kill")}
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice])
    assert r.returncode == 0 and " sessions=one,two " in r.stdout, r
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", "two"])
    assert k.returncode == 0, k
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice])
    assert r.returncode == 0 and " sessions=one " in r.stdout, r
    assert more_lines(sup, "asked", "list", before["asked", "list"], 2)
    assert more_lines(sup, "asked", "kill", before["asked", "kill"], 1)
    time.sleep(0.3)
    assert len(query_lines(sup, "started", "list")) == before["started", "list"]
    assert len(query_lines(sup, "started", "kill")) == before["started", "kill"]
    assert stubs_of(alice) == [stub] and exe_of(stub) == STUB_TARGET
    # Control: no jail waits; a query jail answers (and the probe sees its line).
    [watcher] = [p for p in pids(live=True) if p != sup and descends_from(stub, p) and
                 int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) == sup]
    os.kill(watcher, 9)
    assert wait_until(lambda: stubs_of(alice) == [], 5)
    asked = len(query_lines(sup, "asked", "list"))
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice])
    assert r.returncode == 0 and " sessions=one " in r.stdout, r
    assert more_lines(sup, "started", "list", before["started", "list"], 1)
    time.sleep(0.3)
    assert len(query_lines(sup, "asked", "list")) == asked


def test_a_waiting_jail_whose_query_hangs_is_replaced(host, alice, terms):
    """A tenant's tmux that does not answer (a hook that sleeps): `list`
    says "no answer" at the query's deadline, and the waiting jail, its stub
    stuck, is ended and another prepared. Once tmux answers again, `list`
    is answered by the new one, and an attach is served by it."""
    t = attach(host, alice, "hang", terms)
    assert shell_ready(t), t.output()
    assert wait_until(lambda: len(stubs_of(alice)) == 1, 10), host.processes_of(alice)
    [stub] = stubs_of(alice)
    assert host.tmux(alice, "set-hook", "-g", "after-list-sessions", "run-shell 'sleep 86400'").returncode == 0
    t0 = time.monotonic()
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice], timeout=30)
    assert time.monotonic() - t0 < 3.0
    assert r.returncode == 0 and " sessions=? " in r.stdout, r
    assert wait_until(lambda: len(stubs_of(alice)) == 1 and stubs_of(alice)[0] != stub, 10), host.processes_of(alice)
    assert not os.path.exists(f"/proc/{stub}")
    [again] = stubs_of(alice)
    assert host.tmux(alice, "set-hook", "-gu", "after-list-sessions").returncode == 0
    sup = supervisor_pid(alice)
    asked = len(query_lines(sup, "asked", "list"))
    r = host.run_as(PROXY, [host.bin, "list", "--user", alice])
    assert r.returncode == 0 and " sessions=hang " in r.stdout, r
    assert more_lines(sup, "asked", "list", asked, 1)
    t2 = attach(host, alice, "after", terms)
    assert shell_ready(t2), t2.output()
    assert exe_of(again) == "/usr/bin/tmux"


def parent_of(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_an_attach_during_a_query_waits_for_its_answer_and_gets_the_jail(host, alice, terms):
    """A connection that comes while the waiting jail answers a query (a
    hook holds its tmux client for 1 s) waits in the stub's socket: the
    query is answered (the sessions before the attach), and then the same
    jail's stub becomes the connection's client on its terminal."""
    t = attach(host, alice, "q1", terms)
    assert shell_ready(t), t.output()
    assert wait_until(lambda: len(stubs_of(alice)) == 1, 10), host.processes_of(alice)
    [stub] = stubs_of(alice)
    assert host.tmux(alice, "set-hook", "-g", "after-list-sessions", "run-shell 'sleep 1'").returncode == 0
    front = start_as(PROXY, [host.bin, "list", "--user", alice], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
    try:
        # The query's client runs as the stub's child, in the waiting jail.
        uid = pwd.getpwnam(alice).pw_uid
        assert wait_until(lambda: any(parent_of(p) == stub and exe_of(p) == "/usr/bin/tmux"
                                      for p in pids(uid=uid, live=True)), 5), host.processes_of(alice)
        t2 = attach(host, alice, "q2", terms)
        assert shell_ready(t2), t2.output()
        out, err = front.communicate(timeout=10)
    finally:
        if front.poll() is None:
            front.kill()
            front.wait()
    assert front.returncode == 0 and " sessions=q1 " in out, (out, err)
    assert exe_of(stub) == "/usr/bin/tmux"
    assert on_the_fronts_own_pty(stub, t2.proc.pid), (fd_target(stub, 0), fronts_ptys(t2.proc.pid))
