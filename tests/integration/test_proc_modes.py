"""/proc in the jail: private by default; the hidepid fallback only where a
fresh procfs cannot be mounted and the host /proc hides other users; refusal
otherwise; inherit only with a warning. A host where a fresh procfs cannot be
mounted is made for real: a private mount namespace in which a file of /proc
is covered (as Docker masks /proc/keys), which the kernel treats as a
"not fully visible" procfs."""
import os

from conftest import new_session

MASK = "mount --bind /dev/null /proc/keys"
HIDEPID = "mount -t proc -o hidepid=invisible proc /proc"


def in_mount_ns(host, setup, argv, config):
    quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
    return host.run_root(["unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
                          f"{setup} && exec {quoted}"], config=config)


def pid_list(stdout):
    return [int(p) for p in stdout.split()]


def test_private_proc_is_a_fresh_procfs(host, alice):
    r = host.run_root(host.jail(alice, "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo; "
                                       "grep ' /proc ' /proc/self/mountinfo"))
    assert r.returncode == 0, r.stderr
    pids = pid_list(r.stdout.splitlines()[0])
    assert 1 in pids and max(pids) < 20, pids
    # a read-write procfs of its own, not a bind of the host's (which would be ro)
    assert " - proc proc rw" in r.stdout.splitlines()[1]


def test_private_mode_refuses_where_no_fresh_procfs_can_be_mounted(host, alice):
    s = new_session()
    conf = host.config_variant({"jail": "proc = private"})
    r = in_mount_ns(host, f"{HIDEPID} && {MASK}", host.jail(alice, "echo RAN", session=s), conf)
    assert r.returncode == 3, r.stderr
    assert "RAN" not in r.stdout and "private /proc" in r.stderr
    assert host.audit_lines(f"session={s}")


def test_private_or_hidepid_falls_back_to_a_hidepid_host_proc(host, alice):
    conf = host.config_variant({"jail": "proc = private-or-hidepid"})
    r = in_mount_ns(host, f"{HIDEPID} && {MASK}",
                    host.jail(alice, "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '"), conf)
    assert r.returncode == 0, r.stderr
    pids = pid_list(r.stdout)
    # Host pids (no pid 1: init belongs to root and is hidden), only a handful.
    assert 1 not in pids and 0 < len(pids) <= 8, pids


def test_private_or_hidepid_refuses_without_hidepid(host, alice):
    s = new_session()
    conf = host.config_variant({"jail": "proc = private-or-hidepid"})
    r = in_mount_ns(host, MASK, host.jail(alice, "echo RAN", session=s), conf)
    assert r.returncode == 3
    assert "RAN" not in r.stdout and "hidepid" in r.stderr


def test_inherit_binds_host_proc_and_warns_each_launch(host, alice):
    s = new_session()
    conf = host.config_variant({"jail": "proc = inherit"})
    r = host.run_root(host.jail(alice, "ls /proc | grep -cE '^[0-9]+$'", session=s), config=conf)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 10  # the host's processes are visible: that is the warning's point
    # One line per launch: the warning is in the line that allowed it.
    warned = lambda l: "decision=allow" in l and "; warning: proc = inherit" in l
    lines = host.audit_lines(f"session={s}", until=warned)
    assert any(warned(l) for l in lines), lines
