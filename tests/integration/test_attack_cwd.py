"""The caller's working directory must not reach the tenant. Processes inherit
their cwd; bwrap runs as the tenant and is dumpable, so a tenant process can
start a path lookup in that directory through /proc/<bwrap pid>/cwd/, past
the 0700 mode of any directory above it (the proxy's home): the lookup never
walks through those. (The cwd's own mode still applies to its entries: a
0700 cwd itself would not leak, a readable directory inside a 0700 one does.)"""
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import PROXY, new_session


@pytest.fixture
def private_cwd(host):
    """The proxy's 0700 home with an ordinary 0755 directory in it holding a
    0644 file with a token; the proxy runs from that directory."""
    pw = pwd.getpwnam(PROXY)
    home = tempfile.mkdtemp(prefix="ctj-attack-cwd-", dir=host.prefix)
    d = os.path.join(home, "work")
    os.mkdir(d)
    token = "CTJ-CWD-" + uuid.uuid4().hex
    with open(os.path.join(d, "secret"), "w") as f:
        f.write(token + "\n")
    for path, mode in [(os.path.join(d, "secret"), 0o644), (d, 0o755), (home, 0o700)]:
        os.chown(path, pw.pw_uid, pw.pw_gid)
        os.chmod(path, mode)
    yield d, token
    shutil.rmtree(home, ignore_errors=True)


def start_in(argv, cwd, user):
    pw = pwd.getpwnam(user)

    def demote():
        os.initgroups(user, pw.pw_gid)
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return subprocess.Popen(argv, cwd=cwd, preexec_fn=demote, env={"PATH": "/usr/bin:/bin"},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tenant_pids_running(host, tenant, exe, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        pids = []
        for pid in host.processes_of(tenant):
            try:
                if os.readlink(f"/proc/{pid}/exe") == exe:
                    pids.append(pid)
            except OSError:
                pass
        if pids:
            return pids
        time.sleep(0.05)
    return []


def read_through_cwd(host, tenant, pid):
    return host.run_as(tenant, ["cat", f"/proc/{pid}/cwd/secret"])


def test_the_tenant_cannot_read_the_callers_cwd_through_proc(host, alice, private_cwd):
    d, token = private_cwd
    # The probe works: the tenant cannot read the file directly...
    direct = host.run_as(alice, ["cat", os.path.join(d, "secret")])
    assert direct.returncode != 0 and "Permission denied" in direct.stderr, direct
    # ...but can through /proc/PID/cwd of its own process whose cwd is there
    # (positive control: a process of the tenant started in that directory,
    # as the helper's bwrap would have been without chdir("/")).
    ctl = subprocess.Popen(["setpriv", f"--reuid={alice}", f"--regid={alice}", "--init-groups", "sleep", "30"],
                           cwd=d, stdin=subprocess.DEVNULL)
    try:
        pids = tenant_pids_running(host, alice, "/usr/bin/sleep")
        assert pids, "control process did not start"
        leaked = read_through_cwd(host, alice, pids[0])
        assert leaked.returncode == 0 and leaked.stdout.strip() == token, leaked
    finally:
        ctl.kill()
        ctl.wait()
    assert host.wait_gone(alice)

    s = new_session()
    jail = start_in(host.jail(alice, "sleep 30", session=s), d, PROXY)
    try:
        bwraps = tenant_pids_running(host, alice, "/usr/bin/bwrap")
        assert bwraps, "the jail did not start"
        assert tenant_pids_running(host, alice, "/usr/bin/sleep"), "the jail did not start its command"
        for pid in bwraps:
            r = read_through_cwd(host, alice, pid)
            assert r.returncode != 0 and token not in r.stdout, (pid, r)
            # bwrap outside the sandbox sits in /, its init inside in the
            # tenant's home (--chdir): never in the caller's directory.
            assert os.readlink(f"/proc/{pid}/cwd") in ("/", host.home(alice)), pid
        assert "/" in [os.readlink(f"/proc/{pid}/cwd") for pid in bwraps], bwraps
        # No process of the helper (root parent, watcher) kept it either.
        for pid in host.helper_pids():
            assert os.readlink(f"/proc/{pid}/cwd") != d, pid
    finally:
        jail.terminate()
        jail.wait(timeout=10)
    assert host.wait_gone(alice)
    lines = host.audit_lines(f"session={s}", want=2)
    assert any("decision=allow" in l for l in lines), lines
