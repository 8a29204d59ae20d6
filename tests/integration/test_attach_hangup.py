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

from conftest import PROXY, proc_children, spawn, wait_until
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


def test_the_attach_jail_has_a_group_of_its_own_apart_from_its_waiting_parent(host, alice, terms):
    t = attach(host, alice, "grp", terms)
    assert shell_ready(t), t.output()
    client = clients(host, alice, "grp")
    assert len(client) == 1
    # The tmux client runs in the jail's pid namespace: find bwrap's side by
    # the helper's descendants instead. The helper's one child is the
    # watcher (the tenant, in a session of its own), bwrap is the watcher's.
    kids = proc_children(t.proc.pid)
    assert len(kids) == 1, kids
    watcher = kids[0]
    assert os.stat(f"/proc/{watcher}").st_uid == pwd.getpwnam(alice).pw_uid
    assert os.getsid(watcher) != os.getsid(t.proc.pid)
    jail = proc_children(watcher)
    assert len(jail) == 1, jail
    jail_pgid = os.getpgid(jail[0])
    assert jail_pgid not in (os.getpgid(t.proc.pid), os.getpgid(watcher))
    # ...and the terminal's foreground is the jail's group, so the keys the
    # tenant types reach tmux, not the waiting root process.
    fg = int(open(f"/proc/{jail[0]}/stat").read().rsplit(")", 1)[1].split()[5])  # tpgid
    assert fg == jail_pgid
