"""check reports the host and exits 0 only when a jail can start and no
route around it is open (test_routes.py); print shows the exact plan,
shell-quoted, and it is what run executes."""
import os
import pwd
import shlex
import subprocess

from conftest import PROXY, STUB_TARGET, TEST_SSHD_DROP_IN, new_session, pids, routes_closed, wait_until


def test_check_reports_a_startable_jail(host, alice):
    """Root's `clihost-jail check` (the admin program, exec'd by the front:
    check is not the setuid binary's, test_programs.py)."""
    with routes_closed(alice):
        r = host.run_root([host.bin, "check", "--user", alice])
    assert r.returncode == 0, r.stdout + r.stderr
    for key in ["invocation: root", "config:", "bwrap: /usr/bin/bwrap: ok", "bubblewrap",
                f"attach stub: {STUB_TARGET}: ok",
                "user namespaces: yes", "fresh procfs: yes", "host /proc hidepid=invisible:",
                f"tenant: {alice}: ok", "pam account: ok", "jail trial: ok", "jail shell: /usr/bin/bash: ok",
                "routes around the jail: all closed", "result: a jail can start"]:
        assert key in r.stdout, key


def test_check_fails_with_exit_3_when_bwrap_is_missing(host):
    conf = host.config_variant({"jail": "bwrap = /nonexistent/bwrap"})
    r = host.run_root([host.bin, "check"], config=conf)
    assert r.returncode == 3
    assert "bwrap: FAIL" in r.stdout and "result: refused: a jail cannot start (bwrap" in r.stdout


def test_check_fails_with_exit_3_when_the_attach_stub_is_missing(host):
    """Every attach jail and one-off jail runs it: without it none can start. Control:
    with it back, check says ok for it."""
    os.rename(STUB_TARGET, STUB_TARGET + ".away")
    try:
        r = host.run_root([host.bin, "check"])
    finally:
        os.rename(STUB_TARGET + ".away", STUB_TARGET)
    assert r.returncode == 3
    assert f"attach stub: FAIL: {STUB_TARGET}: the attach stub cannot open {STUB_TARGET}: No such file" in r.stdout, r.stdout
    assert "result: refused: a jail cannot start (attach stub" in r.stdout
    r = host.run_root([host.bin, "check"])
    assert f"attach stub: {STUB_TARGET}: ok" in r.stdout, r.stdout


def test_checks_last_line_says_what_its_exit_status_says_on_every_path(host, alice):
    """Issue 41, item 3: the guide says go live on exit 0 only, so the last
    line never contradicts the status: "result: a jail can start" with 0,
    "result: refused: " and why with anything else: a route around the jail
    open (and nothing else), a problem, both, a refused tenant, a bad
    command line, a config that does not load. Control: the same probe
    passes the exit-0 path."""
    def last_line(r):
        lines = r.stdout.splitlines()
        return lines[-1] if lines else ""

    bad_bwrap = host.config_variant({"jail": "bwrap = /nonexistent/bwrap"})
    bad_conf = host.config_variant({"jail": "no_such_key = 1"})
    with routes_closed(alice):
        ok = host.run_root([host.bin, "check", "--user", alice])
        problem = host.run_root([host.bin, "check", "--user", alice], config=bad_bwrap)
        os.unlink(TEST_SSHD_DROP_IN)  # sshd lets alice in: the one open route (restored after)
        route = host.run_root([host.bin, "check", "--user", alice])
        both = host.run_root([host.bin, "check", "--user", alice], config=bad_bwrap)
    tenant = host.run_root([host.bin, "check", "--user", "root"])
    usage = host.run_root([host.bin, "check", "--bogus"])
    config = host.run_root([host.bin, "check"], config=bad_conf)
    assert (ok.returncode, last_line(ok)) == (0, "result: a jail can start"), ok
    assert (route.returncode, last_line(route)) == (3, "result: refused: a route around the jail is open (sshd)"), route
    assert problem.returncode == 3 and last_line(problem) == "result: refused: a jail cannot start (bwrap)", problem
    assert both.returncode == 3 and last_line(both) == (
        "result: refused: a jail cannot start (bwrap); a route around the jail is open (sshd)"), both
    assert tenant.returncode == 1 and last_line(tenant).startswith("result: refused: "), tenant
    assert tenant.stderr.startswith("clihost-jail: ") and last_line(tenant)[17:] in tenant.stderr, tenant
    assert usage.returncode == 2 and last_line(usage).startswith("result: refused: "), usage
    assert config.returncode == 3 and last_line(config).startswith("result: refused: "), config
    assert "no_such_key" in last_line(config), config


def test_check_refuses_an_invalid_tenant(host):
    r = host.run_root([host.bin, "check", "--user", "root"])
    assert r.returncode == 1
    assert r.stderr.startswith("clihost-jail: ") and r.stderr.count("\n") == 1, r.stderr


def test_check_fails_for_a_tenant_that_run_would_refuse_in_pam(host, alice):
    """An expired account passes the helper's own tenant checks but not PAM's
    account check: check must say so (exit 3), as run would refuse it."""
    with routes_closed(alice):
        subprocess.run(["usermod", "-e", "1", alice], check=True)
        try:
            r = host.run_root([host.bin, "check", "--user", alice])
            assert r.returncode == 3, r.stdout + r.stderr
            assert "pam account: FAIL" in r.stdout and "result: refused: a jail cannot start (pam account)" in r.stdout, r.stdout
            assert "jail trial" not in r.stdout
        finally:
            subprocess.run(["usermod", "-e", "", alice], check=True)
        assert host.run_root([host.bin, "check", "--user", alice]).returncode == 0


def test_check_fails_when_bwrap_cannot_even_print_its_version(host, alice):
    fake = os.path.join(host.prefix, "broken-bwrap")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\nexit 1\n")
    os.chmod(fake, 0o755)
    try:
        conf = host.config_variant({"jail": f"bwrap = {fake}"})
        r = host.run_root([host.bin, "check"], config=conf)
        assert r.returncode == 3, r.stdout + r.stderr
        assert "bwrap: FAIL" in r.stdout and "--version failed" in r.stdout, r.stdout
    finally:
        os.unlink(fake)


def test_print_is_the_exact_plan_and_runs_as_printed(host, alice):
    s = new_session()
    r = host.run_root([host.bin, "print", "--user", alice, "--session", s],
                      env={"TERM": "xterm", "TTYD_PASSWORD": "x"})
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    # Two jails: the tenant's session jail (started if absent) and this
    # connection's attach jail; each a header and its command line. The
    # isolated session jail also shows its network (comment lines).
    lines = [l for l in out if not l.startswith("#") or l.startswith("# clihost-jail plan:")]
    assert len(lines) == 4, out
    assert lines[0].startswith(f"# clihost-jail plan: session jail, tenant {alice}, session {s}, /proc private")
    assert lines[0].endswith(", network isolated"), lines[0]
    assert lines[2].startswith(f"# clihost-jail plan: attach jail, tenant {alice}, session {s}, /proc private")
    assert lines[2].endswith(", network none"), lines[2]
    # What the printed attach argv becomes when the supervisor holds the
    # tenant's empty network namespace (test_network.py runs it).
    assert out[out.index(lines[2]) + 1] == (
        "# at attach, the jail joins the tenant's empty network namespace, which its supervisor holds while the "
        "session jail runs, as root before the drop, and bwrap runs without --unshare-net"), out
    net = out[out.index(lines[1]) + 1:out.index(lines[2])]
    uid = pwd.getpwnam(alice).pw_uid
    assert net == [f"# network: run as uid {uid} with group clihost-jail-net only, on the jail's namespaces:",
                   "#   /usr/bin/slirp4netns --configure --mtu=65520 --disable-host-loopback --enable-ipv6 "
                   "--enable-seccomp --ready-fd=5 --exit-fd=6 --userns-path=/proc/self/fd/3 --netns-type=path "
                   "/proc/self/fd/4 tap0",
                   "# /etc/resolv.conf in the jail (fd 7):",
                   "#   # clihost-jail: the jail's DNS is slirp4netns's forwarder, which asks the host's resolver",
                   "#   nameserver 10.0.2.3"], net
    sock = f"{host.home(alice)}/.cache/tmux/clihost.sock"
    commands = {"session": ["/usr/bin/tmux", "-S", sock, "-D"],
                "attach": ["/usr/bin/tmux", "-N", "-S", sock, "set-option", "-s", "exit-empty", "on", ";",
                           "new-session", "-A", "-s", s]}
    # The attach jail starts before its connection: its bwrap runs the
    # attach stub with no variable, and the stub, handed the terminal,
    # execs the client with the connection's environment.
    handed = "# then the stub, handed the terminal, execs: "
    assert out[out.index(lines[3]) + 1].startswith(handed), out
    client = shlex.split(out[out.index(lines[3]) + 1][len(handed):])
    for line, kind in ((lines[1], "session"), (lines[3], "attach")):
        words = shlex.split(line)
        assert words[:2] == ["env", "-i"]
        bwrap = words.index("/usr/bin/bwrap")
        argv = words[bwrap:]
        if kind == "attach":
            assert words[2:bwrap] == [] and argv[argv.index("--") + 1:] == [STUB_TARGET]
            assert argv[argv.index("--clearenv") + 1] != "--setenv"
            assert client[:2] == ["env", "-i"]
            tmux = client.index("/usr/bin/tmux")
            env, command = client[2:tmux], client[tmux:]
        else:
            env, command = words[2:bwrap], argv[argv.index("--") + 1:]
            assert argv[argv.index("--clearenv") + 1] == "--setenv"
        assert "TTYD_SANDBOX=true" in env and "TERM=xterm" in env
        assert not any(e.startswith("TTYD_PASSWORD") for e in env)
        assert command == commands[kind]
        assert ["--proc", "/proc"] == argv[argv.index("--proc"):argv.index("--proc") + 2]
        assert "--die-with-parent" in argv and "--unshare-pid" in argv
        # Both without the host's network: the attach jail has none, the
        # session jail waits (--block-fd) for slirp4netns on its own. The
        # attach jail waits for nothing: its front ran the PAM account check
        # before handing the terminal over.
        assert "--unshare-net" in argv
        assert (argv[argv.index("--unshare-net") + 1:argv.index("--unshare-net") + 5] ==
                ["--info-fd", "5", "--block-fd", "6"]) == (kind == "session")
        assert argv.count("--block-fd") == (1 if kind == "session" else 0)
        assert (["--ro-bind-data", "7", "/etc/resolv.conf"] ==
                argv[argv.index("--ro-bind-data"):argv.index("--ro-bind-data") + 3]
                if "--ro-bind-data" in argv else False) == (kind == "session")
        assert ("--new-session" in argv) == (kind == "session")


def test_print_with_the_host_network_shares_it_and_warns(host, alice):
    conf = host.config_variant(replace={"jail": {"network": "host"}})
    r = host.run_root([host.bin, "print", "--user", alice, "--session", "s"], config=conf)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].endswith(", network host"), out[0]
    assert out[1] == ("# warning: network = host: the jail shares the host's network (services on its loopback "
                      "and addresses, other tenants' listeners, abstract sockets)"), out[1]
    session_argv = shlex.split(out[2])
    assert "--unshare-net" not in session_argv and "--block-fd" not in session_argv
    assert not any(l.startswith("# network:") for l in out)
    attach_argv = shlex.split([l for l in out if l.startswith("env -i ")][-1])
    assert "--unshare-net" in attach_argv


def bwrap_of(host, tenant, timeout=10.0):
    """The tenant's outer bwrap process (its parent is the watcher, a fork
    of the supervisor program), once it runs."""
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        for pid in host.processes_of(tenant):
            try:
                if os.readlink(f"/proc/{pid}/exe") != "/usr/bin/bwrap":
                    continue
                ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
                if os.readlink(f"/proc/{ppid}/exe") == host.supervisor_bin:
                    return pid
            except (OSError, ValueError):
                continue
        time.sleep(0.05)
    return None


def test_print_is_exactly_what_runs(host, alice):
    # The one-off plan printed, then the same request run for real: the
    # running bwrap's argv and environment are the printed ones, word for word.
    s = new_session()
    cmd = ["/bin/sh", "-c", "sleep 30"]
    env = {"TERM": "xterm", "PATH": "/usr/bin:/bin"}
    r = host.run_root([host.bin, "print", "--user", alice, "--session", s, "--", *cmd], env=env)
    assert r.returncode == 0, r.stderr
    words = shlex.split([l for l in r.stdout.splitlines() if l.startswith("env -i ")][-1])
    bwrap = words.index("/usr/bin/bwrap")
    printed_env, printed_argv = words[2:bwrap], words[bwrap:]
    proc = subprocess.Popen([host.bin, "run", "--user", alice, "--session", s, "--", *cmd], env=env, cwd="/",
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        pid = bwrap_of(host, alice)
        assert pid, host.processes_of(alice)
        ran_argv = open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0")[:-1]
        ran_env = open(f"/proc/{pid}/environ", "rb").read().decode().split("\0")[:-1]
        assert ran_argv == printed_argv
        # PAM's pam_env variables are added at launch (print says so); none
        # are configured on the test host, so the environments are equal.
        assert ran_env == printed_env
        # bwrap runs the stub, which execs the command with the handed
        # environment: the printed one too.
        handed = [l for l in r.stdout.splitlines() if l.startswith("# then the stub, handed the caller's stdio, execs: ")]
        assert len(handed) == 1, r.stdout
        hwords = shlex.split(handed[0].split("execs: ", 1)[1])
        assert hwords[:2] == ["env", "-i"] and hwords[-len(cmd):] == cmd, hwords
        uid = pwd.getpwnam(alice).pw_uid
        command = lambda: [p for p in pids(uid=uid, live=True)
                           if open(f"/proc/{p}/cmdline", "rb").read().decode().split("\0")[:-1] == cmd]
        assert wait_until(command, 10), host.processes_of(alice)
        environ = open(f"/proc/{command()[0]}/environ", "rb").read().decode().split("\0")[:-1]
        assert environ == hwords[2:-len(cmd)], (environ, hwords)
    finally:
        proc.terminate()
        proc.wait(10)
    assert host.wait_gone(alice)


def test_print_has_no_side_effects(host, alice):
    import os
    cache = os.path.join(host.home(alice), ".cache")
    before = os.path.exists(cache)
    r = host.run_root([host.bin, "print", "--user", alice, "--session", new_session()])
    assert r.returncode == 0
    assert os.path.exists(cache) == before


def test_version_and_help(host):
    assert host.run_as(PROXY, [host.bin, "--version"]).stdout.startswith("clihost-jail ")
    assert "usage:" in host.run_as(PROXY, [host.bin, "--help"]).stdout
