"""Who may invoke the helper: root, sudo from the proxy user, the setuid
binary by an allowed caller; everyone else is refused and audit-logged."""
import os
import re
import stat
import subprocess

from conftest import INTRUDER, OUTSIDER, PROXY, REPO, new_session


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


def test_proxy_user_through_the_shipped_sudoers_dropin(host, alice):
    # install/sudoers.d/clihost-jail, with the test's proxy user and helper path.
    shipped = open(os.path.join(REPO, "install", "sudoers.d", "clihost-jail")).read()
    text = shipped.replace("/usr/libexec/clihost-jail/clihost-jail", host.bin)
    text = re.sub(r"^clihost(\s)", PROXY + r"\1", text, flags=re.M)
    assert PROXY in text and host.bin in text
    dropin = "/etc/sudoers.d/ctj-test"
    with open(dropin, "w") as f:
        f.write(text)
    os.chmod(dropin, 0o440)
    try:
        assert subprocess.run(["visudo", "-cf", dropin], capture_output=True).returncode == 0
        s = new_session()
        caller_env = {"PATH": "/usr/bin:/bin", "TERM": "xterm", "TTYD_PASSWORD": "hunter2"}
        r = host.run_as(PROXY, ["sudo", "-n", *host.jail(alice, "id -un; echo $TTYD_SANDBOX; env", session=s)],
                        env=caller_env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split()[:2] == [alice, "true"]
        assert "hunter2" not in r.stdout
        lines = host.audit_lines(f"session={s}")
        assert any("via=sudo" in l and f"caller={PROXY}" in l for l in lines), lines
        # the drop-in allows run, kill and check only
        p = host.run_as(PROXY, ["sudo", "-n", host.bin, "print", "--user", alice, "--session", "x"])
        assert p.returncode != 0 and "clihost-jail plan" not in p.stdout
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
