"""Three programs split by privilege (README, "Three programs"): the
setuid front execs the supervisor program (never a fork of its own image),
links neither libpam nor libsystemd, and runs no check or print of its own.
"""
import os
import pwd
import subprocess

from conftest import ADMIN_TARGET, PROXY, SUPERVISOR_TARGET, new_session, proc_exe, wait_until
from ownerutil import supervisor_pid
from ptyutil import PtyProcess


def sleepers(uid, arg):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.stat(f"/proc/{d}").st_uid != uid:
                continue
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and os.path.basename(argv[0]) == b"sleep" and argv[1] == arg.encode():
            out.append(int(d))
    return out


def maps_of(pid):
    return open(f"/proc/{pid}/maps").read()


def names_pam_or_systemd(path):
    out = subprocess.run(["strings", "-a", path], capture_output=True, text=True, check=True).stdout
    return sorted({w for w in ("libpam", "libsystemd", "pam_start", "sd_bus_open_system") if w in out})


def test_a_running_supervisor_is_the_supervisor_program(host, alice, terms):
    """The supervisor of a one-off jail runs clihost-jail-supervisor (its
    /proc/PID/exe), root's, not setuid, mode 0700; not the setuid front,
    which is the one-off's caller-side process."""
    t = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sleep", "4351"],
                   user=PROXY)
    terms.append(t)
    uid = pwd.getpwnam(alice).pw_uid
    assert wait_until(lambda: sleepers(uid, "4351"), 15), t.output()
    sup = supervisor_pid(alice)
    assert sup, t.output()
    assert proc_exe(sup) == SUPERVISOR_TARGET, proc_exe(sup)
    assert proc_exe(t.proc.pid) == host.bin  # the control: the front runs the setuid binary
    st = os.stat(SUPERVISOR_TARGET)
    assert st.st_uid == 0 and st.st_mode & 0o7777 == 0o700, oct(st.st_mode)
    t.hangup()
    assert t.wait(10) is not None


def test_the_setuid_front_neither_maps_nor_names_libpam_or_libsystemd(host, alice, terms):
    """strings of the setuid binary name neither library (nor their entry
    points), and a live front (waiting for its one-off jail, whose PAM
    session its supervisor holds) maps neither. Positive control: the same
    probes find libpam in the supervisor program and in the supervisor's maps."""
    assert names_pam_or_systemd(host.bin) == []
    assert "libpam" in names_pam_or_systemd(SUPERVISOR_TARGET)  # the control
    t = PtyProcess([host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sleep", "4352"],
                   user=PROXY)
    terms.append(t)
    uid = pwd.getpwnam(alice).pw_uid
    assert wait_until(lambda: sleepers(uid, "4352"), 15), t.output()
    sup = supervisor_pid(alice)
    front = maps_of(t.proc.pid)
    assert "libpam" not in front and "libsystemd" not in front, front
    assert "libpam" in maps_of(sup)  # the control: the PAM session's process maps it
    t.hangup()
    assert t.wait(10) is not None


def test_check_and_print_are_refused_to_the_proxy_and_run_as_root(host, alice):
    """The proxy keeps run, kill, stop, list; check and print are refused
    with the reason naming the admin program. Root's `clihost-jail check`
    runs the admin program (the same report), as does the program itself."""
    for verb in (["check", "--user", alice], ["print", "--user", alice, "--session", "x"]):
        r = host.run_as(PROXY, [host.bin, *verb])
        assert r.returncode == 1, r
        assert (f"clihost-jail: check and print are not run by the setuid helper: run them as root "
                f"({ADMIN_TARGET}); the proxy keeps run, kill, stop and list") in r.stderr, r.stderr
    r = host.run_root([host.bin, "print", "--user", alice, "--session", "x"])
    assert r.returncode == 0 and "# clihost-jail plan: " in r.stdout, r
    r = host.run_root([ADMIN_TARGET, "print", "--user", alice, "--session", "x"])
    assert r.returncode == 0 and "# clihost-jail plan: " in r.stdout, r
    r = host.run_root([ADMIN_TARGET, "list"])
    assert r.returncode == 2 and "clihost-jail-admin runs check and print only" in r.stderr, r
