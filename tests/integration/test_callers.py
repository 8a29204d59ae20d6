"""Who may invoke the helper: root, sudo from the proxy user, the setuid
binary by an allowed caller; everyone else is refused and audit-logged."""
import os
import stat

from conftest import INTRUDER, OUTSIDER, PROXY, new_session


def test_installed_binary_is_setuid_root_and_only_group_executable(host):
    st = os.stat(host.bin)
    assert st.st_uid == 0
    assert stat.S_IMODE(st.st_mode) == 0o4750


def test_allowed_caller_through_setuid_gets_a_jail_as_the_tenant(host, alice):
    r = host.run_as(PROXY, host.jail(alice, "id -un; echo sandbox=$TTYD_SANDBOX"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [alice, "sandbox=true"]


def test_exec_group_member_not_in_callers_is_refused_and_audited(host, alice):
    s = new_session()
    r = host.run_as(INTRUDER, host.jail(alice, "echo RAN", session=s))
    assert r.returncode == 1
    assert "RAN" not in r.stdout
    assert r.stderr.startswith("clihost-jail: ")
    assert "not allowed" in r.stderr
    lines = host.audit_lines(f"session={s}")
    assert any("decision=deny" in l and f"caller={INTRUDER}" in l for l in lines), lines


def test_user_outside_the_exec_group_cannot_execute_it(host, alice):
    try:
        r = host.run_as(OUTSIDER, host.jail(alice, "echo RAN"))
        assert False, f"exec should fail, got {r.returncode}"
    except PermissionError:
        pass


def test_root_may_invoke(host, alice):
    r = host.run_root(host.jail(alice, "id -un"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == alice


def test_sandbox_flag_survives_runuser_from_root_to_the_caller(host, alice):
    # The old chain lost TTYD_SANDBOX through runuser's environment reset.
    r = host.run_root(["/usr/sbin/runuser", "-u", PROXY, "--", *host.jail(alice, "echo $TTYD_SANDBOX")],
                      env={"PATH": "/usr/bin:/bin", "TTYD_SANDBOX": "false"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "true"


def test_sandbox_flag_survives_sudo_to_the_caller(host, alice):
    r = host.run_root(["sudo", "-n", "-u", PROXY, "--", *host.jail(alice, "echo $TTYD_SANDBOX")],
                      env={"PATH": "/usr/bin:/bin", "TTYD_SANDBOX": "false"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "true"


def test_proxy_user_through_real_sudo_is_sudo_mode(host, alice):
    dropin = "/etc/sudoers.d/ctj-test"
    with open(dropin, "w") as f:
        f.write(f"{PROXY} ALL=(root) NOPASSWD: {host.bin}\n")
    os.chmod(dropin, 0o440)
    try:
        s = new_session()
        r = host.run_as(PROXY, ["sudo", "-n", *host.jail(alice, "id -un; echo $TTYD_SANDBOX", session=s)])
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [alice, "true"]
        lines = host.audit_lines(f"session={s}")
        assert any("via=sudo" in l and f"caller={PROXY}" in l for l in lines), lines
    finally:
        os.unlink(dropin)


def test_config_override_is_ignored_for_setuid_callers(host, alice):
    # Only real uid 0 may point the helper at another policy file.
    bad = host.config_variant({"callers": f"users = {INTRUDER}"})
    r = host.run_as(INTRUDER, host.jail(alice, "echo RAN"),
                    env={"PATH": "/usr/bin:/bin", "CLIHOST_JAIL_CONFIG": bad})
    assert r.returncode == 1
    assert "RAN" not in r.stdout


def test_unknown_verb_is_a_usage_error(host):
    r = host.run_as(PROXY, [host.bin, "shell"])
    assert r.returncode == 2
    assert r.stderr.startswith("clihost-jail: ")
