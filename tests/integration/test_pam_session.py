"""The real PAM stack of pam/clihost-jail around a real jail: limits from
/etc/security/limits.d apply inside, loginuid is the tenant's, the session is
opened and closed (pam_unix's own lines), session = false skips PAM, and
libpam loads the service's own modules, none of /etc/pam.d/other's."""
import os
import pwd
import subprocess
import time

from conftest import PROXY, RUNTIME_DIR, new_session


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


def _pam_modules_while_a_jail_runs(host, tenant, config=None):
    """The PAM modules mapped into the tenant's supervisor (it holds the
    tenant's PAM session while the jail runs), and the check line for the
    same config."""
    ready = os.path.join(host.home(tenant), f"pam-ready-{new_session()}")
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    if config:
        env["CLIHOST_JAIL_CONFIG"] = config
    p = subprocess.Popen(host.jail(tenant, f"touch {ready}; sleep 20"), env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 10
        while not os.path.exists(ready) and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert os.path.exists(ready), p.stderr.read() if p.poll() is not None else "the jail did not start"
        # The tenant's supervisor (its record's pid) holds the PAM session.
        uid = pwd.getpwnam(tenant).pw_uid
        sup = int(open(os.path.join(RUNTIME_DIR, f"{uid}.state")).read().split()[3])
        with open(f"/proc/{sup}/maps") as f:
            mapped = {os.path.basename(l.split()[-1]) for l in f if "/security/pam_" in l}
    finally:
        p.kill()
        p.wait()
        if os.path.exists(ready):
            os.unlink(ready)
    c = host.run_root([host.bin, "check", "--user", tenant], config=config)
    pam_line = next((l for l in c.stdout.splitlines() if l.startswith("pam: ")), c.stdout)
    return mapped, pam_line


def _modules_named(text):
    return {t for l in text.splitlines() for t in l.split("#", 1)[0].split() if t.startswith("pam_") and t.endswith(".so")}


def test_libpam_loads_the_services_modules_and_none_of_other(host, alice):
    """libpam parses /etc/pam.d/other at every pam_start (its fallback for
    types a service leaves out, which pam/clihost-jail never does) and loads
    its modules into the root helper: Debian's pam_permit, pam_cap,
    pam_systemd. The helper has libpam read the service through its own
    directory (RUNTIME/pam.d: a link to the service, an empty "other"), so
    that only the service's modules are mapped, and check says so. Control:
    a service that includes another file keeps libpam's own lookup, and
    other's modules are mapped then."""
    with open("/etc/pam.d/clihost-jail") as f:
        service = f.read()
    own = _modules_named(service)
    assert {"pam_unix.so", "pam_limits.so"} <= own
    mapped, line = _pam_modules_while_a_jail_runs(host, alice)
    assert "pam_unix.so" in mapped and "pam_limits.so" in mapped, mapped
    assert mapped <= own, mapped - own
    assert line == (f"pam: session via /etc/pam.d/clihost-jail (read through {RUNTIME_DIR}/pam.d: the service's "
                    "own modules only, none of /etc/pam.d/other's)"), line
    link = os.path.join(RUNTIME_DIR, "pam.d", "clihost-jail")
    assert os.readlink(link) == "/etc/pam.d/clihost-jail"
    other = os.stat(os.path.join(RUNTIME_DIR, "pam.d", "other"))
    assert other.st_size == 0 and other.st_uid == 0

    # Control: the same stack, its password line as an include.
    included = "/etc/pam.d/ctj-password-deny"
    with open(included, "w") as f:
        f.write("password required pam_deny.so\n")
    try:
        with open("/etc/pam.d/ctj-includes", "w") as f:
            f.write(service.replace("password  required   pam_deny.so", "password  include    ctj-password-deny"))
        conf = host.config_variant(replace={"pam": {"service": "ctj-includes"}})
        mapped, line = _pam_modules_while_a_jail_runs(host, alice, conf)
        assert "pam_unix.so" in mapped, mapped
        assert mapped - own, mapped  # /etc/pam.d/other's modules
        assert line == ("pam: session via /etc/pam.d/ctj-includes (libpam's own lookup, which also loads "
                        "/etc/pam.d/other: the service names other files)"), line
    finally:
        for f in (included, "/etc/pam.d/ctj-includes"):
            if os.path.exists(f):
                os.unlink(f)


def test_a_wrong_link_in_the_pam_directory_is_replaced(host, alice):
    """RUNTIME/pam.d/SERVICE names /etc/pam.d/SERVICE, whatever was there:
    a link to another service (root's mistake, or a stale one) is replaced
    before libpam reads it. Control: it did name the other file before."""
    link = os.path.join(RUNTIME_DIR, "pam.d", "clihost-jail")
    r = host.run_as(PROXY, host.jail(alice, "true"))
    assert r.returncode == 0, r
    os.unlink(link)
    os.symlink("/etc/pam.d/other", link)
    assert os.readlink(link) == "/etc/pam.d/other"
    r = host.run_as(PROXY, host.jail(alice, "true"))
    assert r.returncode == 0, r
    assert os.readlink(link) == "/etc/pam.d/clihost-jail"
