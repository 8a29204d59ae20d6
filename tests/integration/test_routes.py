"""Routes around the jail (SECURITY.md, "Routes around the jail"): a tenant
is a real account, so host services that run code as it must be closed.
Real programs: openssh-server's sshd on a loopback port with a test-only host
key, `check` reading the host's own files (each touched file is backed up and
restored), tmux in the jail.
"""
import contextlib
import grp
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import BASE_CONFIG, PROXY, REPO, TENANT_GROUP, TEST_SSHD_DROP_IN, HostFiles, login_shell, new_session, \
    sh, sshd_can_report, write_root
from ptyutil import PtyProcess

SSHD = "/usr/sbin/sshd"
DROP_IN = os.path.join(REPO, "install", "sshd_config.d", "clihost-jail.conf")
TEST_DROP_IN = TEST_SSHD_DROP_IN
TEST_PAM = "ctj-routes-test"
LINGER_DIR = "/var/lib/systemd/linger"
JAIL_SHELL = "/usr/bin/bash"  # BASE_CONFIG's [jail] shell


@pytest.fixture(scope="module")
def sshd_ready():
    with sshd_can_report():
        yield


@contextlib.contextmanager
def in_group(user, group):
    """user in `group` (made if absent), as long as the block runs."""
    made = False
    try:
        grp.getgrnam(group)
    except KeyError:
        sh("groupadd", group)
        made = True
    was_member = user in grp.getgrnam(group).gr_mem
    sh("gpasswd", "-a", user, group)
    try:
        yield
    finally:
        if not was_member:
            sh("gpasswd", "-d", user, group, check=False)
        if made:
            sh("groupdel", group, check=False)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_sshd(workdir, extra=""):
    """A real sshd on 127.0.0.1:PORT with a test-only host key; yields
    (port, path of its log). Killed at the end."""
    port = free_port()
    hostkey = os.path.join(workdir, f"hostkey{port}")
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey)
    cfg = os.path.join(workdir, f"sshd{port}.conf")
    write_root(cfg, f"""{extra}
Port {port}
ListenAddress 127.0.0.1
HostKey {hostkey}
PidFile {workdir}/sshd{port}.pid
UsePAM yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile .ssh/authorized_keys
StrictModes yes
LogLevel VERBOSE
""", 0o600)
    log = os.path.join(workdir, f"sshd{port}.log")
    with open(log, "w") as logf:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", cfg], stdout=logf, stderr=subprocess.STDOUT,
                                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            assert proc.poll() is None, open(log).read()
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("sshd did not listen: " + open(log).read())
        yield port, log
    finally:
        proc.kill()
        proc.wait(10)


def ssh_as(user, key, port, command):
    return subprocess.run(
        ["ssh", "-F", "/dev/null", "-i", key, "-p", str(port), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
         "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10",
         "-o", "PasswordAuthentication=no", f"{user}@127.0.0.1", command],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_shipped_sshd_drop_in_refuses_a_key_the_tenant_wrote_from_its_jail(host, alice, sshd_ready):
    work = tempfile.mkdtemp(prefix="ctj-routes-")
    home = host.home(alice)
    try:
        key = os.path.join(work, "id")
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key)
        pub = open(key + ".pub").read().strip()
        # The attack: from inside the jail, the tenant authorises its own key.
        r = host.run_as(PROXY, host.jail(alice, "mkdir -p \"$HOME/.ssh\" && chmod 700 \"$HOME/.ssh\" && "
                                                f"printf '%s\\n' '{pub}' > \"$HOME/.ssh/authorized_keys\" && "
                                                "chmod 600 \"$HOME/.ssh/authorized_keys\" && echo SB=$TTYD_SANDBOX"))
        assert r.returncode == 0 and "SB=true" in r.stdout, r.stdout + r.stderr
        assert os.stat(os.path.join(home, ".ssh", "authorized_keys")).st_uid == pwd.getpwnam(alice).pw_uid
        # The shipped drop-in names clihost-tenants: the tenant joins that group
        # for this test, and its login shell stays /bin/bash, so that only the
        # drop-in can be what refuses it.
        assert pwd.getpwnam(alice).pw_shell == "/bin/bash"
        with in_group(alice, "clihost-tenants"):
            # Positive control: without the drop-in the key gives an unjailed shell.
            with running_sshd(work) as (port, log):
                r = ssh_as(alice, key, port, "id; echo SB=${TTYD_SANDBOX:-unset}")
                assert r.returncode == 0, r.stderr + open(log).read()
                assert f"({alice})" in r.stdout and "SB=unset" in r.stdout, r.stdout
            # The same sshd, the same key, with the shipped drop-in included.
            with running_sshd(work, extra=f"Include {DROP_IN}") as (port, log):
                r = ssh_as(alice, key, port, "id")
                assert r.returncode == 255 and r.stdout == "", r.stdout
                assert "Permission denied" in r.stderr, r.stderr
                deadline = time.time() + 5
                while "DenyGroups" not in open(log).read() and time.time() < deadline:
                    time.sleep(0.05)
                assert (f"User {alice} from 127.0.0.1 not allowed because a group is listed in DenyGroups"
                        in open(log).read()), open(log).read()
    finally:
        shutil.rmtree(os.path.join(home, ".ssh"), ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def route(out, name, user):
    """The report line of one route for one user, without its prefix."""
    prefix = f"route {name} ({user}): "
    lines = [l[len(prefix):] for l in out.splitlines() if l.startswith(prefix)]
    assert len(lines) == 1, out
    return lines[0]


@pytest.fixture
def host_files():
    files = HostFiles(["/etc/cron.deny", "/etc/cron.allow", "/etc/at.deny", "/etc/at.allow", TEST_DROP_IN,
                       f"/etc/pam.d/{TEST_PAM}", os.path.join(LINGER_DIR, "ctj-alice")])
    made = [d for d in ["/var/lib/systemd", LINGER_DIR, "/etc/ssh/sshd_config.d"] if not os.path.isdir(d)]
    try:
        yield files
    finally:
        files.restore()
        for d in reversed(made):
            shutil.rmtree(d, ignore_errors=True)


def test_check_reports_each_route_fail_then_ok_as_it_is_opened_and_closed(host, alice, sshd_ready, host_files):
    for p in ["/etc/cron.allow", "/etc/at.allow"]:
        if os.path.exists(p):
            os.unlink(p)
    shipped_pam = open(os.path.join(REPO, "pam", "clihost-jail")).read()
    conf = host.config_variant({"pam": f"service = {TEST_PAM}"})
    assert f"shell = {JAIL_SHELL}" in open(conf).read()
    os.makedirs(LINGER_DIR, exist_ok=True)

    def check():
        return host.run_root([host.bin, "check", "--user", alice], config=conf)

    # Every route open.
    if os.path.exists(TEST_DROP_IN):
        os.unlink(TEST_DROP_IN)
    write_root(f"/etc/pam.d/{TEST_PAM}", shipped_pam + "-session optional pam_systemd.so\n")
    write_root("/etc/at.deny", "daemon\n", 0o640)
    if os.path.exists("/etc/cron.deny"):
        os.unlink("/etc/cron.deny")
    write_root(os.path.join(LINGER_DIR, alice), "")
    r = check()
    out = r.stdout
    assert r.returncode == 3, out + r.stderr
    assert route(out, "sshd", alice).startswith(f"FAIL: sshd lets {alice} log in"), out
    assert route(out, "login shell", alice) == (
        "FAIL: /bin/bash: sshd, su, login and any other service that honours login shells run it outside the jail "
        f"(fix: usermod -s /usr/sbin/nologin {alice})")
    assert route(out, "cron", alice) == (
        "FAIL: neither /etc/cron.allow nor /etc/cron.deny exists: every user may "
        f"(fix: echo {alice} >> /etc/cron.deny)")
    assert route(out, "at", alice) == f"FAIL: {alice} is not in /etc/at.deny (fix: echo {alice} >> /etc/at.deny)"
    assert route(out, "linger", alice).startswith(f"FAIL: {LINGER_DIR}/{alice} exists"), out
    assert route(out, "pam_systemd", alice).startswith(f"FAIL: /etc/pam.d/{TEST_PAM} loads pam_systemd.so"), out
    assert "routes around the jail: FAIL: open" in out
    # The jail itself could start: only the routes fail check, and its last
    # line says so.
    assert "jail trial: ok" in out, out
    assert out.splitlines()[-1] == (
        "result: refused: routes around the jail are open (sshd, login shell, cron, at, linger, pam_systemd)"), out

    # Close them one at a time; each line turns ok and says why.
    write_root(TEST_DROP_IN, f"DenyGroups {TENANT_GROUP}\n")
    assert route(check().stdout, "sshd", alice) == f"ok (refused by DenyGroups {TENANT_GROUP})"
    with login_shell(alice, "/usr/sbin/nologin"):
        assert route(check().stdout, "login shell", alice) == f"ok (/usr/sbin/nologin; tmux starts {JAIL_SHELL})"
        write_root("/etc/cron.deny", f"{alice}\n")
        assert route(check().stdout, "cron", alice) == f"ok ({alice} is in /etc/cron.deny)"
        write_root("/etc/at.deny", f"daemon\n{alice}\n", 0o640)
        assert route(check().stdout, "at", alice) == f"ok ({alice} is in /etc/at.deny)"
        os.unlink(os.path.join(LINGER_DIR, alice))
        assert route(check().stdout, "linger", alice) == f"ok (no {LINGER_DIR}/{alice})"
        write_root(f"/etc/pam.d/{TEST_PAM}", shipped_pam)
        r = check()
        assert route(r.stdout, "pam_systemd", alice) == f"ok (/etc/pam.d/{TEST_PAM} loads no pam_systemd.so)"
        # All closed: check passes.
        assert r.returncode == 0, r.stdout + r.stderr
        assert "routes around the jail: all closed" in r.stdout
        assert f"jail shell: {JAIL_SHELL}: ok" in r.stdout

        # An sshd whose policy cannot be read is reported as unknown, not ok.
        write_root(TEST_DROP_IN, "ThisIsNotAnSshdOption yes\n")
        r = check()
        line = route(r.stdout, "sshd", alice)
        assert line.startswith(f"FAIL: sshd is installed but its policy for {alice} is unknown: `sshd -T` failed ("), \
            line
        assert "Bad configuration option: ThisIsNotAnSshdOption" in line, line
        assert r.returncode == 3


def test_check_without_user_reports_every_member_of_the_tenant_group(host, alice, bob, sshd_ready):
    r = host.run_root([host.bin, "check"])
    for t in (alice, bob):
        assert route(r.stdout, "login shell", t).startswith("FAIL: /bin/bash:"), r.stdout
    assert r.returncode == 3


def test_jail_shell_is_the_shell_while_the_login_shell_is_nologin(host, alice):
    conf = host.config_variant({})
    assert f"shell = {JAIL_SHELL}" in open(conf).read()
    unset = os.path.join(host.variants, "no-shell.conf")
    write_root(unset, BASE_CONFIG.replace(f"shell = {JAIL_SHELL}\n", ""))
    assert "shell" not in open(unset).read()
    env = {"PATH": "/usr/bin:/bin", "TERM": "xterm-256color"}
    with login_shell(alice, "/usr/sbin/nologin"):
        # Refused with the reason when [jail] shell is unset: tmux would start
        # nologin. Before anything acts: no session jail, no PAM session.
        token = f"session opened for user {alice}"
        before = len(host.audit_lines(token, want=0, timeout=0.1))
        r = host.run_root([host.bin, "run", "--user", alice, "--session", new_session()], env=env, config=unset)
        assert r.returncode == 1
        assert r.stderr == (f"clihost-jail: the login shell of {alice} is /usr/sbin/nologin and [jail] shell is "
                            "not set: tmux would start it (set [jail] shell)\n"), r.stderr
        assert len(host.audit_lines(token, want=before + 1, timeout=1.0)) == before
        # print shows it.
        p = host.run_root([host.bin, "print", "--user", alice, "--session", new_session()], env=env, config=conf)
        assert p.returncode == 0 and f"SHELL={JAIL_SHELL} " in p.stdout, p.stdout + p.stderr
        # A command in the jail sees it.
        r = host.run_root(host.jail(alice, "echo SHELL=$SHELL"), env=env, config=conf)
        assert r.returncode == 0 and r.stdout == f"SHELL={JAIL_SHELL}\n", r.stdout + r.stderr
        # tmux's own pane runs it, under a real pty.
        s = new_session()
        t = PtyProcess([host.bin, "run", "--user", alice, "--session", s], env={**env, "CLIHOST_JAIL_CONFIG": conf})
        try:
            sock = os.path.join(host.home(alice), ".cache", "tmux", "clihost.sock")
            shell = ""
            deadline = time.time() + 10
            while time.time() < deadline:
                d = host.run_as(alice, ["tmux", "-S", sock, "display", "-p", "-t", "=" + s, "#{default-shell}"])
                shell = d.stdout.strip()
                if d.returncode == 0:
                    break
                time.sleep(0.1)
            assert shell == JAIL_SHELL, (shell, t.output())
            # The pane's process itself: tmux starts it as a login shell ("-bash").
            t.write("echo Z=$0; echo EXE=$(readlink /proc/$$/exe)\r")
            assert t.wait_for("Z=-bash"), t.output()
            assert t.wait_for(f"EXE={JAIL_SHELL}"), t.output()
            assert pwd.getpwnam(alice).pw_shell == "/usr/sbin/nologin"
        finally:
            host.run_root([host.bin, "kill", "--user", alice, "--session", s])
            t.close()


def test_check_flags_a_forward_the_tenant_wrote_from_its_jail_while_an_mta_is_installed(host, alice, sshd_ready):
    """~/.forward pipes run as the tenant outside the jail when an MTA is
    installed. check looks at the file with lstat only (a symlink there is
    not followed); the MTA is a root-owned stand-in at /usr/sbin/sendmail
    when the host has none (removed after)."""
    sendmail = "/usr/sbin/sendmail"
    made = not os.path.lexists(sendmail)
    forward = os.path.join(host.home(alice), ".forward")
    try:
        if made:
            write_root(sendmail, "#!/bin/sh\nexit 1\n", 0o755)
        r = host.run_root([host.bin, "check", "--user", alice])
        assert route(r.stdout, "forward", alice).startswith(f"ok (no {forward} now, but an MTA is installed"), r.stdout
        # From inside its jail the tenant makes ~/.forward (a symlink: lstat
        # sees it whatever it points to).
        j = host.run_as(PROXY, host.jail(alice, "echo '|/usr/bin/id' > \"$HOME/.fw\" && "
                                                "ln -s /etc/shadow \"$HOME/.forward\" && echo SB=$TTYD_SANDBOX"))
        assert j.returncode == 0 and "SB=true" in j.stdout, j.stdout + j.stderr
        r = host.run_root([host.bin, "check", "--user", alice])
        line = route(r.stdout, "forward", alice)
        assert line.startswith(f"FAIL: {forward} exists and an MTA is installed ({sendmail})"), line
        assert f"(fix: rm {forward}, and forbid .forward pipes in the MTA" in line, line
        assert r.returncode == 3
        if made:
            # Control: without an MTA the same file is no route.
            os.unlink(sendmail)
            r = host.run_root([host.bin, "check", "--user", alice])
            assert route(r.stdout, "forward", alice) == f"ok (no MTA ({sendmail} absent))", r.stdout
    finally:
        for p in (forward, os.path.join(host.home(alice), ".fw")):
            if os.path.lexists(p):
                os.unlink(p)
        if made and os.path.lexists(sendmail):
            os.unlink(sendmail)


def test_a_jail_shell_others_could_write_is_refused_like_bwrap(host, alice):
    """[jail] shell is exec'd as the tenant by tmux: only root may have been
    able to put it there (the open_trusted walk that bwrap gets)."""
    shell = os.path.join(host.prefix, "routes-sh")
    shutil.copy("/usr/bin/dash", shell)
    os.chown(shell, 0, 0)
    conf = os.path.join(host.variants, "writable-shell.conf")
    # The shell must lie under a ro_bind directory: bind its own.
    write_root(conf, BASE_CONFIG.replace(
        f"shell = {JAIL_SHELL}\n", f"shell = {shell}\nro_bind = /usr /bin /sbin /lib /lib64 /etc {host.prefix}\n"))
    argv = [host.bin, "print", "--user", alice, "--session", new_session()]
    try:
        os.chmod(shell, 0o775)
        r = host.run_root(argv, config=conf)
        assert r.returncode == 3
        assert r.stderr == f"clihost-jail: [jail] shell {shell} is not root-owned or is writable by group/others\n", \
            r.stderr
        r = host.run_root([host.bin, "check", "--user", alice], config=conf)
        assert f"jail shell: FAIL: [jail] shell {shell} is not root-owned" in r.stdout and r.returncode == 3, r.stdout
        # Control: the same file, writable by root alone, is accepted.
        os.chmod(shell, 0o755)
        r = host.run_root(argv, config=conf)
        assert r.returncode == 0 and f"SHELL={shell} " in r.stdout, r.stdout + r.stderr
    finally:
        os.unlink(shell)
