"""One owner per tenant, one-off jails: `run --user T -- CMD` is started by
T's supervisor (the front hands its stdio over), with T's context, and the
live process tree of a tenant matches docs/ARCHITECTURE.md's process table
(the single source of the process model)."""
import glob
import os
import pwd
import re

from conftest import CGROUP_PARENT, PROXY, REPO, RUNTIME_DIR, STUB_TARGET, cgroup_missing, new_session, pids, prepared_oneoff_jails, \
    proc_exe, proc_status, wait_until
from ownerutil import ancestors, cmdline, ppid, supervisor_pid
from ptyutil import PtyProcess, attach, shell_ready


def sleepers(tenant, arg):
    out = []
    for p in pids(uid=pwd.getpwnam(tenant).pw_uid, live=True):
        argv = cmdline(p)
        if len(argv) >= 2 and os.path.basename(argv[0]) == b"sleep" and argv[1] == arg.encode():
            out.append(p)
    return out


def test_a_one_off_jail_is_the_supervisors_with_the_tenants_context(host, alice, terms):
    """The one-off jail descends from T's supervisor (not from its front), is
    in T's jails cgroup leaf, has T's loginuid and a session keyring that is
    not the caller's. Positive control: the caller's own shell reads its key."""
    s = new_session()
    script = (f"keyctl add user ctjoneoff CALLERSECRET43 @s >/dev/null && "
              f"echo CONTROL_$(keyctl print %user:ctjoneoff) && "
              f"exec {host.bin} run --user {alice} --session {s} -- /bin/sh -c "
              "'keyctl print %user:ctjoneoff 2>/dev/null | sed s/^/KEYPRINT_/; "
              "echo KEYSEARCH_$(keyctl search @s user ctjoneoff >/dev/null 2>&1; echo $?); "
              "echo LOGINUID_$(cat /proc/self/loginuid); echo PROBE_DONE; exec sleep 4343'")
    t = PtyProcess(["keyctl", "session", "-", "/bin/sh", "-c", script], user=PROXY)
    terms.append(t)
    assert t.wait_for("PROBE_DONE", 20), t.output()
    assert "CONTROL_CALLERSECRET43" in t.output(), t.output()  # the control
    out = t.output().split("CONTROL_CALLERSECRET43", 1)[1]
    uid = pwd.getpwnam(alice).pw_uid
    assert "KEYSEARCH_1" in out and "KEYPRINT_" not in out and "CALLERSECRET43" not in out, out
    assert f"LOGINUID_{uid}" in out, out
    assert wait_until(lambda: sleepers(alice, "4343"), 5), host.processes_of(alice)
    sleeper = sleepers(alice, "4343")[0]
    sup = supervisor_pid(alice)
    assert sup and sup in ancestors(sleeper), (sup, ancestors(sleeper))
    assert t.proc.pid not in ancestors(sleeper)  # the front is no parent of its jail
    assert proc_status(sup, "Uid") == ["0", "0", "0", "0"] and ppid(sup) == 1
    # T's cgroup, its jails leaf (where this host has cgroups to write).
    if cgroup_missing() is None:
        cg = open(f"/proc/{sleeper}/cgroup").read()
        assert f"{CGROUP_PARENT}/{uid}/jails" in cg, cg
    # The front's hang-up ends exactly that jail, and its supervisor with it.
    t.hangup()
    assert t.wait(10) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)
    assert wait_until(lambda: supervisor_pid(alice) is None, 10)


def test_stop_ends_a_one_off_jail(host, alice, terms):
    s = new_session()
    t = PtyProcess([host.bin, "run", "--user", alice, "--session", s, "--", "/bin/sleep", "4344"], user=PROXY)
    terms.append(t)
    assert wait_until(lambda: sleepers(alice, "4344"), 15), t.output()
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0, r
    assert t.wait(10) is not None
    assert wait_until(lambda: not host.processes_of(alice), 5), host.processes_of(alice)


# ------------------------------------------------ the prepared one-off jail --

def waiting_oneoff_watcher(host, tenant):
    """The watcher of the one-off jail that waits for the tenant's next
    one-off (its bwrap set up, its stub waiting), or None."""
    watchers = [p for p in prepared_oneoff_jails(pwd.getpwnam(tenant).pw_uid) if proc_exe(p) == host.supervisor_bin]
    assert len(watchers) <= 1, watchers
    return watchers[0] if watchers else None


def started_line(host, s):
    """The supervisor's audit line that handed the one-off of session s to its jail."""
    started = lambda l: "one-off jail started by supervisor" in l
    lines = [l for l in host.audit_lines(f"session={s}", until=started) if started(l)]
    assert len(lines) == 1, lines
    return lines[0]


def watcher_in(line):
    return int(re.search(r", watcher (\d+),", line).group(1))


def keep_supervisor(host, tenant, terms, arg):
    """A long one-off (`sleep arg`) that keeps the tenant's supervisor, as
    the bench's Cw runs have one. Returns its front and its session."""
    s = new_session()
    t = PtyProcess([host.bin, "run", "--user", tenant, "--session", s, "--", "/bin/sleep", arg], user=PROXY)
    terms.append(t)
    assert wait_until(lambda: sleepers(tenant, arg), 15), t.output()
    return t, s


def watcher_of_sleep(host, tenant, arg):
    """The watcher of the one-off jail whose command is `sleep arg`."""
    (p,) = sleepers(tenant, arg)
    while p > 1:
        p = ppid(p)
        if proc_exe(p) == host.supervisor_bin:
            return p
    return None


def test_a_one_off_runs_in_the_jail_prepared_before_it(host, alice, terms):
    """Once a tenant has run a one-off, its supervisor keeps the next
    one-off's jail ready: bwrap set up, the stub waiting. The next one-off
    goes to that jail (its audit line names the waiting watcher): its
    command found by PATH, its environment the plan's and the caller's,
    its stdout, stderr and status its own; another jail is then prepared.
    The control: the first one-off, with no jail waiting, gets a jail of
    its own, and its audit line names the watcher its command runs under."""
    assert waiting_oneoff_watcher(host, alice) is None
    keeper, s1 = keep_supervisor(host, alice, terms, "4346")
    assert watcher_in(started_line(host, s1)) == watcher_of_sleep(host, alice, "4346")
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice), 10), host.processes_of(alice)
    waiting = waiting_oneoff_watcher(host, alice)
    s = new_session()
    r = host.run_as(PROXY, [host.bin, "run", "--user", alice, "--session", s, "--", "sh", "-c",
                            "echo OUT_${TTYD_SANDBOX}_${TERM}; echo ERR >&2; exit 7"],
                    env={"TERM": "xterm", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 7 and r.stdout == "OUT_true_xterm\n" and r.stderr == "ERR\n", r
    assert watcher_in(started_line(host, s)) == waiting
    # The next one waits already, in a jail of its own.
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice) not in (None, waiting), 10), host.processes_of(alice)
    keeper.hangup()
    assert keeper.wait(10) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)


def test_a_one_offs_status_is_its_commands_whatever_the_number(host, alice, terms):
    """75 and 76 are what an attach's watcher says of a tmux server gone or a
    connection that never came; a one-off's command may exit with them and
    keeps them, and runs once (75 used to be read as `retry`, and ran the
    command again). In a jail prepared ahead and in one started for the
    request alike."""
    count = os.path.join(host.home(alice), f"ctj-runs-{new_session()}")
    def run(code):
        return host.run_as(PROXY, host.jail(alice, f"echo RAN >> {count}; exit {code}"))
    for code in (75, 76, 3, 0):
        r = run(code)
        assert r.returncode == code and "clihost-jail" not in r.stderr, (code, r)
    keeper, _ = keep_supervisor(host, alice, terms, "4347")
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice), 10), host.processes_of(alice)
    for code in (75, 76):
        r = run(code)
        assert r.returncode == code and "clihost-jail" not in r.stderr, (code, r)
    assert open(count).read() == "RAN\n" * 6
    keeper.hangup()
    assert keeper.wait(10) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)


def test_a_one_offs_arguments_reach_it_whole(host, alice, terms):
    """The stub is handed a one-off's argv as the caller gave it: an empty
    argument is one (it used to make the command "not fit" its jail), and a
    word that looks like the layout's own marks is just a word. In a jail
    started for the request and in one prepared ahead alike."""
    argv = ["printf", "[%s]", "", "a b", "+x", "", "-"]
    want = "[][a b][+x][][-]"
    r = host.run_as(PROXY, [host.bin, "run", "--user", alice, "--session", new_session(), "--", *argv],
                    env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout == want, r
    keeper, _ = keep_supervisor(host, alice, terms, "4348")
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice), 10), host.processes_of(alice)
    waiting = waiting_oneoff_watcher(host, alice)
    s = new_session()
    r = host.run_as(PROXY, [host.bin, "run", "--user", alice, "--session", s, "--", *argv],
                    env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout == want, r
    assert watcher_in(started_line(host, s)) == waiting
    keeper.hangup()
    assert keeper.wait(10) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)


def test_stop_and_the_last_jail_end_a_waiting_one_off_jail(host, alice, terms):
    """The prepared one-off jail is no jail that keeps its supervisor: it
    ends when the last one-off does (nothing of the tenant left), and with
    `stop`."""
    keeper, _ = keep_supervisor(host, alice, terms, "4348")
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice), 10), host.processes_of(alice)
    keeper.hangup()
    assert keeper.wait(10) is not None
    assert host.wait_gone(alice, 10), host.processes_of(alice)
    assert wait_until(lambda: supervisor_pid(alice) is None, 10)
    keeper, _ = keep_supervisor(host, alice, terms, "4349")
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice), 10), host.processes_of(alice)
    r = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert r.returncode == 0, r
    assert keeper.wait(10) is not None
    assert wait_until(lambda: not host.processes_of(alice), 5), host.processes_of(alice)


# ------------------------------------------------------------ process table --

def process_table():
    """The rows of docs/ARCHITECTURE.md's process table, by kind (the kind
    column up to its first parenthesis)."""
    text = open(os.path.join(REPO, "docs", "ARCHITECTURE.md")).read()
    head = "| kind | program | uid | cgroup leaf | file:function | started by | reaped by | lifetime |"
    assert head in text
    rows = {}
    for line in text.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split(" (")[0]] = dict(zip(["kind", "program", "uid", "leaf", "where", "started", "reaped",
                                                  "lifetime"], cells))
    return rows


def test_the_process_table_names_functions_that_exist():
    rows = process_table()
    assert rows
    for row in rows.values():
        for ref in re.findall(r"([\w]+\.cpp):([\w:]+)", row["where"]):
            files = glob.glob(os.path.join(REPO, "helper", "*", ref[0]))
            assert files, ref
            name = ref[1].split("::")[-1]
            assert any(re.search(rf"\b{name}\(", open(f).read()) for f in files), (ref, row["kind"])


def classify(host, tenant, pid, sup):
    """The kind of a live process, as the process table names it."""
    uid = pwd.getpwnam(tenant).pw_uid
    exe = ""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        pass
    argv = cmdline(pid)
    if pid == sup:
        return "supervisor"
    if exe == host.bin and proc_status(pid, "Uid")[1] == "0":
        return "front"
    if exe.endswith("slirp4netns"):
        return "slirp4netns"
    if exe == host.supervisor_bin and proc_status(pid, "Uid")[:3] == [str(uid)] * 3:
        # A watcher: which by the jail it starts.
        for c in [int(x) for x in open(f"/proc/{pid}/task/{pid}/children").read().split()]:
            a = b" ".join(cmdline(c))
            if b"bwrap" in a:
                return "session watcher" if b" -D" in a and STUB_TARGET.encode() not in a else "connection watcher"
        return "watcher?"
    if exe.endswith("bwrap"):
        try:
            if os.readlink(f"/proc/{ppid(pid)}/exe").endswith("bwrap"):
                return None  # the sandbox's own pid 1: part of the jail its parent is
        except OSError:
            pass
        a = b" ".join(argv)
        if STUB_TARGET.encode() in argv:
            # Its stub waits, or became its tmux client or the one-off's command.
            return "one-off jail" if b"--json-status-fd" in argv else "attach jail"
        if b" -D" in a:
            return "session jail"
        return "one-off jail"
    return None


def cgroup_leaf(pid, uid):
    """The leaf of T's cgroup a process is in ("supervisor", "jails"), the
    same in every hierarchy; "the caller's" when it is in none of T's."""
    tails = set()
    for line in open(f"/proc/{pid}/cgroup").read().splitlines():
        path = line.split(":", 2)[2]
        if f"/{CGROUP_PARENT}/{uid}/" in path + "/":
            tails.add(path.split(f"/{CGROUP_PARENT}/{uid}", 1)[1])
    if not tails:
        return "the caller's"
    assert len(tails) == 1, (pid, tails)
    return tails.pop().strip("/")


def test_a_live_tenant_matches_the_process_table(host, alice, terms):
    """A session jail with two attached clients (and the attach jail
    prepared for the next connection) and a one-off jail (and the one-off
    jail prepared for the next one-off): every process of
    the helper and every bwrap of the tenant is a kind of the table, with
    its uid, its cgroup leaf, started by (the parent) and reaped by the kind
    the table says. The leaves matter: the watchers are outside the jails
    leaf, so the tenant's limits (and the OOM killer they call) never reach
    them; every process of a jail, down to its commands, is inside it."""
    s = new_session()
    c1 = attach(host, alice, s, terms)
    assert shell_ready(c1), c1.output()
    c2 = attach(host, alice, s, terms)
    assert shell_ready(c2, tag="SECOND"), c2.output()
    one = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sleep", "4345"],
                     user=PROXY)
    terms.append(one)
    assert wait_until(lambda: sleepers(alice, "4345"), 15), one.output()
    # And the jail prepared for the next one-off.
    assert wait_until(lambda: waiting_oneoff_watcher(host, alice), 10), host.processes_of(alice)
    rows = process_table()
    sup = supervisor_pid(alice)
    uid = pwd.getpwnam(alice).pw_uid
    kinds = {}
    for pid in set(host.helper_pids()) | set(pids(uid=uid, live=True)):
        try:
            k = classify(host, alice, pid, sup)
        except OSError:
            continue
        if k is not None:
            kinds[pid] = k
    seen = sorted(kinds.values())
    want = {"front": 3, "supervisor": 1, "session watcher": 1, "session jail": 1, "connection watcher": 5,
            "attach jail": 3, "one-off jail": 2}
    for k, n in want.items():
        assert seen.count(k) == n, (k, seen)
    for pid, kind in kinds.items():
        assert kind in rows, (kind, sorted(rows))
        row = rows[kind]
        # The program it runs: the front the setuid binary, the supervisor
        # and every watcher the supervisor program (forks of it, never of
        # the setuid image), each jail's first process bwrap.
        assert os.path.basename(proc_exe(pid)) == row["program"].split()[0], (kind, proc_exe(pid), row["program"])
        ids = proc_status(pid, "Uid")
        if row["uid"].startswith("root"):
            assert ids[1] == "0", (kind, ids)
        else:
            assert row["uid"] == "T" and ids[:3] == [str(uid)] * 3, (kind, ids, row["uid"])
        if cgroup_missing() is None:
            assert cgroup_leaf(pid, uid) == row["leaf"].split(",")[0], (kind, pid, open(f"/proc/{pid}/cgroup").read())
        parent = ppid(pid)
        for col in ("started", "reaped"):
            said = row[col]
            if kind == "front":
                assert parent not in kinds, (kind, parent)
            elif "init" in said:
                assert parent == 1, (kind, parent, said)
            else:
                assert kinds.get(parent) == said, (kind, col, said, kinds.get(parent))
    # Every other process of T is a jail's (bwrap's own pid 1, tmux, the
    # shells, the one-off's sleep): in the jails leaf.
    if cgroup_missing() is None:
        helpers = {p for p, k in kinds.items() if rows[k]["leaf"] != "jails"}
        for pid in set(pids(uid=uid, live=True)) - helpers:
            try:
                leaf = cgroup_leaf(pid, uid)
            except OSError:
                continue
            assert leaf == "jails", (pid, cmdline(pid), leaf)


# ------------------------------------- what a later session jail inherits --

def fd_targets(pid):
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            pass
    return out


def endpoint_inode(tenant):
    """The inode of the supervisor's listening socket (/proc/net/unix)."""
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.sock")
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[7] == path:
            return f[6]
    return None


def test_a_session_jail_started_for_a_later_attach_holds_nothing_of_the_supervisor(host, alice, terms):
    """A supervisor started for a one-off starts the session jail when the
    first attach comes, from its event loop. That jail's watcher (the
    tenant's, for the jail's whole life) holds its own descriptors only:
    not the supervisor's endpoint, not the runtime directory, not the
    attaching caller's terminal. Controls: the same probe finds the
    endpoint and the runtime directory among the supervisor's descriptors,
    and the caller's terminal among the front's."""
    keeper, _ = keep_supervisor(host, alice, terms, "4351")
    sup = supervisor_pid(alice)
    s = new_session()
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    started = lambda l: "session jail started by supervisor" in l
    (line,) = [l for l in host.audit_lines(f"session={s}", until=started) if started(l)]
    watcher = watcher_in(line)
    assert proc_exe(watcher) == host.supervisor_bin and proc_status(watcher, "Uid")[0] == str(pwd.getpwnam(alice).pw_uid)
    inode = endpoint_inode(alice)
    assert inode is not None
    terminal = os.readlink(f"/proc/{t.proc.pid}/fd/0")
    # The controls.
    assert terminal.startswith("/dev/pts/"), terminal
    assert f"socket:[{inode}]" in fd_targets(sup).values(), fd_targets(sup)
    assert RUNTIME_DIR in fd_targets(sup).values(), fd_targets(sup)
    held = fd_targets(watcher)
    assert all(held.get(fd) == "/dev/null" for fd in (0, 1, 2)), held
    assert f"socket:[{inode}]" not in held.values(), held
    assert RUNTIME_DIR not in held.values(), held
    assert not [v for v in held.values() if v.startswith("/dev/pts/") or v == terminal], held
    # Its own: the report pipe and the watcher's own descriptors, a few.
    assert len(held) <= 8, held
    keeper.hangup()
    t.hangup()
    assert keeper.wait(10) is not None and t.wait(10) is not None
