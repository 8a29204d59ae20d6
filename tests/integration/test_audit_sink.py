"""Without a syslog daemon (no socket at /dev/log, as in a container image that
runs none) syslog(3) drops every audit line silently. `check` says so and
fails (exit 3); a refusal still prints its one stderr line. Each case runs
the real setuid helper in a private mount namespace in which /dev/log is
replaced (bind mount) by what such a host has there; the host is untouched."""
import os
import pwd
import socket
import subprocess
import tempfile
import time

import pytest

from attackutil import pid_lines
from conftest import PROXY, new_session, routes_closed

LOST = ": audit lines would be lost (refusals still print their stderr line); run a syslog daemon"


@pytest.fixture
def fake_dev_log(host):
    """Two stand-ins for /dev/log: an empty file (no socket: the daemon never
    ran) and a socket file nobody listens on (the daemon died)."""
    d = tempfile.mkdtemp(prefix="ctj-devlog-", dir=host.prefix)
    empty = os.path.join(d, "empty")
    open(empty, "w").close()
    stale = os.path.join(d, "stale")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(stale)
    s.close()
    yield {"empty": empty, "stale": stale}
    for f in (empty, stale):
        os.unlink(f)
    os.rmdir(d)


def in_namespace(host, helper_args, over_dev_log=None, user=PROXY):
    """Run the installed helper as `user` (through its setuid bit) in a new
    mount namespace, with over_dev_log bind-mounted on /dev/log there."""
    bind = f'mount --bind "{over_dev_log}" /dev/log && ' if over_dev_log else ""
    pw = pwd.getpwnam(user)
    script = (f'{bind}exec setpriv --reuid={pw.pw_uid} --regid={pw.pw_gid} --init-groups -- "$@"')
    started = time.time()
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh",
                          host.bin, *helper_args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/",
                         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err, p.pid, started


def test_check_passes_with_a_syslog_socket(host, alice):
    """Positive control: the same namespace set-up, /dev/log left alone
    (and the routes around the jail closed, as check demands)."""
    with routes_closed(alice):
        rc, out, err, _, _ = in_namespace(host, ["check", "--user", alice], user="root")
    assert rc == 0, (out, err)
    assert "audit log: ok (syslog at /dev/log, facility authpriv)\n" in out, out
    assert out.endswith("result: a jail can start\n"), out


@pytest.mark.parametrize("kind,reason", [("empty", " (it is not a socket)"),
                                         ("stale", " accepting connections (Connection refused)")])
def test_check_fails_without_a_syslog_socket(host, alice, fake_dev_log, kind, reason):
    with routes_closed(alice):
        rc, out, err, _, _ = in_namespace(host, ["check", "--user", alice], fake_dev_log[kind], user="root")
    assert rc == 3, (out, err)
    assert f"audit log: FAIL: no syslog socket at /dev/log{reason}{LOST}" in out, out
    assert out.endswith("result: refused: a jail cannot start (audit log)\n"), out
    # Everything else about the host is fine: the audit log is the one problem.
    assert out.count("FAIL") == 1 and "jail trial: ok" in out, out


def test_a_refusal_without_syslog_still_prints_its_stderr_line(host, fake_dev_log):
    """The stderr line is the caller's record when the audit line is lost.
    Control: with /dev/log in place the same refusal reaches auth.log, so the
    absence of a line below is the missing socket's doing."""
    argv = ["run", "--user", "root", "--session", "x"]
    rc, out, err, pid, started = in_namespace(host, argv)
    assert rc == 1 and err.startswith("clihost-jail: ") and err.count("\n") == 1, (rc, err)
    assert any("decision=deny" in l for l in pid_lines(host, pid, started)), "control: no audit line with syslog"

    rc, out, err2, pid, started = in_namespace(host, argv, fake_dev_log["empty"])
    assert rc == 1 and err2 == err, (rc, err2, err)
    time.sleep(1.0)
    assert pid_lines(host, pid, started, timeout=1.0) == []


@pytest.mark.parametrize("pam", ["false", "true"])
@pytest.mark.parametrize("over", [None, "empty", "stale"])
def test_a_one_off_jail_starts_without_syslog(host, alice, fake_dev_log, pam, over):
    """Audit lines are lost without a syslog daemon, but jails still start.
    Without a syslog socket, fd 3 (which the audit line's socket takes
    otherwise) was free when bwrap's status pipe was opened, so the pipe sat
    on fd 3, where the seccomp program is then placed: bwrap wrote its status
    into the sealed program and failed ("bwrap: Write to info_fd: Operation
    not permitted"), and no jail with `session = false` could start. over
    None is the control: the same launch with the syslog socket in place."""
    conf = host.config_variant({"pam": f"session = {pam}"})
    bind = f'mount --bind "{fake_dev_log[over]}" /dev/log && ' if over else ""
    argv = ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", bind + 'exec "$@"', "sh",
            *host.jail(alice, "echo RAN")]
    p = subprocess.run(argv, capture_output=True, text=True, cwd="/", timeout=60,
                       env={"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": conf})
    assert (p.returncode, p.stdout) == (0, "RAN\n"), (p.returncode, p.stdout, p.stderr)
    assert "info_fd" not in p.stderr, p.stderr
