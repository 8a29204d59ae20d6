"""Attacks through the environment of the setuid helper, by its allowed caller
(ctj-proxy): loader variables, gconv modules, PATH, shell variables, HOME,
TMUX, a forged TTYD_SANDBOX, and an empty argv (argc 0, the pkexec bug).
The loader variables are tried from a real root caller too, where glibc's
AT_SECURE strips nothing and only the helper stands between them and bwrap.

Each attack must be refused or harmless: no payload runs outside the jail
(the payloads leave a marker in the host's /tmp, invisible from the jail),
the jailed command still runs inside (its own pid namespace,
TTYD_SANDBOX=true), no file outside the tenant's home changes, and the
helper writes its audit line."""
import os
import pwd
import shutil
import signal
import stat
import tempfile
import threading

import pytest

from attackutil import INSIDE, MARK_C, Guard, _cc, assert_inside, assert_refusal_line, guard, has_tmux_session, \
    payloads, pid_audit, pids_named, spawn, tmux_sock, wait_until  # noqa: F401 (fixtures)
from conftest import NON_TENANT, PROXY, new_session, pam_closed, refused, routes_closed
from ptyutil import PtyProcess, attach_once

BASE = {"PATH": "/usr/bin:/bin"}
# The controls preload into the plain (not setuid) binary; an ASan build
# (tests/sanitize.sh) would refuse a preload that comes before its runtime.
CONTROL = {**BASE, "ASAN_OPTIONS": "verify_asan_link_order=0"}


def launch_inside(host, tenant, env, extra=""):
    """A jailed shell as the proxy with env; returns (Ran, session)."""
    s = new_session()
    r = spawn(host.jail(tenant, INSIDE + "; " + extra if extra else INSIDE, session=s), env=env)
    return r, s


def assert_allowed_and_audited(host, s):
    lines = host.audit_lines(f"session={s}", want=2, until=pam_closed)
    assert any("decision=allow" in l for l in lines), lines
    assert any("decision=exit" in l and "PAM session closed" in l for l in lines), lines


def refusal_with(host, env):
    """The refusal path (error messages, no jail) under the same environment."""
    r = spawn(host.jail(NON_TENANT, "echo RAN"), env=env)
    # ld.so itself may complain about a preload it ignores; the rest is ours.
    r.stderr = "".join(l for l in r.stderr.splitlines(True) if not l.startswith("ERROR: ld.so:"))
    assert_refusal_line(r, codes=(1,))
    assert "RAN" not in r.stdout
    assert any("decision=deny" in l for l in pid_audit(host, r, until=refused))


def test_ld_preload_and_ld_audit_are_not_loaded_into_the_setuid_helper(host, alice, payloads, guard):
    # Control: the same library is loaded by the same binary without the setuid bit.
    c = spawn([payloads.plain_bin, "--version"], env={**CONTROL, "LD_PRELOAD": payloads.preload_so})
    assert c.returncode == 0 and any(m.startswith("preload.") for m in payloads.found()), payloads.found()
    payloads.clear()

    for var, value in [("LD_PRELOAD", payloads.preload_so), ("LD_PRELOAD", "libctjpreload.so"),
                       ("LD_AUDIT", payloads.preload_so)]:
        env = {**BASE, var: value, "LD_LIBRARY_PATH": payloads.dir}
        r, s = launch_inside(host, alice, env, extra=f'echo "{var}=${{{var}-unset}}"')
        assert r.returncode == 0, r
        assert_inside(host, alice, r.stdout)
        assert f"{var}=unset" in r.stdout, r.stdout
        assert_allowed_and_audited(host, s)
        refusal_with(host, env)
    guard.check()


def test_ld_library_path_cannot_substitute_a_library_of_the_helper(host, alice, payloads, guard):
    # Control: a fake libpam.so.0 (with "succeeding" stubs) is picked up by
    # the helper's own dlopen call when nothing stops it. (libcap-ng is now
    # linked statically; its fake is in the directory too.)
    c = spawn([payloads.dlopen_pam], env={**CONTROL, "LD_LIBRARY_PATH": payloads.libdir})
    assert c.returncode == 0 and any(m.startswith("ldlibpath.") for m in payloads.found()), payloads.found()
    payloads.clear()

    env = {**BASE, "LD_LIBRARY_PATH": payloads.libdir}
    r, s = launch_inside(host, alice, env, extra='echo "LDLP=${LD_LIBRARY_PATH-unset}"; '
                                                 "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
    assert r.returncode == 0, r
    assert_inside(host, alice, r.stdout)
    assert "LDLP=unset" in r.stdout
    fields = dict(l.split(":\t") for l in r.stdout.splitlines() if ":\t" in l)
    assert int(fields["CapEff"], 16) == 0 and int(fields["CapBnd"], 16) == 0 and fields["NoNewPrivs"] == "1"
    assert_allowed_and_audited(host, s)
    refusal_with(host, env)
    guard.check()


def test_gconv_path_and_charset_trick_load_no_module(host, alice, payloads, guard):
    # Control: iconv loads the module from GCONV_PATH when nothing stops it.
    c = spawn(["iconv", "-f", "CTJEVIL", "-t", "UTF-8", "/dev/null"], env={**BASE, "GCONV_PATH": payloads.gconv_dir})
    assert any(m.startswith("gconv.") for m in payloads.found()), (c, payloads.found())
    payloads.clear()

    # pkexec's trick: a charset whose converter is the payload, selected
    # through CHARSET / the locale variables, for any message the helper or
    # a PAM module might convert.
    env = {**BASE, "GCONV_PATH": payloads.gconv_dir, "CHARSET": "CTJEVIL", "LANG": "C.CTJEVIL",
           "LC_ALL": "C.CTJEVIL", "LC_MESSAGES": "C.CTJEVIL", "OUTPUT_CHARSET": "CTJEVIL"}
    r, s = launch_inside(host, alice, env, extra='echo "GP=${GCONV_PATH-unset} CS=${CHARSET-unset}"; '
                                                 "iconv -f CTJEVIL -t UTF-8 /dev/null 2>/dev/null; echo iconv=$?")
    assert r.returncode == 0, r
    assert_inside(host, alice, r.stdout)
    assert "GP=unset CS=unset" in r.stdout and "iconv=1" in r.stdout, r.stdout
    assert_allowed_and_audited(host, s)
    refusal_with(host, env)
    guard.check()


def environ_of(pid):
    """The environment a process was exec'd with (its initial block)."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        return [e.decode(errors="replace") for e in f.read().split(b"\0") if e]


@pytest.fixture(scope="module")
def capshim(payloads):
    """A directory for LD_LIBRARY_PATH with a libcap.so.2 that bwrap would
    load from it: a marker constructor in front of the real library (copied
    there as libctjrealcap.so.2, its DT_NEEDED), so that everything loading
    it still works. (The fake libcap-ng of Payloads is no use for a root
    caller: the helper itself loads it, and its privilege-drop check then
    refuses every launch; bwrap does not use libcap-ng.)"""
    d = tempfile.mkdtemp(prefix="ctj-attack-capshim-", dir="/tmp")
    os.chmod(d, 0o755)
    real = os.path.join(d, "libctjrealcap.so.2")
    _cc("void ctj_placeholder(void) {}\n", real, "-shared", "-fPIC", "-Wl,-soname,libctjrealcap.so.2")
    _cc(MARK_C, os.path.join(d, "libcap.so.2"), "-shared", "-fPIC", f'-DMARKERS="{payloads.markers}"',
        '-DTAG="capshim"', "-Wl,-soname,libcap.so.2", "-Wl,--no-as-needed", real)
    shutil.copy("/lib/x86_64-linux-gnu/libcap.so.2", real)
    yield d
    shutil.rmtree(d, ignore_errors=True)


# The variables of each attack; the jail may see none of them except the
# locale names that extra_env passes through by design (LANG, LC_ALL: a
# validated name, harmless without GCONV_PATH).
LOADER_ATTACKS = {
    "LD_PRELOAD": lambda p, shim: {"LD_PRELOAD": p.preload_so, "LD_AUDIT": p.preload_so, "LD_LIBRARY_PATH": p.dir},
    "LD_LIBRARY_PATH": lambda p, shim: {"LD_LIBRARY_PATH": shim},
    "GCONV_PATH": lambda p, shim: {"GCONV_PATH": p.gconv_dir, "CHARSET": "CTJEVIL", "LANG": "C.CTJEVIL",
                                   "LC_ALL": "C.CTJEVIL", "LC_MESSAGES": "C.CTJEVIL", "OUTPUT_CHARSET": "CTJEVIL"},
}
PASSED_BY_DESIGN = {"LANG", "LC_ALL"}


@pytest.mark.parametrize("attack", sorted(LOADER_ATTACKS))
def test_loader_variables_of_a_root_caller_reach_neither_bwrap_nor_the_jail(host, alice, payloads, capshim, guard,
                                                                             attack):
    """The loader variables of the tests above, from a caller that really is
    root: no setuid transition, so glibc's AT_SECURE strips nothing and the
    loader honours them for the helper itself (markers with ruid 0 and euid
    0, before the helper's clearenv can act: root running code of root's
    own choice as root, out of scope). What must hold is that the helper
    passes none of them on: not to bwrap, which runs as the tenant on the
    host's filesystem before any sandbox exists (its /proc/PID/environ, read
    while the jail runs), not into the jail (/proc/self/environ there), and
    no payload runs as anyone but root outside the jail (a leaked
    LD_PRELOAD or LD_LIBRARY_PATH would load one into bwrap, as the tenant:
    the controls show it)."""
    attack_env = LOADER_ATTACKS[attack](payloads, capshim)
    env = {**CONTROL, **attack_env}  # (CONTROL: an ASan build of the helper takes the preload too)
    if attack != "GCONV_PATH":  # Control: bwrap loads the payload when it gets the variables.
        c = spawn(["/usr/bin/bwrap", "--version"], env=env)
        uid = pwd.getpwnam(PROXY).pw_uid
        assert c.returncode == 0 and any(m.endswith(f".ruid{uid}.euid{uid}") for m in payloads.found()), \
            (c, payloads.found())
        payloads.clear()

    s = new_session()
    home = host.home(alice)
    ready, go = os.path.join(home, f"ctj-ready-{s}"), os.path.join(home, f"ctj-go-{s}")
    # cat reads its own environment (a `< /proc/self/environ` redirect opens
    # the forked shell's, which reads empty once that process has exec'd).
    # Then the jail waits, so that bwrap's environment can be read.
    script = (INSIDE + "; cat /proc/self/environ | tr '\\0' '\\n' | sed 's/^/CTJ_ENV /'; "
              f": > {ready}; i=0; while [ ! -e {go} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done")
    out = {}
    t = threading.Thread(target=lambda: out.update(r=spawn(host.jail(alice, script, session=s), user=None,
                                                             env=env)))
    t.start()
    try:
        assert wait_until(lambda: os.path.exists(ready), 20), out
        bwraps = pids_named(host, alice, "bwrap")
        assert bwraps, "no bwrap of the tenant while its jail runs"
        bwrap_env = [e for pid in bwraps for e in environ_of(pid)]
        # The control that environ_of reads a jail's processes: the jail's
        # shell, exec'd by the stub with its environment.
        shells = [p for p in pids_named(host, alice, "sh") if s in open(f"/proc/{p}/cmdline").read()]
        shell_env = [e for pid in shells for e in environ_of(pid)]
    finally:
        with open(go, "w"):
            pass
        t.join(60)
        for p in (ready, go):
            if os.path.exists(p):
                os.unlink(p)
    assert "r" in out, "the helper did not return"
    r = out["r"]
    assert r.returncode == 0, r
    assert_inside(host, alice, r.stdout)
    jail_env = [l.split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith("CTJ_ENV ")]
    # bwrap gets no environment at all (--clearenv, and the stub is handed
    # the command's); the jail's shell has its own, the control.
    assert "TTYD_SANDBOX=true" in jail_env and "TTYD_SANDBOX=true" in shell_env, (r, jail_env, shell_env)
    assert bwrap_env == [], bwrap_env
    banned = (set(attack_env) | {"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH"}) - PASSED_BY_DESIGN
    for where, envs in [("jail", jail_env), ("bwrap", bwrap_env)]:
        leaked = {e.split("=", 1)[0] for e in envs} & banned
        assert not leaked, (where, leaked, envs)
        assert not any(payloads.dir in e or capshim in e for e in envs), (where, envs)
    assert_allowed_and_audited(host, s)
    # Markers of the root helper itself, and only those: nothing ran as the
    # tenant (or anyone else) outside the jail. The preload's own marker
    # shows the variable really was live for this caller.
    ran = payloads.found()
    assert all(m.endswith(".ruid0.euid0") for m in ran), ran
    if attack == "LD_PRELOAD":
        assert any(m.startswith("preload.") for m in ran), ran
    payloads.clear()
    guard.check()


def test_path_cannot_substitute_bwrap_tmux_or_sh(host, alice, payloads, guard):
    env = {"PATH": f"{payloads.fakebin}:/usr/bin:/bin"}
    # Control: the fakes run when PATH is honoured.
    spawn(["sh", "-c", "bwrap --version; tmux -V; true"], user=PROXY, env=env)
    assert {m.split(".")[0] for m in payloads.found()} >= {"path-sh", "path-bwrap", "path-tmux"}, payloads.found()
    payloads.clear()

    # A caller command: the jail's PATH is the fixed safe one.
    r, s = launch_inside(host, alice, env, extra='echo "PATH=$PATH"; command -v tmux')
    assert r.returncode == 0, r
    assert_inside(host, alice, r.stdout)
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in r.stdout and "/usr/bin/tmux" in r.stdout
    assert_allowed_and_audited(host, s)
    # The default command (the session jail's tmux server and the attach
    # jail's client, both by absolute path), on a terminal, hung up once
    # its client drew its screen, and kill (a tmux client in a jail,
    # refused once no session jail runs).
    s2 = new_session()
    r = attach_once([host.bin, "run", "--user", alice, "--session", s2], env=dict(env, TERM="xterm-256color"))
    assert r.returncode == 128 + signal.SIGHUP, r
    started = lambda l: "decision=allow" in l and "attach jail started" in l
    lines = host.audit_lines(f"session={s2}", until=started)
    assert any(started(l) for l in lines), lines
    assert host.run_root([host.bin, "stop", "--user", alice]).returncode == 0
    assert host.wait_gone(alice), host.processes_of(alice)
    r = spawn([host.bin, "kill", "--user", alice, "--session", s2], env=env)
    assert r.returncode == 1 and "has no session jail" in r.stderr, r
    assert any("action=kill" in l for l in pid_audit(host, r))
    # check is root's (the admin program, which the front execs with an
    # environment of its own making): as root, with the same PATH, it execs
    # bwrap --version, a trial jail and sshd -T (routes_closed: so that the
    # exit status is 0 only if all of them went well).
    with routes_closed(alice):
        r = spawn([host.bin, "check", "--user", alice], user=None, env=env)
    assert r.returncode == 0 and "jail trial: ok" in r.stdout, r
    assert f"route sshd ({alice}): ok (refused by DenyGroups" in r.stdout, r
    assert pid_audit(host, r)
    guard.check()


def test_ifs_and_shell_startup_variables_do_not_reach_the_jail(host, alice, payloads, guard):
    # A script the tenant's shells would source if ENV/BASH_ENV leaked in.
    home = host.home(alice)
    hook = os.path.join(home, "ctj-hook.sh")
    leak = os.path.join(home, "ctj-hook-ran")
    with open(hook, "w") as f:
        f.write(f": > {leak}\n")
    for p in (leak,):
        if os.path.exists(p):
            os.unlink(p)
    env = {**BASE, "IFS": "/ \t\nx", "ENV": hook, "BASH_ENV": hook, "SHELLOPTS": "xtrace", "PS4": "$(: > /tmp/x)",
           "BASHOPTS": "extdebug", "PROMPT_COMMAND": f": > {leak}", "CDPATH": "/"}
    try:
        r, s = launch_inside(host, alice, env, extra="env | cut -d= -f1 | sort | tr '\\n' ' '; echo; "
                                                     "bash -c 'echo BASH_OK'; sh -i -c 'echo SH_OK' 2>/dev/null")
        assert r.returncode == 0, r
        assert_inside(host, alice, r.stdout)
        names = set(r.stdout.splitlines()[1].split())
        assert names.isdisjoint({"IFS", "ENV", "BASH_ENV", "SHELLOPTS", "PS4", "BASHOPTS", "PROMPT_COMMAND",
                                 "CDPATH"}), names
        assert "BASH_OK" in r.stdout and "SH_OK" in r.stdout and "+ " not in r.stderr
        assert not os.path.exists(leak)
        assert_allowed_and_audited(host, s)
        refusal_with(host, env)
    finally:
        os.unlink(hook)
    guard.check()


def test_home_from_the_caller_is_ignored(host, alice, bob, payloads, guard):
    for fake in ["/root", host.home(bob), guard.ww_canary]:
        r, s = launch_inside(host, alice, {**BASE, "HOME": fake},
                             extra='echo "HOME=$HOME"; cd && pwd && echo x > ~/ctj-home-probe')
        assert r.returncode == 0, r
        assert_inside(host, alice, r.stdout)
        assert f"HOME={host.home(alice)}" in r.stdout
        probe = os.path.join(host.home(alice), "ctj-home-probe")
        assert os.stat(probe).st_uid == pwd.getpwnam(alice).pw_uid
        os.unlink(probe)
        assert_allowed_and_audited(host, s)
    guard.check()


def test_tmux_variables_cannot_reach_another_tenants_server(host, alice, bob, payloads):
    # bob has a live tmux session; alice's caller points TMUX/TMUX_TMPDIR at
    # bob's server and asks to kill a session of that name.
    bs = new_session()
    t = PtyProcess([host.bin, "run", "--user", bob, "--session", bs], user=PROXY)
    g = None
    try:
        assert wait_until(lambda: has_tmux_session(host, bob, bs)), t.output()
        # bob's home is the target, so it is guarded too, his live socket
        # included: tmux marks it executable while a client is attached (wait
        # for that before the snapshot), so the guard also sees bob's client
        # detached (the mode flips back), besides any file added or changed.
        sock = tmux_sock(host, bob)
        assert wait_until(lambda: os.stat(sock).st_mode & stat.S_IXUSR), oct(os.stat(sock).st_mode)
        g = Guard(host, payloads, alice, others=[bob])
        assert host.home(bob) in g.paths and g.before.get(sock), g.paths
        env = {**BASE, "TMUX": f"{tmux_sock(host, bob)},1,0", "TMUX_TMPDIR": os.path.dirname(tmux_sock(host, bob)),
               "TMUX_PANE": "%0"}
        s = new_session()
        r = spawn([host.bin, "kill", "--user", alice, "--session", bs], env=env)
        assert r.returncode != 0, r
        assert any(f"tenant={alice}" in l for l in pid_audit(host, r))  # the attempt is audited
        r, s = launch_inside(host, alice, env, extra="env | grep -c '^TMUX' ; tmux list-sessions 2>&1 | head -1")
        assert r.returncode == 0, r
        assert_inside(host, alice, r.stdout)
        assert r.stdout.splitlines()[1] == "0", r.stdout
        assert bs not in r.stdout
        assert_allowed_and_audited(host, s)
        assert has_tmux_session(host, bob, bs)
        g.check()
    finally:
        if g:
            g.cleanup()
        host.run_root([host.bin, "kill", "--user", bob, "--session", bs])
        t.wait(10)
        t.close()


def test_forged_ttyd_sandbox_is_overridden(host, alice, payloads, guard):
    # Raw envp: the variable twice, once empty, once "false" (dict-based
    # launchers cannot even express this).
    s = new_session()
    argv = host.jail(alice, INSIDE + "; env | grep -c '^TTYD_SANDBOX='", session=s)
    r = spawn([payloads.execve, argv[0], str(len(argv)), *argv, "PATH=/usr/bin:/bin", "TTYD_SANDBOX=false",
               "TTYD_SANDBOX=", "TTYD_SANDBOX=false", "TERM=xterm"], env={})
    assert r.returncode == 0, r
    assert_inside(host, alice, r.stdout)
    assert r.stdout.splitlines()[-1] == "1", r.stdout
    assert_allowed_and_audited(host, s)
    guard.check()


def test_empty_argv_is_a_usage_error(host, alice, payloads, guard):
    # argc 0: argv[1] must not be read from envp[0] (pkexec, CVE-2021-4034).
    # envp[0..] are the strings a confused parser would take for arguments,
    # plus the gconv payload of that exploit.
    tricks = [[], ["run", "--user", alice, "--session", "x", "--", "/bin/sh", "-c", "echo RAN"],
              ["ctjx", "PATH=GCONV_PATH=.", f"GCONV_PATH={payloads.gconv_dir}", "CHARSET=CTJEVIL",
               "SHELL=/nonexistent"]]
    for envp in tricks:
        r = spawn([payloads.execve, host.bin, "0", *envp], env={})
        assert_refusal_line(r, codes=(2,))
        assert "RAN" not in r.stdout and "missing command" in r.stderr, r
        lines = pid_audit(host, r)
        assert any("decision=deny" in l and "session=-" in l for l in lines), lines
    guard.check()
