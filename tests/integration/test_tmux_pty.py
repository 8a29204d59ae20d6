"""tmux in the jail under a real pseudo-terminal: the socket lives in
$HOME/.cache/tmux (made by the tenant, 0700), a second run reattaches, and
`clihost-jail kill` ends the session on the jail's socket."""
import os
import pwd
import shutil
import stat

import pytest

from conftest import PROXY, new_session, wait_until
from ptyutil import PtyProcess


def tmux_as(host, tenant, *args):
    return host.tmux(tenant, *args)


def wait_session(host, tenant, session, present=True, timeout=10.0):
    return wait_until(lambda: host.has_tmux_session(tenant, session) == present, timeout, step=0.1)


@pytest.fixture
def terminals():
    opened = []
    yield opened
    for t in opened:
        t.close()


def run_terminal(host, tenant, session, terminals):
    t = PtyProcess([host.bin, "run", "--user", tenant, "--session", session], user=PROXY)
    terminals.append(t)
    return t


def test_socket_dir_is_made_by_the_tenant_with_mode_0700(host, alice, terminals):
    s = new_session()
    run_terminal(host, alice, s, terminals)
    assert wait_session(host, alice, s), terminals[0].output()
    d = os.path.join(host.home(alice), ".cache", "tmux")
    st = os.lstat(d)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
    assert st.st_uid == pwd.getpwnam(alice).pw_uid
    assert os.lstat(os.path.join(d, "clihost.sock")).st_uid == st.st_uid
    assert host.run_root([host.bin, "kill", "--user", alice, "--session", s]).returncode == 0


def test_second_run_reattaches_and_kill_ends_both(host, alice, terminals):
    s = new_session()
    first = run_terminal(host, alice, s, terminals)
    assert wait_session(host, alice, s), first.output()
    second = run_terminal(host, alice, s, terminals)
    def clients():
        return tmux_as(host, alice, "list-clients", "-t", "=" + s).stdout.splitlines()

    assert wait_until(lambda: len(clients()) == 2, 10, step=0.1), clients()
    # Both terminals show the same session: what is typed in one appears in the other.
    first.write("echo SHARED_$((40+2))\r")
    assert second.wait_for("SHARED_42"), second.output()
    assert tmux_as(host, alice, "list-sessions").stdout.count("\n") == 1
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", s])
    assert k.returncode == 0, k.stderr
    assert first.wait(10) == 0 and second.wait(10) == 0
    assert wait_session(host, alice, s, present=False)
    assert host.wait_gone(alice), host.processes_of(alice)


def test_kill_matches_the_session_name_exactly(host, alice, terminals):
    s = new_session()
    run_terminal(host, alice, s + "x", terminals)
    assert wait_session(host, alice, s + "x")
    k = host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", s])
    assert k.returncode != 0  # no session named exactly s
    assert wait_session(host, alice, s + "x")
    assert host.run_as(PROXY, [host.bin, "kill", "--user", alice, "--session", s + "x"]).returncode == 0


def test_inside_tmux_the_shell_is_jailed(host, alice, terminals):
    s = new_session()
    t = run_terminal(host, alice, s, terminals)
    assert wait_session(host, alice, s), t.output()
    t.write("echo SB=$TTYD_SANDBOX; ls /proc | grep -cE '^[0-9]+$'; ls /root\r")
    assert t.wait_for("SB=true"), t.output()
    assert t.wait_for("No such file or directory"), t.output()
    host.run_root([host.bin, "kill", "--user", alice, "--session", s])
    t.wait(10)


def test_symlinked_tmux_dir_is_refused(host, bob, terminals):
    cache = os.path.join(host.home(bob), ".cache")
    os.makedirs(cache, exist_ok=True)
    uid = pwd.getpwnam(bob).pw_uid
    os.chown(cache, uid, uid)
    target = os.path.join(host.home(bob), "elsewhere")
    os.makedirs(target, exist_ok=True)
    os.chown(target, uid, uid)
    link = os.path.join(cache, "tmux")
    if os.path.isdir(link) and not os.path.islink(link):
        shutil.rmtree(link)  # an earlier suite's socket may be left in it
    if not os.path.lexists(link):
        os.symlink(target, link)
    os.lchown(link, uid, uid)
    try:
        # On a terminal: an attach without one is refused before the
        # session jail's start, where this refusal comes from.
        s = new_session()
        t = run_terminal(host, bob, s, terminals)
        assert wait_until(lambda: t.proc.poll() is not None, 15), t.output()
        assert t.proc.returncode == 1, t.output()
        assert "symlink" in t.output()
        assert not os.path.exists(os.path.join(target, "clihost.sock"))
    finally:
        os.unlink(link)


@pytest.mark.parametrize("which", [".cache", ".cache/tmux"])
def test_socket_dir_not_owned_by_the_tenant_is_refused(host, bob, terminals, which):
    """A real directory on the socket path that the tenant does not own (left
    by root or another user) is refused, not used or taken over."""
    home = host.home(bob)
    uid = pwd.getpwnam(bob).pw_uid
    cache = os.path.join(home, ".cache")
    tmux = os.path.join(cache, "tmux")
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(tmux)
    for d in (cache, tmux):
        os.chown(d, uid, uid)
        os.chmod(d, 0o700)
    foreign = os.path.join(home, which)
    os.chown(foreign, 0, 0)
    os.chmod(foreign, 0o755)  # readable: the refusal must come from the ownership check
    try:
        s = new_session()
        t = run_terminal(host, bob, s, terminals)
        assert wait_until(lambda: t.proc.poll() is not None, 15), t.output()
        assert t.proc.returncode == 1, t.output()
        out = t.output()
        assert out.startswith("clihost-jail: ") and "is not owned by the tenant" in out and out.count("\n") == 1, out
        assert os.stat(foreign).st_uid == 0 and os.listdir(tmux) == []
        assert host.audit_lines(f"session={s}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
