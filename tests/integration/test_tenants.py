"""Tenant validation against real accounts: refused targets never get a jail."""
import os
import pwd
import shutil

import pytest

from conftest import NON_TENANT, PROXY, new_session, sh


def refused(host, tenant, marker_dir="/tmp"):
    s = new_session()
    marker = os.path.join(marker_dir, f"ctj-ran-{s}")
    r = host.run_as(PROXY, host.jail(tenant, f"touch {marker}; echo RAN", session=s))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "RAN" not in r.stdout and not os.path.exists(marker)
    assert r.stderr.startswith("clihost-jail: ") and r.stderr.count("\n") == 1, r.stderr
    assert any("decision=deny" in l for l in host.audit_lines(f"session={s}")), "no audit line"
    return r


def test_root_is_never_a_tenant(host):
    assert "uid 0" in refused(host, "root").stderr


def test_user_outside_the_tenant_group_is_refused(host):
    assert "not a member" in refused(host, NON_TENANT).stderr


def test_unknown_user_is_refused(host):
    assert "no such user" in refused(host, "ctj-nobody-here").stderr


def test_system_uid_below_range_is_refused(host):
    # "daemon" (uid 1) put in the tenant group must still be refused.
    sh("gpasswd", "-a", "daemon", "ctj-tenants")
    try:
        assert "outside" in refused(host, "daemon").stderr
    finally:
        sh("gpasswd", "-d", "daemon", "ctj-tenants", check=False)


@pytest.fixture
def scratch_tenant(host):
    name = host.add_tenant("ctj-dave")
    host.extra_users = ["ctj-dave"]
    yield name
    sh("userdel", "-r", "-f", name, check=False)


def test_symlinked_home_is_refused(host, scratch_tenant, alice):
    home = host.home(scratch_tenant)
    shutil.rmtree(home)
    os.symlink(host.home(alice), home)
    try:
        assert "symlink" in refused(host, scratch_tenant).stderr
    finally:
        os.unlink(home)


def test_world_writable_home_is_refused(host, scratch_tenant):
    os.chmod(host.home(scratch_tenant), 0o777)
    assert "writable" in refused(host, scratch_tenant).stderr


def test_home_owned_by_someone_else_is_refused(host, scratch_tenant):
    os.chown(host.home(scratch_tenant), 0, 0)
    assert "not owned" in refused(host, scratch_tenant).stderr


def test_missing_home_is_refused(host, scratch_tenant):
    shutil.rmtree(host.home(scratch_tenant))
    assert "does not exist" in refused(host, scratch_tenant).stderr


def test_expired_tenant_is_refused_by_pam(host, scratch_tenant):
    sh("usermod", "-e", "1", scratch_tenant)
    assert "PAM" in refused(host, scratch_tenant).stderr


def test_valid_scratch_tenant_is_accepted(host, scratch_tenant):
    r = host.run_as(PROXY, host.jail(scratch_tenant, "id -u"))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) == pwd.getpwnam(scratch_tenant).pw_uid


def test_a_tenant_group_with_a_100_kib_entry_still_admits_its_members(host, alice):
    """A tenant group with thousands of members (its /etc/group line over
    the 64 KiB an NSS buffer used to have) once made getgrnam_r fail with
    ERANGE, and every tenant was refused as "tenant group does not exist"."""
    from conftest import TENANT_GROUP
    with open("/etc/group") as f:
        original = f.read()
    extra = ",".join(f"ctj-member{i:05d}" for i in range(7000))  # names only: no accounts needed
    assert len(extra) > 100 * 1024
    lines = []
    for line in original.splitlines():
        if line.startswith(f"{TENANT_GROUP}:"):
            line = line + ("," if not line.endswith(":") else "") + extra
        lines.append(line)
    try:
        with open("/etc/group", "w") as f:
            f.write("\n".join(lines) + "\n")
        import grp
        assert len(",".join(grp.getgrnam(TENANT_GROUP).gr_mem)) > 100 * 1024  # the control: NSS sees it
        r = host.run_as(PROXY, host.jail(alice, "id -u"))
        assert r.returncode == 0, r.stderr
        assert int(r.stdout) == pwd.getpwnam(alice).pw_uid
        # A non-member is still refused for the right reason.
        r = refused(host, NON_TENANT)
        assert f"not a member of {TENANT_GROUP}" in r.stderr, r.stderr
    finally:
        with open("/etc/group", "w") as f:
            f.write(original)
