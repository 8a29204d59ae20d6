"""The real PAM stack of pam/clihost-jail around a real jail: limits from
/etc/security/limits.d apply inside, loginuid is the tenant's, the session is
opened and closed (pam_unix's own lines), and session = false skips PAM."""
import os
import pwd

from conftest import PROXY, new_session


def test_limits_from_limits_d_apply_inside_the_jail(host, alice):
    path = "/etc/security/limits.d/ctj-test.conf"
    with open(path, "w") as f:
        f.write(f"{alice} - nofile 321\n{alice} - nproc 777\n")
    try:
        r = host.run_as(PROXY, host.jail(alice, "cat /proc/self/limits"))
        assert r.returncode == 0, r.stderr
        limits = {l[:26].strip(): l[26:].split()[:2] for l in r.stdout.splitlines()[1:]}
        assert limits["Max open files"] == ["321", "321"]
        assert limits["Max processes"] == ["777", "777"]
    finally:
        os.unlink(path)


def test_loginuid_is_the_tenants(host, alice):
    r = host.run_as(PROXY, host.jail(alice, "cat /proc/self/loginuid"))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == pwd.getpwnam(alice).pw_uid


def test_pam_opens_and_closes_the_session(host, alice):
    token = f"for user {alice}"
    before_open = len(host.audit_lines(f"session opened {token}", want=0, timeout=0.1))
    before_close = len(host.audit_lines(f"session closed {token}", want=0, timeout=0.1))
    r = host.run_as(PROXY, host.jail(alice, "true"))
    assert r.returncode == 0
    assert len(host.audit_lines(f"session opened {token}", want=before_open + 1)) == before_open + 1
    assert len(host.audit_lines(f"session closed {token}", want=before_close + 1)) == before_close + 1


def test_session_false_opens_no_pam_session(host, alice):
    conf = host.config_variant({"pam": "session = false"})
    token = f"session opened for user {alice}"
    before = len(host.audit_lines(token, want=0, timeout=0.1))
    r = host.run_root(host.jail(alice, "cat /proc/self/loginuid"), config=conf)
    assert r.returncode == 0
    assert len(host.audit_lines(token, want=before + 1, timeout=1.0)) == before
