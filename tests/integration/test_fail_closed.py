"""Every failure is fail-closed: no command runs, one stderr line, exit code
from clihost-jail(8), an audit line."""
import os
import pwd
import shutil

import pytest

from conftest import PROXY, new_session, refused


def assert_closed(host, r, s, code, marker):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "RAN" not in r.stdout
    assert not os.path.exists(marker)
    assert r.stderr.startswith("clihost-jail: "), r.stderr
    lines = host.audit_lines(f"session={s}", until=refused)
    assert any(refused(l) for l in lines), lines


def attempt(host, tenant, config):
    s = new_session()
    marker = os.path.join(host.home(tenant), f"ctj-ran-{s}")
    r = host.run_root(host.jail(tenant, f"touch {marker}; echo RAN", session=s), config=config)
    return r, s, marker


def fake_bwrap_dir(host, name, script, mode=0o755, group_writable=False):
    d = os.path.join(host.prefix, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    path = os.path.join(d, "bwrap")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, mode | (0o020 if group_writable else 0))
    return path


def test_missing_bwrap_exits_3(host, alice):
    conf = host.config_variant({"jail": "bwrap = /nonexistent/bwrap"})
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 3, marker)
    assert "bwrap" in r.stderr


def test_failing_bwrap_runs_nothing(host, alice):
    path = fake_bwrap_dir(host, "failing", "#!/bin/sh\nexit 1\n")
    conf = host.config_variant({"jail": f"bwrap = {path}"})
    s = new_session()
    marker = os.path.join(host.home(alice), f"ctj-ran-{s}")
    r = host.run_root(host.jail(alice, f"touch {marker}; echo RAN", session=s), config=conf)
    # A bwrap that exits 1 without reporting that the command ran failed
    # itself: a host failure (3), not the command's status.
    assert r.returncode == 3, r
    assert r.stderr == "clihost-jail: bwrap could not set up the jail (its message is above); refusing\n", r.stderr
    assert "RAN" not in r.stdout and not os.path.exists(marker)
    lines = host.audit_lines(f"session={s}", want=2, until=lambda l: "status 3" in l)
    assert any("status 3" in l for l in lines), lines


def test_bwrap_setup_failure_is_told_apart_from_the_commands_exit(host, alice):
    # bwrap cannot create a tmpfs mount point under the read-only /usr.
    conf = host.config_variant({"jail": "tmpfs = /tmp /usr/ctj-cannot-exist"})
    s = new_session()
    r = host.run_root(host.jail(alice, "echo RAN", session=s), config=conf)
    assert r.returncode == 3, r
    lines = r.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("bwrap: ") and "/usr/ctj-cannot-exist" in lines[0], lines
    assert lines[1] == "clihost-jail: bwrap could not set up the jail (its message is above); refusing"
    assert "RAN" not in r.stdout
    setup_failed = lambda l: "decision=fail" in l and "could not set up" in l
    lines = host.audit_lines(f"session={s}", want=2, until=setup_failed)
    assert any(setup_failed(l) for l in lines), lines
    # Control: the command's own exit 1 stays the command's, with no helper line.
    r = host.run_root(host.jail(alice, "echo RAN; exit 1"))
    assert r.returncode == 1 and "RAN" in r.stdout and "clihost-jail" not in r.stderr, r


def test_crashing_bwrap_runs_nothing(host, alice):
    path = fake_bwrap_dir(host, "crashing", "#!/bin/sh\nkill -SEGV $$\n")
    conf = host.config_variant({"jail": f"bwrap = {path}"})
    s = new_session()
    r = host.run_root(host.jail(alice, "echo RAN", session=s), config=conf)
    assert r.returncode == 128 + 11
    assert "RAN" not in r.stdout


def test_group_writable_bwrap_is_refused(host, alice):
    path = fake_bwrap_dir(host, "gw", "#!/bin/sh\nexec /usr/bin/bwrap \"$@\"\n", group_writable=True)
    conf = host.config_variant({"jail": f"bwrap = {path}"})
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 3, marker)


def test_bwrap_not_owned_by_root_is_refused(host, alice):
    path = fake_bwrap_dir(host, "notroot", "#!/bin/sh\nexec /usr/bin/bwrap \"$@\"\n")
    os.chown(path, 1, 1)
    conf = host.config_variant({"jail": f"bwrap = {path}"})
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 3, marker)


def test_config_writable_by_others_is_refused(host, alice):
    conf = host.config_variant({})
    os.chmod(conf, 0o666)
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 3, marker)


def test_config_in_a_world_writable_directory_is_refused(host, alice):
    d = os.path.join(host.prefix, "wwdir")
    os.makedirs(d)
    os.chmod(d, 0o777)
    conf = os.path.join(d, "jail.conf")
    shutil.copy(host.config_variant({}), conf)
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 3, marker)


def test_config_symlink_is_refused(host, alice):
    link = os.path.join(host.variants, "link.conf")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(host.config_variant({}), link)
    r, s, marker = attempt(host, alice, link)
    assert_closed(host, r, s, 3, marker)


def test_malformed_config_is_refused(host, alice):
    conf = host.config_variant({"jail": "procs = private"})
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 3, marker)
    assert "unknown key" in r.stderr


def test_caller_command_refused_unless_allowed(host, alice):
    """Refused before anything acts: no PAM session was opened (pam_unix
    logs every one) for a request the policy refuses. Control: the same
    command allowed opens one."""
    conf = host.config_variant(replace={"jail": {"allow_caller_command": "false"}})
    token = f"session opened for user {alice}"
    before = len(host.audit_lines(token, want=0, timeout=0.1))
    r, s, marker = attempt(host, alice, conf)
    assert_closed(host, r, s, 1, marker)
    assert r.stderr == "clihost-jail: a command was given but allow_caller_command is false\n", r.stderr
    assert len(host.audit_lines(token, want=before + 1, timeout=1.0)) == before
    r, s, marker = attempt(host, alice, None)
    assert r.returncode == 0 and os.path.exists(marker), r
    os.unlink(marker)
    assert len(host.audit_lines(token, want=before + 1)) == before + 1


def test_pam_service_missing_fails_closed(host, alice):
    conf = host.config_variant({"pam": "service = ctj-no-such-service"})
    r, s, marker = attempt(host, alice, conf)
    # Linux-PAM would fall back to /etc/pam.d/other, which admits everyone.
    assert_closed(host, r, s, 3, marker)
    assert "PAM service" in r.stderr


@pytest.mark.parametrize("shape", ["symlink", "group-writable", "not-root-owned"])
def test_untrusted_pam_service_fails_closed(host, alice, shape):
    """A PAM service file that someone other than root could have written
    (or that points elsewhere) decides who gets a session: refused, exit 3."""
    name = f"ctj-untrusted-{shape}"
    path = f"/etc/pam.d/{name}"
    target = "/etc/pam.d/clihost-jail"
    try:
        if shape == "symlink":
            os.symlink(target, path)
        else:
            shutil.copy(target, path)
            os.chmod(path, 0o664 if shape == "group-writable" else 0o644)
            if shape == "not-root-owned":
                os.chown(path, pwd.getpwnam(alice).pw_uid, 0)
        conf = host.config_variant({"pam": f"service = {name}"})
        r, s, marker = attempt(host, alice, conf)
        assert_closed(host, r, s, 3, marker)
        assert "PAM service" in r.stderr, r.stderr
    finally:
        os.unlink(path)
