"""Attacks by the tenant from inside the jail (allow_caller_command = true in
the test policy, so `host.jail(tenant, script)` runs /bin/sh -c script):
other tenants' and host processes, setuid binaries, nested user namespaces,
terminal input injection into the caller, and writes to the system."""
import os
import pwd
import shlex
import time
import uuid

from attackutil import INSIDE, Guard, assert_inside, guard, payloads, pids_named, snapshot, spawn, start_jail, \
    wait_until  # noqa: F401 (fixtures)
from conftest import PROXY, new_session
from ptyutil import PtyProcess


def jail_run(host, tenant, script, **kw):
    s = new_session()
    r = spawn(host.jail(tenant, INSIDE + "\n" + script, session=s), **kw)
    assert r.returncode == 0, r
    assert_inside(host, tenant, r.stdout)
    lines = host.audit_lines(f"session={s}", want=2)
    assert any("decision=allow" in l for l in lines) and any("decision=exit" in l for l in lines), lines
    return r


def test_other_tenants_processes_are_invisible(host, alice, bob, payloads):
    bs = new_session()
    bj = start_jail(host, bob, "sleep 1000", bs)
    try:
        assert wait_until(lambda: pids_named(host, bob, "sleep"), 10)
        g = Guard(host, payloads, alice, others=[])
        target = pids_named(host, bob, "sleep")[0]
        bwrap_init = int(open(f"/proc/{target}/stat").read().rsplit(")", 1)[1].split()[1])
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


def test_setuid_binaries_grant_nothing(host, alice, guard):
    watched = ["/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow"]
    before = snapshot(watched)
    script = "\n".join(f"{t} </dev/null >/dev/null 2>&1; echo \"RC $? {t.split()[0]}\"" for t in SETUID_TRIES)
    r = jail_run(host, alice, script + """
id -u | sed 's/^/ID /'
grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status""")
    rcs = {l.split()[2]: int(l.split()[1]) for l in r.stdout.splitlines() if l.startswith("RC ")}
    assert len(rcs) == len(SETUID_TRIES), rcs
    assert all(rc != 0 for rc in rcs.values()), rcs
    assert f"ID {pwd.getpwnam(alice).pw_uid}" in r.stdout
    fields = dict(l.split(":\t") for l in r.stdout.splitlines() if ":\t" in l)
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapPrm"], 16) == 0 and fields["NoNewPrivs"] == "1"
    assert snapshot(watched) == before
    guard.check()


def test_nested_user_namespace_gives_no_access_outside(host, alice, guard):
    """Nested user namespaces are refused inside the jail (bwrap
    --disable-userns): `unshare -r` fails, and nothing it would have tried
    (shadow, /etc, /usr, /root, another home, sysctls) changed."""
    mark = f"ctj-attack-nested-{uuid.uuid4().hex[:8]}"
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


def test_tiocsti_cannot_inject_input_into_the_callers_terminal(host, alice, guard):
    """The caller's shell runs the helper in its terminal, then reads and
    runs the next line typed into that terminal, as a shell would. The jail
    shares the caller's controlling terminal (tmux needs SIGWINCH) and this
    kernel allows TIOCSTI (dev.tty.legacy_tiocsti=1): only the helper's
    seccomp filter stands between the jail and the caller's shell."""
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
