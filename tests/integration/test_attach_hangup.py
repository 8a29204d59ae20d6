"""A closed browser tab ends its attach jail, also when ttyd runs as the
proxy user (not root).

ttyd ends a connection with SIGHUP to its command's process group
(`uv_kill(-pid, SIGHUP)`) and keeps the pty open until the command exits.
A non-root ttyd may signal the setuid helper (its real uid is the proxy's)
but never the tenant's bwrap: so the helper stays as the attach jail's
waiting parent and relays the signal. Each connection here is a real pty,
the helper its session leader, driven the way ttyd drives it.
"""
import os
import pwd
import signal
import sys

import pytest

from conftest import RUNTIME_DIR, PROXY, STUB_TARGET, prepared_attach_jails, proc_children, proc_exe, spawn, \
    wait_until
from ptyutil import attach, shell_ready


def clients(host, tenant, session):
    r = host.tmux(tenant, "list-clients", "-t", f"={session}", "-F", "#{client_pid}")
    return [l for l in r.stdout.split() if l] if r.returncode == 0 else []


def sighup_group_as_proxy(pid):
    """ttyd's pty_kill, as the proxy user: SIGHUP to the command's group."""
    code = f"import os, signal\ntry:\n    os.kill(-{pid}, signal.SIGHUP)\nexcept PermissionError:\n    print('EPERM')\n"
    return spawn([sys.executable, "-c", code], user=PROXY)


def test_sighup_from_a_non_root_ttyd_ends_the_attach_jail_and_keeps_the_session(host, alice, terms):
    t = attach(host, alice, "tab", terms)
    assert shell_ready(t), t.output()
    # Positive control: the probe sees this connection's tmux client.
    assert len(clients(host, alice, "tab")) == 1
    pgid = os.getpgid(t.proc.pid)
    assert pgid == t.proc.pid  # the helper leads the group ttyd signals
    r = sighup_group_as_proxy(t.proc.pid)
    # The proxy may signal its helper: no EPERM for the whole group.
    assert r.returncode == 0 and "EPERM" not in r.stdout, r
    # The pty master stays open (ttyd closes it only once the command exits).
    assert wait_until(lambda: t.proc.poll() is not None, 10), "the attach jail outlived its connection"
    assert t.proc.returncode == 128 + signal.SIGHUP, t.proc.returncode
    assert wait_until(lambda: clients(host, alice, "tab") == [], 5), clients(host, alice, "tab")
    # The tenant's work lives on in its session jail.
    assert host.has_tmux_session(alice, "tab")


def test_the_attach_jail_is_the_supervisors_in_a_session_of_its_own(host, alice, terms):
    """The front (what ttyd runs) has no jail children: the attach jail is
    its tenant's supervisor's, under a watcher (the tenant) in a session of
    its own, and the caller's terminal is its stdio, never its controlling
    terminal. Control: the front's own controlling terminal is that pty."""
    t = attach(host, alice, "grp", terms)
    assert shell_ready(t), t.output()
    client = clients(host, alice, "grp")
    assert len(client) == 1
    assert proc_children(t.proc.pid) == []
    rec = open(os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(alice).pw_uid}.state")).read().split()
    sup = int(rec[3])
    uid = pwd.getpwnam(alice).pw_uid
    # The next attach's jail starts 50 ms after this one: until its stub
    # runs, its bwrap would look like a connection's.
    assert wait_until(lambda: prepared_attach_jails(uid), 10), host.processes_of(alice)
    watchers = [w for w in proc_children(sup) if os.stat(f"/proc/{w}").st_uid == uid]
    def waiting(pid):
        """A jail prepared for the next connection: its stub still waits."""
        def exe(k):
            try:
                return proc_exe(k)
            except OSError:
                return None
        return any(exe(k) == STUB_TARGET or waiting(k) for k in proc_children(pid))
    jails = []
    for w in watchers:
        for b in proc_children(w):
            if os.getsid(b) == os.getsid(w) and os.getsid(w) == w and not waiting(b):  # a connection watcher's
                jails.append((w, b))
    assert len(jails) == 1, (watchers, jails)
    watcher, jail = jails[0]
    assert os.getsid(watcher) not in (os.getsid(t.proc.pid), os.getsid(sup))
    assert os.getpgid(jail) not in (os.getpgid(t.proc.pid), os.getpgid(watcher))

    def tty_nr(pid):
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[4])
    assert tty_nr(t.proc.pid) != 0  # control
    assert tty_nr(jail) == 0 and tty_nr(watcher) == 0
