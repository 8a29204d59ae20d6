"""Attacks by the tenant from inside the jail (allow_caller_command = true in
the test policy, so `host.jail(tenant, script)` runs /bin/sh -c script):
other tenants' and host processes, setuid binaries, nested user namespaces,
terminal input injection into the caller, and writes to the system."""
import errno
import os
import pwd
import shlex
import shutil
import tempfile
import time
import uuid

import pytest

from attackutil import INSIDE, Guard, _cc, assert_inside, guard, payloads, pids_named, snapshot, spawn, start_jail, \
    wait_until  # noqa: F401 (fixtures)
from conftest import PROXY, exited, new_session, proc_status, tiocsti_for_all
from ptyutil import PtyProcess


def jail_run(host, tenant, script, **kw):
    s = new_session()
    r = spawn(host.jail(tenant, INSIDE + "\n" + script, session=s), **kw)
    assert r.returncode == 0, r
    assert_inside(host, tenant, r.stdout)
    lines = host.audit_lines(f"session={s}", want=2, until=exited)
    assert any("decision=allow" in l for l in lines) and any(exited(l) for l in lines), lines
    return r


def test_other_tenants_processes_are_invisible(host, alice, bob, payloads):
    bs = new_session()
    bj = start_jail(host, bob, "sleep 1000", bs)
    try:
        assert wait_until(lambda: pids_named(host, bob, "sleep"), 10)
        # bob is the target: his home is guarded too. His jail runs `sleep`
        # (no tmux, so no live socket) and is fully up before the snapshot,
        # so nothing in his home changes legitimately while alice probes.
        g = Guard(host, payloads, alice, others=[bob])
        assert host.home(bob) in g.paths and len(g.before) > 1, g.paths
        target = pids_named(host, bob, "sleep")[0]
        bwrap_init = int(proc_status(target, "PPid")[0])
        probes = []
        for pid in (target, bwrap_init, bj.pid):  # bob's command, his jail's init, his root helper
            probes += [f"cat /proc/{pid}/environ >/dev/null 2>&1 && echo LEAK environ {pid}",
                       f"ls /proc/{pid}/root/ >/dev/null 2>&1 && echo LEAK root {pid}",
                       f"readlink /proc/{pid}/cwd >/dev/null 2>&1 && echo LEAK cwd {pid}",
                       f"kill -0 {pid} 2>/dev/null && echo LEAK signal {pid}"]
        r = jail_run(host, alice, "\n".join(probes) + """
grep -h '^Uid:' /proc/[0-9]*/status | sort -u | sed 's/^/UIDS /'
grep -l 'sle[e]p' /proc/[0-9]*/cmdline 2>/dev/null | sed 's/^/SLEEPERS /'
true""")
        assert "LEAK" not in r.stdout, r.stdout
        uid = pwd.getpwnam(alice).pw_uid
        uids = {int(x) for l in r.stdout.splitlines() if l.startswith("UIDS ") for x in l.split()[2:]}
        assert uids == {uid}, uids
        assert "SLEEPERS" not in r.stdout, r.stdout  # bob's sleep is not in alice's /proc
        assert pids_named(host, bob, "sleep") == [target]  # and it is untouched
        g.check()
        g.cleanup()
    finally:
        bj.kill()
        bj.wait()
        host.wait_gone(bob)


def test_host_processes_are_invisible(host, alice, guard):
    me = os.getpid()
    init_cmdline = open("/proc/1/cmdline").read().split("\0")[0]
    r = jail_run(host, alice, f"""
ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' ' | sed 's/^/PIDS /'; echo
echo "INIT $(tr '\\0\\n' '  ' < /proc/1/cmdline | cut -c1-100)"
kill -0 {me} 2>/dev/null && echo LEAK signal
ls /proc/{me}/ >/dev/null 2>&1 && echo LEAK proc
cat /proc/{me}/environ >/dev/null 2>&1 && echo LEAK environ
true""")
    out = {l.split(" ", 1)[0]: l.split(" ", 1)[1] for l in r.stdout.splitlines() if " " in l}
    pids = [int(p) for p in out["PIDS"].split()]
    assert 1 in pids and len(pids) <= 10 and max(pids) < 50, pids
    # pid 1 is the jail's own init (bwrap), not the host's
    assert out["INIT"].startswith("/usr/bin/bwrap") and init_cmdline != "/usr/bin/bwrap", out["INIT"]
    assert "LEAK" not in r.stdout, r.stdout
    guard.check()


SETUID_TRIES = [
    "su -c 'id -u' root",
    "sudo -n id -u",
    "passwd -d ctj-alice",
    "chsh -s /bin/sh",
    "chfn -f x",
    "gpasswd -a ctj-alice sudo",
    "newgrp root",
    "mount -t tmpfs none /tmp",
    "umount /home",
]


# Installed setuid-root in a directory the jail binds read-only from the host.
SUID_C = r"""
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    printf("SUID ruid=%d euid=%d\n", (int)getuid(), (int)geteuid());
    int rc = setuid(0);
    int err = rc ? errno : 0;
    printf("SETUID0 rc=%d errno=%d euid=%d\n", rc, err, (int)geteuid());
    return 0;
}
"""


def suid_report(out):
    """{"ruid", "euid", "rc", "errno", "euid_after"} from SUID_C's output."""
    f = {}
    for l in out.splitlines():
        if l.startswith("SUID "):
            kv = dict(x.split("=") for x in l.split()[1:])
            f["ruid"], f["euid"] = int(kv["ruid"]), int(kv["euid"])
        elif l.startswith("SETUID0 "):
            kv = dict(x.split("=") for x in l.split()[1:])
            f["rc"], f["errno"], f["euid_after"] = int(kv["rc"]), int(kv["errno"]), int(kv["euid"])
    return f


def test_setuid_binaries_grant_nothing(host, alice, guard):
    """A setuid-root program the jail can see (bound read-only from the host's
    /opt) runs with the tenant's euid inside the jail and cannot setuid(0),
    while the same file outside, run by the same tenant, does get euid 0."""
    uid = pwd.getpwnam(alice).pw_uid
    suid_dir = f"/opt/ctj-attack-suid-{uuid.uuid4().hex[:8]}"
    assert os.path.isdir("/opt"), "/opt (a default ro_bind) is missing on this host"
    os.mkdir(suid_dir, 0o755)
    try:
        os.chmod(suid_dir, 0o755)
        prog = _cc(SUID_C, os.path.join(suid_dir, "ctj-whoami"))
        os.unlink(prog + ".c")
        os.chown(prog, 0, 0)
        os.chmod(prog, 0o4755)
        assert os.stat(prog).st_mode & 0o7777 == 0o4755 and os.stat(prog).st_uid == 0
        if os.statvfs(suid_dir).f_flag & os.ST_NOSUID:
            pytest.fail(f"{suid_dir} is on a nosuid mount on this host: the setuid test needs a ro-bound "
                        "directory where setuid works outside the jail (cannot prove anything here)")
        # Positive control: the setuid bit works for this tenant on the host.
        out = host.run_as(alice, [prog])
        ctl = suid_report(out.stdout)
        assert out.returncode == 0 and ctl == {"ruid": uid, "euid": 0, "rc": 0, "errno": 0, "euid_after": 0}, \
            (out, ctl)

        watched = ["/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", suid_dir]
        before = snapshot(watched)
        script = "\n".join(f"{t} </dev/null >/dev/null 2>&1; echo \"RC $? {t.split()[0]}\"" for t in SETUID_TRIES)
        r = jail_run(host, alice, script + f"""
{prog} 2>&1
id -u | sed 's/^/ID /'
grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status""")
        rcs = {l.split()[2]: int(l.split()[1]) for l in r.stdout.splitlines() if l.startswith("RC ")}
        assert len(rcs) == len(SETUID_TRIES), rcs
        assert all(rc != 0 for rc in rcs.values()), rcs
        # Decisive: the very program that got euid 0 outside runs as the tenant inside.
        jailed = suid_report(r.stdout)
        assert jailed.get("ruid") == uid and jailed.get("euid") == uid, (jailed, r.stdout)
        # setuid(0) fails: EINVAL today (uid 0 has no mapping in the jail's user
        # namespace); EPERM if it ever had one (no capability either way).
        assert jailed.get("rc") == -1 and jailed.get("errno") in (errno.EINVAL, errno.EPERM), (jailed, r.stdout)
        assert jailed.get("euid_after") == uid, (jailed, r.stdout)
        assert f"ID {uid}" in r.stdout
        fields = dict(l.split(":\t") for l in r.stdout.splitlines() if ":\t" in l)
        assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0 and fields["NoNewPrivs"] == "1"
        assert snapshot(watched) == before
        guard.check()
    finally:
        shutil.rmtree(suid_dir, ignore_errors=True)
    assert not os.path.exists(suid_dir)


def test_nested_user_namespace_gives_no_access_outside(host, alice, guard):
    """Nested user namespaces are refused inside the jail (bwrap
    --disable-userns): `unshare -r` fails, and nothing it would have tried
    (shadow, /etc, /usr, /root, another home, sysctls) changed."""
    mark = f"ctj-attack-nested-{uuid.uuid4().hex[:8]}"
    # Control: on the host, the same tenant can create a user namespace with
    # the same tool, so a failure inside is the jail's doing.
    out = host.run_as(alice, ["unshare", "-U", "-r", "id", "-u"])
    assert out.returncode == 0 and out.stdout.strip() == "0", out
    r = jail_run(host, alice, f"""
unshare -r sh -c '
  echo "NESTED uid=$(id -u)"
  cat /etc/shadow >/dev/null 2>&1 && echo LEAK shadow
  touch /etc/{mark} 2>/dev/null && echo LEAK etc
  touch /usr/{mark} 2>/dev/null && echo LEAK usr
  ls /root >/dev/null 2>&1 && echo LEAK root
  ls {host.home("ctj-bob")} >/dev/null 2>&1 && echo LEAK bob
  chown 0 /etc/hostname 2>/dev/null && echo LEAK chown
  unshare -m sh -c "mount -t tmpfs x /etc && touch /etc/{mark} && echo MOUNTED-PRIVATE-ETC"
  echo x > /proc/sys/kernel/core_pattern 2>/dev/null && echo LEAK sysctl
  true
' 2>&1
echo "UNSHARE rc=$?"
""")
    assert "NESTED uid=0" not in r.stdout, r.stdout
    assert "UNSHARE rc=0" not in r.stdout, r.stdout
    # The reason: bwrap --disable-userns leaves a user-namespace limit of 1
    # (the jail's own), so unshare(CLONE_NEWUSER) fails with ENOSPC.
    assert "unshare: unshare failed: No space left on device" in r.stdout, r.stdout
    assert "LEAK" not in r.stdout, r.stdout
    for d in ["/etc", "/usr", "/root", "/tmp"]:
        assert not os.path.exists(os.path.join(d, mark))
    guard.check()


TIOCSTI = r"""
import fcntl, termios
payload = b"touch %s\n"
try:
    for c in payload:
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print("TIOCSTI accepted")
except OSError as e:
    print("TIOCSTI refused", e.errno)
"""


def test_without_the_jail_tiocsti_injects_input(host):
    """Positive control for the test below: the same probe, run by the
    caller itself in the same terminal set-up without the helper, pushes
    `touch MARKER` into the terminal, and the caller's shell runs it. Needs a
    kernel that allows TIOCSTI without CAP_SYS_ADMIN (dev.tty.legacy_tiocsti
    = 1, or a kernel before 6.2); where it does not, the test below still
    runs (the filter's EPERM comes before the kernel's own EIO)."""
    why = tiocsti_for_all()
    if why:
        pytest.skip(why)
    d = tempfile.mkdtemp(prefix="ctj-tiocsti-control-", dir="/tmp")
    os.chmod(d, 0o1777)
    marker = os.path.join(d, "injected")
    probe = "python3 -c " + shlex.quote(TIOCSTI % marker.encode().decode())
    t = PtyProcess(["/bin/sh", "-c", f"{probe}; echo PROBE_DONE; read -r line; eval \"$line\"; echo GOT:[$line]"],
                   user=PROXY)
    try:
        assert t.wait_for("GOT:[", 15), t.output()
        t.wait(10)
    finally:
        t.close()
    try:
        assert "TIOCSTI accepted" in t.output(), t.output()
        assert f"GOT:[touch {marker}]" in t.output(), t.output()
        assert os.path.exists(marker)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_tiocsti_cannot_inject_input_into_the_callers_terminal(host, alice, guard):
    """The caller's shell runs the helper in its terminal, then reads and
    runs the next line typed into that terminal, as a shell would. The jail
    shares the caller's controlling terminal (tmux needs SIGWINCH); where the
    kernel allows TIOCSTI (dev.tty.legacy_tiocsti=1; the control above) only
    the helper's seccomp filter stands between the jail and the caller's
    shell, and where it does not the filter still refuses first: EPERM, not
    the kernel's EIO."""
    marker = os.path.join(guard.ww_canary, "tiocsti-ran-outside")
    s = new_session()
    jail = shlex.join(host.jail(alice, "python3 -c " + shlex.quote(TIOCSTI % marker.encode().decode()), session=s))
    t = PtyProcess(["/bin/sh", "-c", f"{jail}; echo HELPER_DONE; read -r line; eval \"$line\"; echo GOT:[$line]"],
                   user=PROXY)
    try:
        assert t.wait_for("HELPER_DONE", 15), t.output()
        time.sleep(0.5)
        t.write("echo nothing-injected\n")  # what the user would type next
        assert t.wait_for("GOT:[", 10), t.output()
        t.wait(10)
    finally:
        t.close()
    assert host.audit_lines(f"session={s}", want=2)
    assert "TIOCSTI refused 1" in t.output(), t.output()  # EPERM
    assert "GOT:[echo nothing-injected]" in t.output(), t.output()
    assert not os.path.exists(marker), "injected input ran outside the jail, as the caller"
    guard.check()


def test_system_directories_and_kernel_knobs_are_read_only(host, alice, guard):
    mark = f"ctj-attack-ro-{uuid.uuid4().hex[:8]}"
    targets = ["/etc", "/usr", "/usr/bin", "/bin", "/sbin", "/lib", "/opt", "/var/lib"]
    core_pattern = open("/proc/sys/kernel/core_pattern").read()
    script = "\n".join(f"touch {d}/{mark} 2>/dev/null && echo LEAK {d}" for d in targets) + f"""
echo x >> /etc/passwd 2>/dev/null && echo LEAK passwd
echo "|/bin/sh" > /proc/sys/kernel/core_pattern 2>/dev/null && echo LEAK core_pattern
echo h > /proc/sysrq-trigger 2>/dev/null && echo LEAK sysrq
mknod /dev/{mark} b 8 0 2>/dev/null && echo LEAK mknod
touch /tmp/{mark} /var/tmp/{mark} /run/{mark} && echo PRIVATE-TMP-OK
ls /sys/kernel 2>/dev/null | head -1 | sed 's/^/SYS /'
true"""
    r = jail_run(host, alice, script)
    assert "LEAK" not in r.stdout, r.stdout
    assert "PRIVATE-TMP-OK" in r.stdout
    for d in targets + ["/tmp", "/var/tmp", "/run", "/dev"]:
        assert not os.path.exists(os.path.join(d, mark)), d
    assert open("/proc/sys/kernel/core_pattern").read() == core_pattern
    guard.check()
