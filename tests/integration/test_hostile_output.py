"""Hostile output and hostile clients (issue 23): nothing a tenant's tmux or
jail says reaches the proxy unescaped, nothing one tenant does blocks another.

Real tenants, real tmux, a real pty; the proxy's environment (LANG=C.UTF-8)
and its own parser (install/clihost/proxy_example.py).
"""
import json
import os
import pwd
import re
import sys
import time

from conftest import PROXY, REPO, RUNTIME_DIR, new_session
from ptyutil import PtyProcess, attach, shell_ready

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(REPO, "install", "clihost"))
import proxy_example as px  # noqa: E402

PROXY_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
TEXT_LINE = re.compile(r"tenant=([A-Za-z0-9_.-]+) uid=(\d+) supervisor=(\d+) "
                       r"started=(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) changed=([a-z_,.-]+) sessions=(\S+) "
                       r"memory=(\d+|-) tasks=(\d+|-)")


def run_list(host, *args, timeout=60):
    r = host.run_as(PROXY, [host.bin, "list", *args], env=PROXY_ENV, timeout=timeout)
    assert r.returncode == 0, r
    return r


def started_jail(host, tenant, terms, session=None):
    s = session or new_session()
    t = attach(host, tenant, s, terms)
    assert shell_ready(t), t.output()
    return s, t


def raw_tmux_list(host, tenant):
    """What the tenant's own tmux answers list-sessions with, bytes."""
    from conftest import spawn
    return spawn(["tmux", "-S", host.tmux_sock(tenant), "list-sessions", "-F", "#{session_name}"],
                 user=tenant, env=PROXY_ENV, binary=True)


FORGED_NAME = "zz tenant=B uid=1008 sessions=evil"
HOOK_TEXT = "x\rtenant=ctj-bob uid=1008 supervisor=1 started=2026-01-01T00:00:00Z sessions=PWNED\x1eY\x1b[2J"


def test_list_cannot_be_forged_by_a_session_name_or_a_hook(host, alice, bob, terms):
    # A UTF-8 locale for alice's session jail: the query jail that its
    # supervisor starts for `list` has that jail's environment, and a tmux
    # client of a UTF-8 locale passes control bytes on raw (else as "_"),
    # so the escaping below meets them.
    s_a = new_session()
    t_a = PtyProcess([host.bin, "run", "--user", alice, "--session", s_a], user=PROXY,
                     env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8"})
    terms.append(t_a)
    assert shell_ready(t_a), t_a.output()
    s_b, _ = started_jail(host, bob, terms)
    assert host.tmux(alice, "new-session", "-d", "-s", FORGED_NAME).returncode == 0
    assert host.tmux(alice, "set-hook", "-g", "after-list-sessions",
                     f"display-message -p '{HOOK_TEXT}'").returncode == 0
    # Positive control: the tenant's tmux itself says all of it raw.
    raw = raw_tmux_list(host, alice).stdout
    assert FORGED_NAME.encode() in raw and b"\r" in raw and b"\x1e" in raw and b"\x1b" in raw, raw
    text = run_list(host).stdout
    # Nothing raw: one line per jail, printable ASCII only.
    assert all(0x20 <= ord(c) <= 0x7e for c in text.replace("\n", "")), repr(text)
    lines = text.splitlines()
    mine = [l for l in lines if f" uid={pwd.getpwnam(alice).pw_uid} " in l]
    theirs = [l for l in lines if f" uid={pwd.getpwnam(bob).pw_uid} " in l]
    assert len(mine) == 1 and len(theirs) == 1, lines
    for line in lines:
        assert TEXT_LINE.fullmatch(line), line
    assert theirs[0].startswith(f"tenant={bob} ") and f" sessions={s_b} memory=" in theirs[0], theirs
    names = TEXT_LINE.fullmatch(mine[0]).group(6).split(",")
    assert mine[0].startswith(f"tenant={alice} ")
    assert s_a in names and "zz\\x20tenant\\x3dB\\x20uid\\x3d1008\\x20sessions\\x3devil" in names, names
    # The hook's line is one more (escaped) name of alice's own, no more.
    assert any(n.startswith("x\\x0dtenant\\x3dctj-bob") and "\\x1e" in n and "\\x1b" in n for n in names), names
    # JSON Lines, parsed by the example proxy as a proxy would.
    js = run_list(host, "--json").stdout
    entries = [json.loads(l) for l in js.splitlines()]
    assert sorted(e["tenant"] for e in entries if e["tenant"] in (alice, bob)) == [alice, bob]
    listed = px.parse_list(js)
    assert listed[bob] == [s_b], listed
    assert s_a in listed[alice] and FORGED_NAME not in listed[alice], listed


def test_a_tenant_whose_tmux_hangs_delays_nobody(host, alice, bob, terms):
    s_a, _ = started_jail(host, alice, terms)
    s_a2, _ = started_jail(host, alice, terms)
    s_b, _ = started_jail(host, bob, terms)
    # Control: before the hook, alice's sessions are listed.
    assert sorted(TEXT_LINE.fullmatch(run_list(host, "--user", alice).stdout.strip()).group(6).split(",")) == \
        sorted([s_a, s_a2])
    assert host.tmux(alice, "set-hook", "-g", "after-list-sessions", "run-shell 'sleep 86400'").returncode == 0
    t0 = time.monotonic()
    r = run_list(host, timeout=30)
    took = time.monotonic() - t0
    assert took < 3.0, (took, r)
    lines = r.stdout.splitlines()
    assert any(l.startswith(f"tenant={alice} ") and " sessions=? memory=" in l for l in lines), lines
    assert any(l.startswith(f"tenant={bob} ") and f" sessions={s_b} memory=" in l for l in lines), lines
    t0 = time.monotonic()
    js = run_list(host, "--json", timeout=30).stdout
    assert time.monotonic() - t0 < 3.0
    listed = px.parse_list(js)
    assert listed[alice] is None and listed[bob] == [s_b], listed
    entry = [json.loads(l) for l in js.splitlines() if json.loads(l)["tenant"] == alice][0]
    assert entry["sessions_state"] == "no-answer"
    # kill of the hung tenant: one line after the deadline.
    t0 = time.monotonic()
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", s_a2], env=PROXY_ENV, timeout=30)
    assert time.monotonic() - t0 < 3.0
    assert k.returncode == 1
    assert k.stderr == (f"clihost-jail: session {s_a2} of tenant {alice} not killed: "
                        f"its tmux did not answer within 2 s\n"), k.stderr


def test_tenants_whose_tmux_hangs_hold_lists_window_half_a_second_each(host, bob, terms):
    """`list` asks a window of supervisors at a time (twice the CPUs, 4 to
    32, front.cpp:ask_supervisors) so that 100 query jails do not run past
    their deadlines together; a question older than 0.5 s leaves the
    window. One more hung tenant than the window holds: had each kept its
    place until its 2 s answer, the last would be asked at 2 s and `list`
    would take 4 s or more; it takes about 2.5 s, and every tenant is listed,
    the hung ones as "no answer"."""
    window = min(max(2 * os.cpu_count(), 4), 32)
    hung = [f"ctj-hw{i:02d}" for i in range(window + 1)]
    host.extra_users = getattr(host, "extra_users", []) + hung
    try:
        for n in hung:
            host.add_tenant(n)
            started_jail(host, n, terms)
            assert host.tmux(n, "set-hook", "-g", "after-list-sessions", "run-shell 'sleep 86400'").returncode == 0
        s_b, _ = started_jail(host, bob, terms)
        t0 = time.monotonic()
        r = run_list(host, timeout=60)
        took = time.monotonic() - t0
        lines = r.stdout.splitlines()
        for n in hung:
            assert any(l.startswith(f"tenant={n} ") and " sessions=? memory=" in l for l in lines), (n, lines)
        assert any(l.startswith(f"tenant={bob} ") and f" sessions={s_b} memory=" in l for l in lines), lines
        assert took < 3.5, (took, lines)
    finally:
        for t in terms:
            t.close()
        terms.clear()
        for n in hung:
            host.run_root([host.bin, "stop", "--user", n], timeout=30)


def test_kill_says_one_line_of_its_own_whatever_tmux_said(host, alice, terms):
    started_jail(host, alice, terms)
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", "nosuch"], env=PROXY_ENV)
    assert k.returncode == 1
    assert k.stderr == (f"clihost-jail: session nosuch of tenant {alice} not killed: "
                        f"tmux said: can't find session: nosuch\n"), k.stderr


ATTACK = "printf 'clihost-jail: tenant A refused: forged\\n\\033[2J\\033]0;pwn\\007' >&2; exit 3"


def test_an_attach_relays_the_jails_stderr_escaped_and_only_the_helpers_codes(host, alice, terms):
    s, t = started_jail(host, alice, terms)
    t.write(f"tmux detach-client -E \"{ATTACK}\"\r")
    assert t.wait(15) == 5
    out = t.output()
    assert "jail: clihost-jail: tenant A refused: forged" in out, out
    assert "jail: \\x1b[2J\\x1b]0;pwn\\x07" in out, out
    assert "\x1b]0;pwn" not in out and "\nclihost-jail: tenant A" not in out.replace("\r", ""), out
    # Control: a one-off command keeps its status and its stderr (the
    # caller chose the command): the same bytes raw, exit 3.
    r = host.run_as(PROXY, host.jail(alice, ATTACK), env=PROXY_ENV)
    assert r.returncode == 3
    assert "clihost-jail: tenant A refused: forged\n\x1b[2J\x1b]0;pwn\x07" in r.stderr, r


def test_distinct_session_names_stay_distinct_sessions(host, alice, terms):
    base = new_session()
    dotted, under = f"{base}.y", f"{base}_y"
    a = attach(host, alice, dotted, terms)
    assert shell_ready(a, "DOT"), a.output()
    b = attach(host, alice, under, terms)
    assert shell_ready(b, "UNDER"), b.output()
    # Two sessions: what is typed in one never shows in the other.
    assert "DOT_42" not in b.output(), b.output()
    listed = px.parse_list(run_list(host, "--json", "--user", alice).stdout)
    assert sorted(listed[alice]) == sorted([dotted, under]), listed
    text = run_list(host, "--user", alice).stdout
    assert sorted(TEXT_LINE.fullmatch(text.strip()).group(6).split(",")) == sorted([dotted, under]), text
    # kill matches the name exactly: x.y's end leaves x_y.
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", dotted])
    assert k.returncode == 0, k
    assert a.wait(10) is not None
    assert b.proc.poll() is None and shell_ready(b, "STILL"), b.output()
    assert px.parse_list(run_list(host, "--json", "--user", alice).stdout)[alice] == [under]


def test_stop_refuses_an_account_that_is_neither_tenant_nor_jail_owner(host, alice):
    from conftest import NON_TENANT
    uid = pwd.getpwnam(NON_TENANT).pw_uid
    lock = os.path.join(RUNTIME_DIR, f"{uid}.lock")
    if os.path.exists(lock):
        os.unlink(lock)
    r = host.run_as(PROXY, [host.bin, "stop", "--user", NON_TENANT])
    assert r.returncode == 1
    assert r.stderr == (f"clihost-jail: tenant {NON_TENANT} refused: not a tenant, "
                        f"and no session jail of its runs\n"), r.stderr
    assert not os.path.exists(lock)
    # Control: a tenant without a jail is answered (and may get its lock).
    ok = host.run_as(PROXY, [host.bin, "stop", "--user", alice])
    assert ok.returncode == 0 and ok.stdout == f"{alice}: no session jail was running\n", ok


def test_a_removed_tenants_jail_can_still_be_stopped(host, alice, terms):
    from conftest import TENANT_GROUP, sh
    started_jail(host, alice, terms)
    sh("gpasswd", "-d", alice, TENANT_GROUP)
    try:
        listed = run_list(host, "--user", alice).stdout
        assert re.search(r" sessions=- memory=\S+ tasks=\S+\n$", listed), listed  # not a tenant: not asked
        r = host.run_as(PROXY, [host.bin, "stop", "--user", alice], timeout=30)
        assert r.returncode == 0 and r.stdout == f"{alice}: session jail stopped\n", r
    finally:
        sh("gpasswd", "-a", alice, TENANT_GROUP)
