"""Filesystem attacks: the tenant's tmux socket directory replaced by a
symlink (before and during launches), a symlinked home, a policy directory
writable by others, and a bwrap binary someone other than root could have
written.

Each must be refused (or harmless), leave nothing outside the tenant's home
changed (another tenant's directory, /root, a directory the tenant owns
outside its home), run no payload, and be audited."""
import grp
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from attackutil import Guard, assert_denied_in_audit, assert_refusal_line, guard, payloads, snapshot, spawn  # noqa
from ptyutil import attach_once
from conftest import BASE_CONFIG, PROXY, TENANT_GROUP, TEST_CONFIG, log_lines, new_session, sh, start_as


def uid_of(user):
    return pwd.getpwnam(user).pw_uid


def make_tenant_dir(path, user, mode=0o700):
    os.makedirs(path, exist_ok=True)
    os.chown(path, uid_of(user), pwd.getpwnam(user).pw_gid)
    os.chmod(path, mode)
    return path


def reset_cache(host, tenant):
    """$HOME/.cache and .cache/tmux back to real directories of the tenant
    (after a swap loop left them in any state)."""
    home = host.home(tenant)
    cache = os.path.join(home, ".cache")
    for p in [cache, os.path.join(cache, "tmux")]:
        real = p + ".ctj-real"
        if os.path.islink(p):
            os.unlink(p)
        if os.path.islink(real):
            os.unlink(real)
        elif os.path.isdir(real):
            if os.path.lexists(p):
                shutil.rmtree(real)
            else:
                os.rename(real, p)
        make_tenant_dir(p, tenant, 0o755 if p == cache else 0o700)


@pytest.fixture
def alice_cache(host, alice):
    """Fresh real socket directories, and no session jail left from an
    earlier test (the first launch starts one, through the directories as
    they are then; a swap may have taken a running one's socket away)."""
    host.stop_all()
    reset_cache(host, alice)
    yield os.path.join(host.home(alice), ".cache")
    host.stop_all()
    reset_cache(host, alice)


@pytest.fixture
def targets(host, alice, bob, guard):
    """Directories a redirected socket directory could point at."""
    bob_tmux = os.path.join(host.home(bob), ".cache", "tmux")
    reset_cache(host, bob)
    for n in os.listdir(bob_tmux):  # a stale socket of an earlier test's (ended) tmux server
        os.unlink(os.path.join(bob_tmux, n))
    # A directory alice owns outside her home (anyone may make one in /tmp):
    # the owner check alone would accept it.
    own = tempfile.mkdtemp(prefix="ctj-attack-own-", dir="/tmp")
    os.chown(own, uid_of(alice), pwd.getpwnam(alice).pw_gid)
    guard.before = snapshot(guard.paths)  # bob's socket dir now exists
    t = {"bob": bob_tmux, "bob-cache": os.path.dirname(bob_tmux), "root": guard.root_canary,
         "world": guard.ww_canary, "own": own}
    yield t
    shutil.rmtree(own, ignore_errors=True)


def default_run(host, tenant, session, env=None):
    """An attach, on a terminal (refused before any start without one)."""
    return attach_once([host.bin, "run", "--user", tenant, "--session", session], env=env)


@pytest.mark.parametrize("level", [".cache", ".cache/tmux"])
@pytest.mark.parametrize("target", ["bob", "root", "world", "own"])
def test_socket_dir_symlinked_before_launch_is_refused(host, alice, guard, alice_cache, targets, level, target):
    dest = targets[target]
    before = snapshot([dest])
    link = os.path.join(host.home(alice), level)
    shutil.rmtree(link)
    os.symlink(dest, link)
    os.lchown(link, uid_of(alice), -1)
    s = new_session()
    r = default_run(host, alice, s)
    assert_refusal_line(r, codes=(1,))
    assert "symlink" in r.stderr, r
    assert snapshot([dest]) == before
    assert not os.path.exists(os.path.join(dest, "clihost.sock"))
    assert not os.path.exists(os.path.join(dest, "tmux"))
    assert_denied_in_audit(host, r, session=s)
    guard.check()


SWAPPER = r"""
import os, shutil, sys, time
path, target, stop = sys.argv[1], sys.argv[2], sys.argv[3]
real = path + ".ctj-real"
end = time.time() + 20
linked = 0
while time.time() < end and not os.path.exists(stop):
    try:
        os.rename(path, real)
    except OSError:
        pass
    try:
        os.symlink(target, path)
        linked += 1
    except OSError:
        pass
    time.sleep(0.0003)
    try:
        os.unlink(path)
    except OSError:
        pass
    try:
        os.rename(real, path)
    except OSError:
        # A launch made the directory anew in the gap between the rename and
        # the symlink: that one is the real directory now (the session jail's
        # tmux may serve from it), the old one goes. Without this the loop
        # wedged there (every rename failed) and swapped nothing more.
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(real, ignore_errors=True)
    time.sleep(0.0003)
print(linked)
"""


@pytest.mark.parametrize("level,target", [(".cache/tmux", "own"), (".cache", "own"), (".cache/tmux", "bob"),
                                          (".cache/tmux", "root"), (".cache", "bob-cache")])
def test_socket_dir_swapped_during_launches(host, alice, guard, alice_cache, targets, level, target):
    """alice swaps her socket directory (or $HOME/.cache) with a symlink, to
    a directory of her own outside her home, bob's socket directory or
    .cache, or root's (a root-only directory under /root), in a tight loop
    while the proxy launches her default tmux repeatedly (~3 s). Some
    launches must really meet the swapped state (or the test proves
    nothing), and none may leave anything in the target."""
    dest = targets[target]
    before = snapshot([dest])
    # Where the socket would land through the link (.cache/tmux -> dest:
    # dest/clihost.sock; .cache -> dest: dest/tmux/clihost.sock).
    socks = [os.path.join(dest, "clihost.sock"), os.path.join(dest, "tmux", "clihost.sock")]
    path = os.path.join(host.home(alice), level)
    stop = os.path.join(tempfile.mkdtemp(prefix="ctj-swap-"), "stop")
    os.chmod(os.path.dirname(stop), 0o755)
    swapper = start_as(alice, ["/usr/bin/python3", "-c", SWAPPER, path, dest, stop], stdout=subprocess.PIPE, text=True)
    sessions, outcomes = [], {"refused": 0, "vanished": 0, "tmux": 0, "tmux-no-socket": 0, "other": 0}
    others = []

    def met():
        return outcomes["refused"] + outcomes["vanished"] + outcomes["tmux-no-socket"]

    # About 3 s of launches; more while none has met the swapped state.
    started = time.time()
    try:
        # At least 5 launches (one that attached takes seconds: its screen,
        # its hang-up, the stop), up to 40 s.
        while (time.time() < started + 3 or not met() or len(sessions) < 5) and time.time() < started + 40:
            s = new_session()
            sessions.append(s)
            r = default_run(host, alice, s)
            if "symlink" in r.stderr or "not a directory" in r.stderr or "not owned" in r.stderr:
                outcomes["refused"] += 1  # the helper saw the symlink
                assert r.returncode == 1, r
            elif r.returncode == 128 + signal.SIGHUP:
                # A real directory: the session jail started (its tmux made
                # its socket), and this attach drew its screen and was hung
                # up. That jail is stopped, so that the next launch
                # prepares the directory again, in the swapper's loop,
                # where the attack is.
                outcomes["tmux"] += 1
                assert host.run_root([host.bin, "stop", "--user", alice]).returncode == 0
            elif "cannot create" in r.stderr:
                # The directory the helper had just made (in the gap between the
                # swapper's rename and symlink) was replaced under it.
                outcomes["vanished"] += 1
                assert r.returncode == 1, r
            elif any(m in r.stderr for m in ("error creating", "error connecting", "no server running")):
                # Swapped after the check: tmux, inside the jail (the session
                # jail's server creating its socket, or an attach jail's client
                # connecting to it), followed the link into the jail's own view
                # (where the target does not exist) and gave up.
                outcomes["tmux-no-socket"] += 1
                # The server's failure ends the session jail's start (exit 3),
                # a client's its connection (5: the tenant's client failed).
                assert r.returncode == (3 if "the session jail ended during start-up" in r.stderr else 5), r
            else:
                outcomes["other"] += 1
                others.append((r.returncode, r.stderr.strip()))
                assert r.returncode in (1, 3, 4), r
            assert not any(os.path.lexists(p) for p in socks), (r, outcomes)
    finally:
        with open(stop, "w"):
            pass
        out = swapper.communicate(timeout=30)[0]
        shutil.rmtree(os.path.dirname(stop))
    linked = int(out)
    # The swapper really put its link in place, again and again.
    assert linked > 100 and len(sessions) >= 5, (linked, outcomes)
    # At least one launch met the link (or the gap of the swap), not only
    # the real directory.
    assert met() >= 1, outcomes
    assert snapshot([dest]) == before, outcomes
    assert not any(os.path.lexists(p) for p in socks), outcomes
    # Every launch left an audit trail under its session.
    time.sleep(0.3)
    log = "".join(log_lines(lambda l: "clihost-jail[" in l, want=0, timeout=0))
    missing = [s for s in sessions if f"session={s} " not in log]
    assert not missing, (missing, outcomes)
    guard.check()
    print(f"{len(sessions)} launches against {linked} links: {outcomes} {others}", file=sys.stderr)


@pytest.fixture
def mallory(host):
    """A tenant whose home is a symlink (made by root's mistake or a race)."""
    name = "ctj-mallory"
    home = f"/home/{name}"
    sh("userdel", name, check=False)
    if os.path.islink(home):
        os.unlink(home)
    sh("useradd", "-M", "-d", home, "-s", "/bin/bash", "-G", TENANT_GROUP, name)
    yield name
    if os.path.islink(home):
        os.unlink(home)
    sh("userdel", name, check=False)  # never -r: the home is someone else's


@pytest.mark.parametrize("target", ["alice", "root"])
def test_symlinked_home_is_refused(host, alice, mallory, payloads, target):
    g = Guard(host, payloads, mallory)  # alice's home is "outside" here
    dest = host.home(alice) if target == "alice" else g.root_canary
    os.symlink(dest, host.home(mallory))
    try:
        s = new_session()
        marker = os.path.join(dest, f"ctj-ran-{s}")
        r = spawn(host.jail(mallory, f"touch {marker}; echo RAN", session=s))
        assert_refusal_line(r, codes=(1,))
        assert "symlink" in r.stderr and "RAN" not in r.stdout
        assert not os.path.exists(marker)
        assert_denied_in_audit(host, r, session=s)
        g.check()
    finally:
        g.cleanup()


@pytest.fixture
def restore_policy(host):
    conf_dir = os.path.dirname(TEST_CONFIG)
    yield conf_dir
    if os.path.islink(conf_dir):
        os.unlink(conf_dir)
    if os.path.isdir(conf_dir + ".ctj-real"):
        os.rename(conf_dir + ".ctj-real", conf_dir)
    os.chown(conf_dir, 0, 0)
    os.chmod(conf_dir, 0o755)
    with open(TEST_CONFIG, "w") as f:
        f.write(BASE_CONFIG)
    os.chown(TEST_CONFIG, 0, 0)
    os.chmod(TEST_CONFIG, 0o644)


def test_policy_writable_by_others_is_refused(host, alice, payloads, restore_policy):
    """The compiled-in policy path, as the setuid caller sees it: if anyone
    but root could have written the file or a directory above it, no launch."""
    conf_dir = restore_policy
    tenants_gid = grp.getgrnam(TENANT_GROUP).gr_gid

    def dir_mode(m):
        os.chmod(conf_dir, m)

    def dir_group_tenants():
        os.chown(conf_dir, 0, tenants_gid)
        os.chmod(conf_dir, 0o775)

    def dir_owner_alice():
        os.chown(conf_dir, uid_of(alice), -1)

    def file_owner_alice():
        os.chown(TEST_CONFIG, uid_of(alice), -1)

    def file_mode(m):
        os.chmod(TEST_CONFIG, m)

    def dir_symlink():
        os.rename(conf_dir, conf_dir + ".ctj-real")
        os.symlink(conf_dir + ".ctj-real", conf_dir)

    attacks = [lambda: dir_mode(0o777), lambda: dir_mode(0o757), dir_group_tenants, dir_owner_alice,
               file_owner_alice, lambda: file_mode(0o666), lambda: file_mode(0o664), dir_symlink]
    for attack in attacks:
        g = Guard(host, payloads, alice)
        g.paths.remove(TEST_CONFIG)  # we change its metadata ourselves
        g.before = snapshot(g.paths)
        attack()
        s = new_session()
        marker = os.path.join(host.home(alice), f"ctj-ran-{s}")
        try:
            r = spawn(host.jail(alice, f"touch {marker}; echo RAN", session=s))
            assert_refusal_line(r, codes=(3,))
            assert "config" in r.stderr and "RAN" not in r.stdout, r
            assert not os.path.exists(marker)
            assert_denied_in_audit(host, r, session=s)
            g.check()
        finally:
            g.cleanup()
            if os.path.islink(conf_dir):
                os.unlink(conf_dir)
                os.rename(conf_dir + ".ctj-real", conf_dir)
            os.chown(conf_dir, 0, 0)
            os.chmod(conf_dir, 0o755)
            os.chown(TEST_CONFIG, 0, 0)
            os.chmod(TEST_CONFIG, 0o644)
    # And the untouched policy works again.
    r = spawn(host.jail(alice, "echo OK"))
    assert r.returncode == 0 and r.stdout.strip() == "OK", r


FAKE_BWRAP = """#!/bin/sh
: > "{markers}/fake-bwrap.pid$$.uid$(/usr/bin/id -u)"
exit 0
"""


def test_untrusted_bwrap_is_refused(host, alice, payloads, restore_policy):
    """bwrap is exec'd on the tenant's behalf: a bwrap that anyone but root
    could have written (file or directory) is never run."""
    tenants_gid = grp.getgrnam(TENANT_GROUP).gr_gid
    n = [0]

    def fake(file_mode=0o755, dir_mode=0o755, owner=0, group=0, dir_owner=0, dir_group=0, symlink=False,
             grandparent_mode=None):
        n[0] += 1
        d = os.path.join(host.prefix, f"attack-bwrap-{n[0]}")
        os.mkdir(d)
        if grandparent_mode is not None:  # prefix/attack-bwrap-N (that mode) / y / bwrap
            os.chown(d, 0, 0)
            os.chmod(d, grandparent_mode)
            d = os.path.join(d, "y")
            os.mkdir(d)
        path = os.path.join(d, "bwrap")
        with open(path, "w") as f:
            f.write(FAKE_BWRAP.format(markers=payloads.markers))
        os.chown(path, owner, group)
        os.chmod(path, file_mode)
        os.chown(d, dir_owner, dir_group)
        os.chmod(d, dir_mode)
        if symlink:
            os.rename(path, path + ".real")
            os.symlink(path + ".real", path)
        return path

    def launch(bwrap):
        with open(TEST_CONFIG, "w") as f:
            # network = host: the fake ignores bwrap's --info-fd, through
            # which an isolated jail's network is attached.
            f.write(BASE_CONFIG + f"bwrap = {bwrap}\nnetwork = host\n")
        s = new_session()
        return spawn(host.jail(alice, "echo RAN", session=s)), s

    alice_uid = uid_of(alice)
    # Control: a root-owned, root-only-writable fake is trusted, and runs.
    payloads.clear()
    for trusted in [fake(), fake(grandparent_mode=0o755)]:
        payloads.clear()
        r, s = launch(trusted)
        assert r.returncode == 0 and any(m.startswith("fake-bwrap.") for m in payloads.found()), \
            (trusted, r, payloads.found())
    untrusted = {
        "owned by the tenant": fake(owner=alice_uid),
        "owned by the caller": fake(owner=uid_of(PROXY)),
        "group-writable, tenants' group": fake(file_mode=0o775, group=tenants_gid),
        "world-writable": fake(file_mode=0o757),
        "in a directory the tenant owns": fake(dir_owner=alice_uid),
        "in a group-writable directory": fake(dir_mode=0o775, dir_group=tenants_gid),
        "in a world-writable sticky directory": fake(dir_mode=0o1777),
        # Anyone could rename y away and put their own y/bwrap in its place:
        # every directory above the binary counts, not only its parent.
        "under a world-writable grandparent": fake(grandparent_mode=0o777),
        "a symlink to a trusted fake": fake(symlink=True),
        "not executable": fake(file_mode=0o644),
    }
    for why, path in untrusted.items():
        g = Guard(host, payloads, alice)
        g.paths.remove(TEST_CONFIG)
        g.before = snapshot(g.paths)
        try:
            r, s = launch(path)
            assert_refusal_line(r, codes=(3,))
            assert "bwrap" in r.stderr and "RAN" not in r.stdout, (why, r)
            if why == "under a world-writable grandparent":  # refused for that directory
                assert f"{os.path.dirname(os.path.dirname(path))} is not root-owned" in r.stderr, r
            assert_denied_in_audit(host, r, session=s)
            g.check()
        finally:
            g.cleanup()
