"""One owner per tenant, one-off jails: `run --user T -- CMD` is started by
T's supervisor (the front hands its stdio over), with T's context, and the
live process tree of a tenant matches docs/ARCHITECTURE.md's process table
(the single source of the process model)."""
import glob
import os
import pwd
import re

from conftest import CGROUP_PARENT, PROXY, REPO, STUB_TARGET, cgroup_missing, new_session, pids, proc_status, \
    wait_until
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


# ------------------------------------------------------------ process table --

def process_table():
    """The rows of docs/ARCHITECTURE.md's process table, by kind (the kind
    column up to its first parenthesis)."""
    text = open(os.path.join(REPO, "docs", "ARCHITECTURE.md")).read()
    head = "| kind | uid | file:function | started by | reaped by | lifetime |"
    assert head in text
    rows = {}
    for line in text.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].split(" (")[0]] = dict(zip(["kind", "uid", "where", "started", "reaped", "lifetime"], cells))
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
    if exe == host.bin and proc_status(pid, "Uid")[:3] == [str(uid)] * 3:
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
            return "attach jail"  # its stub waits, or became its tmux client
        if b" -D" in a:
            return "session jail"
        return "one-off jail"
    return None


def test_a_live_tenant_matches_the_process_table(host, alice, terms):
    """A session jail with two attached clients (and the attach jail
    prepared for the next connection) and a one-off jail: every process of
    the helper and every bwrap of the tenant is a kind of the table, with
    its uid, started by (the parent) and reaped by the kind the table says."""
    s = new_session()
    c1 = attach(host, alice, s, terms)
    assert shell_ready(c1), c1.output()
    c2 = attach(host, alice, s, terms)
    assert shell_ready(c2, tag="SECOND"), c2.output()
    one = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sleep", "4345"],
                     user=PROXY)
    terms.append(one)
    assert wait_until(lambda: sleepers(alice, "4345"), 15), one.output()
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
    want = {"front": 3, "supervisor": 1, "session watcher": 1, "session jail": 1, "connection watcher": 4,
            "attach jail": 3, "one-off jail": 1}
    for k, n in want.items():
        assert seen.count(k) == n, (k, seen)
    for pid, kind in kinds.items():
        assert kind in rows, (kind, sorted(rows))
        row = rows[kind]
        ids = proc_status(pid, "Uid")
        if row["uid"].startswith("root"):
            assert ids[1] == "0", (kind, ids)
        else:
            assert row["uid"] == "T" and ids[:3] == [str(uid)] * 3, (kind, ids, row["uid"])
        parent = ppid(pid)
        for col in ("started", "reaped"):
            said = row[col]
            if kind == "front":
                assert parent not in kinds, (kind, parent)
            elif "init" in said:
                assert parent == 1, (kind, parent, said)
            else:
                assert kinds.get(parent) == said, (kind, col, said, kinds.get(parent))
