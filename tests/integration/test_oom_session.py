"""The session outlives its memory exhaustion (SECURITY.md, "The session
outlives its memory exhaustion"): whatever fills memory_max, the OOM killer
takes the tenant's work (every process the tmux server forks, and one-offs,
run at oom_score_adj 1000), never the session jail's tmux server, bwrap or an
attach jail's client (0) while any work is left; the supervisor says so on
each of the tenant's terminals in one line of its own.

Real tenants, real cgroups, real OOM kills, terminals on real ptys driven as
ttyd drives them. The writer here uses large blocks, so that it is the
largest of the tenant's processes: for a tmpfs the killer counts no page of
the file (SECURITY.md says what happens then), only the writer's own memory.
"""
import os
import pwd
import signal
import time

import pytest

from conftest import CGROUP_ROOT, log_lines, new_session, pids, wait_until
from ptyutil import PtyProcess, shell_ready

V1 = not os.path.exists(CGROUP_ROOT + "/cgroup.controllers")
NOTICE = "clihost-jail: the OOM killer ended "
LIMIT = "memory_max 128 MiB reached"


def need_memory_controller():
    d = os.path.join(CGROUP_ROOT, "memory") if V1 else CGROUP_ROOT
    if not os.path.exists(os.path.join(d, "cgroup.procs")):
        pytest.skip("this host has no memory cgroup controller")


def connect(host, tenant, terms, conf, session):
    t = PtyProcess([host.bin, "run", "--user", tenant, "--session", session], user=None,
                   env={"PATH": "/usr/bin:/bin", "TERM": "xterm", "CLIHOST_JAIL_CONFIG": conf})
    terms.append(t)
    return t


def tmux_server(tenant):
    """The pid of the tenant's tmux server (its comm is "tmux: server")."""
    uid = pwd.getpwnam(tenant).pw_uid
    found = []
    for pid in pids(uid=uid, live=True):
        try:
            if open(f"/proc/{pid}/comm").read().strip() == "tmux: server":
                found.append(pid)
        except OSError:
            continue
    assert len(found) == 1, found
    return found[0]


def oom_score_adj(pid):
    return int(open(f"/proc/{pid}/oom_score_adj").read())


def session_survives(host, alice, terms, conf, fill):
    """Two terminals of alice's (two tmux sessions on one server); `fill`
    typed in the first: the server is the same process after, the second
    terminal's shell still answers, and the first shows the notice."""
    t = connect(host, alice, terms, conf, new_session())
    assert shell_ready(t), t.output()
    other = connect(host, alice, terms, conf, new_session())
    assert shell_ready(other), other.output()
    server = tmux_server(alice)
    since = time.time()
    t.write(fill + "\r")
    assert t.wait_for(NOTICE, 60), t.output()
    assert LIMIT in t.output(), t.output()
    # The notice comes from the supervisor's count, and it was a kill.
    assert log_lines(lambda l: "OOM-killed in the jails, told on the tenant's terminals" in l, timeout=10)
    assert os.path.exists(f"/proc/{server}") and tmux_server(alice) == server
    assert shell_ready(other, "AFTER"), other.output()
    assert t.proc.poll() is None and other.proc.poll() is None
    return t, other, server, since


def test_a_nested_sandboxs_tmpfs_filled_past_memory_max_leaves_the_session(host, alice, terms):
    need_memory_controller()
    conf = host.config_variant(replace={"limits": {"memory_max": "128M"},
                                        "jail": {"nested_sandbox": "true", "network": "host"}})
    # The command: an agent's sandbox with an unsized tmpfs.
    fill = ("bwrap --ro-bind / / --dev /dev --tmpfs /tmp -- dd if=/dev/zero of=/tmp/big bs=16M count=64;"
            " echo FILLED=$?")
    t, other, server, _ = session_survives(host, alice, terms, conf, fill)
    # The tmux server at 0, the panes' shells at 1000 (their work with them).
    assert oom_score_adj(server) == 0
    other.write("echo ADJ_$(cat /proc/$$/oom_score_adj)_\r")
    assert other.wait_for("ADJ_1000_", 10), other.output()
    # The writer was the one killed (its bwrap's status), and its tmpfs
    # went with its sandbox: the session works on in the same terminal.
    assert t.wait_for("FILLED=137", 10), t.output()
    assert shell_ready(t, "SAME"), t.output()


def test_a_dev_shm_fill_past_memory_max_leaves_the_session(host, alice, terms):
    need_memory_controller()
    # /dev/shm bigger than memory_max: the limit, not the tmpfs, stops it.
    conf = host.config_variant(replace={"limits": {"memory_max": "128M"},
                                        "jail": {"tmpfs_size": "1G", "network": "host"}})
    fill = "dd if=/dev/zero of=/dev/shm/big bs=16M count=64 2>/dev/null; echo FILLED=$?"
    t, other, server, _ = session_survives(host, alice, terms, conf, fill)
    # The file stays (a tmpfs outlives its writer): removed, the session is whole.
    other.write("rm -f /dev/shm/big\r")
    assert shell_ready(other, "CLEAN"), other.output()
    assert shell_ready(t, "SAME"), t.output()
    assert tmux_server(alice) == server


def test_the_probe_sees_a_dead_tmux_server(host, alice, terms):
    """Positive control: the same probes, the server killed as the OOM
    killer would (SIGKILL): another terminal no longer answers, and the
    server's pid is gone."""
    conf = host.config_variant(replace={"jail": {"network": "host"}})
    t = connect(host, alice, terms, conf, new_session())
    assert shell_ready(t), t.output()
    other = connect(host, alice, terms, conf, new_session())
    assert shell_ready(other), other.output()
    server = tmux_server(alice)
    os.kill(server, signal.SIGKILL)
    assert wait_until(lambda: not os.path.exists(f"/proc/{server}"), 10)
    assert not shell_ready(other, "AFTER", timeout=5), other.output()
    assert NOTICE not in t.output()
