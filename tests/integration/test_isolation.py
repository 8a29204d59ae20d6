"""What a tenant sees inside the jail: only its own home, a read-only system,
a private /proc, a clean environment with TTYD_SANDBOX=true.

Every test runs twice: under the default policy, through the proxy, and with
[jail] nested_sandbox = true (root caller, the only one that may name a
config), which must loosen none of it."""
import os

import pytest

from conftest import PROXY, TENANTS

_policy = {}


@pytest.fixture(autouse=True, params=["default", "nested_sandbox"])
def policy(request, host):
    """Which policy jail_sh runs the jail under, for the test at hand."""
    _policy["config"] = (host.config_variant({"jail": "nested_sandbox = true"})
                         if request.param == "nested_sandbox" else None)
    yield request.param
    _policy.clear()


def jail_sh(host, tenant, script, env=None):
    if _policy.get("config"):
        return host.run_root(host.jail(tenant, script), env=env, config=_policy["config"])
    r = host.run_as(PROXY, host.jail(tenant, script), env=env)
    return r


def test_other_tenants_home_does_not_exist(host, alice, bob):
    r = jail_sh(host, alice, f"ls {host.home(bob)} 2>&1; ls -d /root 2>&1; true")
    assert "No such file or directory" in r.stdout.splitlines()[0]
    assert "No such file or directory" in r.stdout.splitlines()[1]


def test_home_lists_only_the_tenant(host, alice):
    r = jail_sh(host, alice, "ls /home")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [os.path.basename(host.home(alice))]


def test_etc_and_usr_are_read_only(host, alice):
    r = jail_sh(host, alice, "touch /etc/ctj-x 2>&1; touch /usr/ctj-x 2>&1; true")
    assert r.stdout.count("Read-only file system") == 2, r.stdout
    assert not os.path.exists("/etc/ctj-x") and not os.path.exists("/usr/ctj-x")


def test_own_home_is_writable_and_persists(host, alice):
    r = jail_sh(host, alice, "echo hello > ~/ctj-file && cat ~/ctj-file")
    assert r.returncode == 0 and r.stdout.strip() == "hello"
    path = os.path.join(host.home(alice), "ctj-file")
    assert open(path).read() == "hello\n"
    assert os.stat(path).st_uid == os.stat(host.home(alice)).st_uid


def test_tmp_is_private(host, alice):
    marker = "/tmp/ctj-host-marker"
    open(marker, "w").close()
    try:
        r = jail_sh(host, alice, f"ls {marker} 2>&1; echo x > /tmp/ctj-inside; true")
        assert "No such file or directory" in r.stdout
        assert not os.path.exists("/tmp/ctj-inside")
    finally:
        os.unlink(marker)


def test_proc_shows_only_jail_processes(host, alice):
    r = jail_sh(host, alice, "ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '")
    pids = [int(p) for p in r.stdout.split()]
    host_pids = [p for p in os.listdir("/proc") if p.isdigit()]
    assert len(host_pids) > 10
    # bwrap's init, sh, ls, grep, sort, tr: a handful of small pids, nothing of the host.
    assert 1 in pids and len(pids) <= 8 and max(pids) < 20, pids


def test_environment_is_clean_and_secrets_do_not_leak(host, alice):
    caller_env = {"PATH": "/tmp/evil:/usr/bin:/bin", "TTYD_PASSWORD": "hunter2",
                  "PASSWORD_SECRET_KEY": "s3cret", "LD_PRELOAD": "/tmp/x.so", "TTYD_SANDBOX": "false",
                  "TERM": "xterm-256color", "LANG": "C.UTF-8", "IFS": "x", "TMUX": "/tmp/x,1,0"}
    r = jail_sh(host, alice, "env", env=caller_env)
    assert r.returncode == 0, r.stderr
    env = dict(l.split("=", 1) for l in r.stdout.splitlines() if "=" in l)
    assert env["TTYD_SANDBOX"] == "true"
    assert env["TERM"] == "xterm-256color"
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert env["HOME"] == host.home(alice)
    assert env["USER"] == alice and env["LOGNAME"] == alice
    for k in ["TTYD_PASSWORD", "PASSWORD_SECRET_KEY", "LD_PRELOAD", "IFS", "TMUX"]:
        assert k not in env, k
    assert "hunter2" not in r.stdout and "s3cret" not in r.stdout


def test_no_capabilities_and_no_new_privs_inside(host, alice):
    r = jail_sh(host, alice, "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status")
    fields = dict(l.split(":\t") for l in r.stdout.splitlines())
    assert fields["NoNewPrivs"] == "1"
    for k in ["CapEff", "CapPrm", "CapBnd", "CapAmb"]:
        assert int(fields[k], 16) == 0, (k, fields[k])


def test_the_network_is_the_jails_own(host, alice):
    """network = isolated (the default): a namespace of its own whose only
    interfaces are its loopback and slirp4netns's tap0 (test_network.py
    proves what it can and cannot reach)."""
    r = jail_sh(host, alice, "readlink /proc/self/ns/net; echo $(tail -n +3 /proc/net/dev | cut -d: -f1 | sort)")
    assert r.returncode == 0, r
    netns, ifaces = r.stdout.splitlines()
    assert netns != os.readlink("/proc/self/ns/net")
    assert ifaces.split() == ["lo", "tap0"], ifaces


def test_network_host_shares_the_hosts_network(host, alice):
    """Control for the test above: the same probe sees the host's namespace."""
    conf = host.config_variant(replace={"jail": {"network": "host", **(
        {"nested_sandbox": "true"} if _policy.get("config") else {})}})
    r = host.run_root(host.jail(alice, "readlink /proc/self/ns/net"), config=conf)
    assert r.returncode == 0, r
    assert r.stdout.strip() == os.readlink("/proc/self/ns/net")


def test_tenants_are_in_separate_pid_and_user_namespaces(host, alice):
    r = jail_sh(host, alice, "readlink /proc/self/ns/pid /proc/self/ns/user /proc/self/ns/ipc")
    inside = r.stdout.split()
    outside = [os.readlink(f"/proc/self/ns/{n}") for n in ("pid", "user", "ipc")]
    assert len(inside) == 3
    assert all(i != o for i, o in zip(inside, outside))


def test_the_policy_under_test_is_in_force(host, alice, policy):
    """Control for the parametrization: the nested_sandbox run really allows
    nested user namespaces and the default really refuses them, so the tests
    above ran under both policies."""
    r = jail_sh(host, alice, "unshare -U -r id -u 2>&1; true")
    if policy == "nested_sandbox":
        assert r.stdout == "0\n", r.stdout
    else:
        assert r.stdout == "unshare: unshare failed: No space left on device\n", r.stdout
