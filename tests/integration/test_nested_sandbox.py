"""[jail] nested_sandbox: AI coding agents' own bubblewrap sandboxes inside the jail.

With nested_sandbox = true an inner bwrap, as Claude Code (sandbox-runtime),
OpenAI Codex CLI and Gemini CLI build it, runs in the jail with its own
isolation intact (no network, read-only binds, its own seccomp program); with
false it is refused with bwrap's own message. The outer jail loses nothing:
the isolation tests of test_isolation.py run with nested on too (they are
parametrized there), and here a tenant who is "root" in a nested user
namespace still reaches nothing outside the jail, and TIOCSTI stays blocked
inside an inner sandbox.

Real agents: @anthropic-ai/sandbox-runtime (`srt`) and @openai/codex
(`codex sandbox`), pinned, installed from the npm registry with the host's
node into /opt/ctj-agents (root-owned, under the jail's /opt ro_bind), once
and kept as a cache between runs. srt needs socat and ripgrep on the host
(installed with install/ensure-packages.sh).
"""
import errno
import json
import os
import pwd
import shlex
import shutil
import socket
import struct
import subprocess
import time
import uuid

import pytest

from conftest import REPO, new_session, routes_closed
from ptyutil import PtyProcess
from test_attack_inside import TIOCSTI

# The probes' controls connect to a listener on the host's 127.0.0.1, which
# only a jail on the host's network reaches: these policies share it, so
# that the inner sandboxes' own --unshare-net is what the probes measure.
# test_real_agent_sandbox_works_in_an_isolated_jail runs an agent under the
# default network = isolated.
NESTED_ON = {"jail": "nested_sandbox = true\nnetwork = host"}
NESTED_OFF = {"jail": "nested_sandbox = false\nnetwork = host"}

# bubblewrap 0.8.0 inside a --disable-userns jail: the jail's user namespace
# has a limit of one user namespace (its own), so the inner clone() fails.
INNER_BWRAP_REFUSAL = ("bwrap: Creating new namespace failed: nesting depth or "
                       "/proc/sys/user/max_*_namespaces exceeded (ENOSPC)")

AGENTS_DIR = "/opt/ctj-agents"
SRT_VERSION = "0.0.83"        # @anthropic-ai/sandbox-runtime
CODEX_VERSION = "0.171.0"     # @openai/codex
NPM_TIMEOUT = 150             # seconds per package: a bound for a fresh CI machine


# --- running things in a jail -----------------------------------------------------

def jail(host, tenant, script, conf, timeout=90):
    """The helper's one-off jail (run --user --session -- /bin/sh -c), root
    caller, under the given config variant; stderr merged into stdout."""
    return host.run_root(host.jail(tenant, "exec 2>&1\n" + script, session=new_session()), config=conf,
                         timeout=timeout)


@pytest.fixture(scope="module")
def nested_on(host):
    return host.config_variant(NESTED_ON)


@pytest.fixture(scope="module")
def nested_off(host):
    return host.config_variant(NESTED_OFF)


@pytest.fixture
def listener():
    """A TCP listener on the host's 127.0.0.1. The jail shares the host's
    network namespace (test_isolation.test_network_is_shared), so the jail
    itself reaches it; an inner sandbox with --unshare-net must not."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def workspace(host, alice):
    """A project directory in the tenant's home, as an agent works in: a
    writable workspace with a .git that the agents keep read-only."""
    ws = os.path.join(host.home(alice), f"ws-{uuid.uuid4().hex[:8]}")
    pw = pwd.getpwnam(alice)
    for d in (ws, os.path.join(ws, ".git"), os.path.join(ws, ".git", "hooks")):
        os.makedirs(d)
        os.chown(d, pw.pw_uid, pw.pw_gid)
    yield ws
    shutil.rmtree(ws, ignore_errors=True)


def probe(ws, port):
    """Run inside the inner sandbox: did it run, what network does it have,
    which of its binds are read-only. One line per fact."""
    tcp = ("import socket,sys,errno\n"
           "try:\n"
           "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3); print('TCP connected')\n"
           "except OSError as e:\n"
           "    print('TCP', errno.errorcode.get(e.errno, e))\n")
    return f"""echo "INNER ran uid=$(id -u)"
echo "IFACES $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')"
python3 -c {shlex.quote(tcp)} {port}
touch "$HOME/ctj-inner-probe" 2>&1 || true
touch {ws}/.git/hooks/ctj-inner-probe 2>&1 || true
echo inner > {ws}/ctj-inner-written && echo "WORKSPACE writable"
"""


def control(ws, port):
    """The same probes in the jail, outside the inner sandbox: the positive
    control that each would catch a missing inner restriction."""
    return probe(ws, port).replace("INNER", "JAIL").replace("ctj-inner", "ctj-jail")


def assert_inner_isolation(out, host, tenant, ws, tcp_error="ECONNREFUSED"):
    home = host.home(tenant)
    assert "INNER ran uid=" in out, out
    # --unshare-net: only a loopback of its own, and the jail's listener on
    # the host loopback is unreachable (refused by the empty inner lo, or
    # EPERM where the agent's own seccomp program also forbids connect).
    assert "IFACES lo \n" in out, out
    assert f"TCP {tcp_error}\n" in out and "TCP connected" not in out.split("INNER ran")[1], out
    # --ro-bind / /: the rest of the home (writable in the jail) is read-only.
    assert f"touch: cannot touch '{home}/ctj-inner-probe': Read-only file system" in out, out
    assert f"touch: cannot touch '{ws}/.git/hooks/ctj-inner-probe': Read-only file system" in out, out
    assert not os.path.exists(os.path.join(home, "ctj-inner-probe"))
    assert not os.path.exists(os.path.join(ws, ".git", "hooks", "ctj-inner-probe"))
    # The writable workspace bind works, and the file is the tenant's.
    assert "WORKSPACE writable" in out, out
    written = os.path.join(ws, "ctj-inner-written")
    assert open(written).read() == "inner\n"
    assert os.stat(written).st_uid == pwd.getpwnam(tenant).pw_uid


def assert_jail_control(out, host, tenant, ws):
    """The probes outside the inner sandbox see the jail's access."""
    assert "JAIL ran uid=" in out, out
    assert "TCP connected" in out.split("INNER ran")[0], out
    assert "ctj-jail-probe': Read-only" not in out, out
    assert os.path.exists(os.path.join(host.home(tenant), "ctj-jail-probe"))
    assert os.path.exists(os.path.join(ws, ".git", "hooks", "ctj-jail-probe"))


# --- the agents' bwrap command lines, as their public sources build them ---------

def claude_code_argv(ws, script):
    # anthropic-experimental/sandbox-runtime, src/sandbox/linux-sandbox-utils.ts
    # (wrapCommandWithSandboxLinux + generateFilesystemArgs): --new-session
    # --die-with-parent, --unshare-net (no allowed domains: no proxy sockets
    # bound), --ro-bind / / then --bind for each allowWrite path, --ro-bind
    # over denied paths such as .git/hooks, --dev /dev, --unshare-pid, --proc
    # /proc, then the user's shell with -c. (Its unix-socket seccomp filter is
    # applied by a helper binary: see the real srt test below.)
    return ["bwrap", "--new-session", "--die-with-parent", "--unshare-net",
            "--ro-bind", "/", "/", "--bind", ws, ws, "--ro-bind", f"{ws}/.git/hooks", f"{ws}/.git/hooks",
            "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--", "/bin/bash", "-c", script]


def codex_argv(ws, script):
    # openai/codex, codex-rs/linux-sandbox/src/bwrap.rs (create_bwrap_flags +
    # create_filesystem_args), workspace-write policy without network:
    # --new-session --die-with-parent, --ro-bind / /, --dev /dev, --bind for
    # each writable root, --ro-bind for its protected subpaths (.git),
    # --unshare-pid --unshare-net --proc /proc.
    return ["bwrap", "--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
            "--bind", ws, ws, "--ro-bind", f"{ws}/.git", f"{ws}/.git",
            "--unshare-pid", "--unshare-net", "--proc", "/proc", "--", "/bin/sh", "-c", script]


def gemini_bpf():
    """google-gemini/gemini-cli, packages/core/src/sandbox/linux/LinuxSandboxManager.ts
    (getSeccompBpfPath): kill on a foreign arch, EPERM for ptrace, allow the rest."""
    ins = [(0x20, 0, 0, 4), (0x15, 1, 0, 0xC000003E), (0x06, 0, 0, 0x80000000),
           (0x20, 0, 0, 0), (0x15, 0, 1, 101), (0x06, 0, 0, 0x00050000 | errno.EPERM),
           (0x06, 0, 0, 0x7FFF0000)]
    return b"".join(struct.pack("<HBBI", *i) for i in ins)


def gemini_args(ws):
    # google-gemini/gemini-cli, packages/core/src/sandbox/linux/bwrapArgsBuilder.ts
    # (buildBwrapArgs, no network access, workspace writable, .git protected)
    # plus LinuxSandboxManager.ts, which appends --seccomp 9 and runs
    # `bwrap --args 8 -- CMD 8< ARGS_FILE 9< BPF_FILE`.
    return ["--unshare-all", "--new-session", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", "--tmpfs", "/tmp", "--bind-try", ws, ws, "--ro-bind", f"{ws}/.git", f"{ws}/.git",
            "--seccomp", "9"]


PTRACE = ("import ctypes\n"
          "libc = ctypes.CDLL(None, use_errno=True)\n"
          "r = libc.ptrace(0, 0, 0, 0)\n"  # PTRACE_TRACEME
          "print('PTRACE', r, ctypes.get_errno())\n")


def gemini_script(host, tenant, ws, script):
    """Writes Gemini's args file and BPF program into the home (as the
    tenant's) and returns the shell line that starts the inner sandbox."""
    pw = pwd.getpwnam(tenant)
    files = {os.path.join(ws, "..", f".ctj-gemini-{uuid.uuid4().hex[:6]}.args"):
             b"".join(a.encode() + b"\0" for a in gemini_args(ws)),
             os.path.join(ws, "..", f".ctj-gemini-{uuid.uuid4().hex[:6]}.bpf"): gemini_bpf()}
    for path, data in files.items():
        with open(path, "wb") as f:
            f.write(data)
        os.chown(path, pw.pw_uid, pw.pw_gid)
    args_path, bpf_path = (os.path.normpath(p) for p in files)
    return (f"bwrap --args 8 -- /bin/sh -c {shlex.quote(script)} "
            f"8< {shlex.quote(args_path)} 9< {shlex.quote(bpf_path)}")


AGENTS = {
    "claude-code": lambda host, tenant, ws, script: shlex.join(claude_code_argv(ws, script)),
    "codex": lambda host, tenant, ws, script: shlex.join(codex_argv(ws, script)),
    "gemini-cli": gemini_script,
}


@pytest.mark.parametrize("agent", AGENTS)
def test_agent_bwrap_command_line_runs_isolated_with_nested_on(host, alice, nested_on, listener, workspace, agent):
    ws = workspace
    inner = AGENTS[agent](host, alice, ws, probe(ws, listener) + f"python3 -c {shlex.quote(PTRACE)}\n")
    r = jail(host, alice, f"cd {ws}\n{control(ws, listener)}python3 -c {shlex.quote(PTRACE)}\n"
                          f"{inner}\necho INNER-EXIT=$?\n", nested_on)
    out = r.stdout
    assert r.returncode == 0 and "INNER-EXIT=0" in out, out
    assert_jail_control(out, host, alice, ws)
    assert_inner_isolation(out, host, alice, ws)
    jail_part, inner_part = out.split("INNER ran")
    assert "PTRACE 0 0" in jail_part, out  # control: ptrace is allowed in the jail
    if agent == "gemini-cli":
        # The inner sandbox's own seccomp program is loaded on top of the jail's.
        assert "PTRACE -1 1" in inner_part, out
    else:
        assert "PTRACE 0 0" in inner_part, out


@pytest.mark.parametrize("agent", AGENTS)
def test_agent_bwrap_command_line_is_refused_with_nested_off(host, alice, nested_off, listener, workspace, agent):
    ws = workspace
    inner = AGENTS[agent](host, alice, ws, probe(ws, listener))
    r = jail(host, alice, f"cd {ws}\necho JAIL-RAN\n{inner}\necho INNER-EXIT=$?\n", nested_off)
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ["JAIL-RAN", INNER_BWRAP_REFUSAL, "INNER-EXIT=1"], r.stdout
    assert not os.path.exists(os.path.join(ws, "ctj-inner-written"))


def test_default_config_refuses_like_nested_off(host, alice):
    """No nested_sandbox key: the default is off, with the same refusal."""
    r = jail(host, alice, "bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev -- /bin/true; echo EXIT=$?",
             host.config_variant({}))
    assert r.stdout.splitlines() == [INNER_BWRAP_REFUSAL, "EXIT=1"], r.stdout


# --- what inner bwrap needs from the jail -----------------------------------------

def test_jail_gives_inner_bwrap_what_it_needs(host, alice, nested_on, nested_off):
    """A readable, non-zero max_user_namespaces, a fresh /proc with nothing
    mounted over parts of it, and mount + pivot_root in a nested namespace."""
    script = ("echo MAX=$(cat /proc/sys/user/max_user_namespaces)\n"
              "echo PROC-MOUNTS=$(awk '$5 == \"/proc\" || $5 ~ \"^/proc/\" {print $5}' /proc/self/mountinfo)\n"
              "echo PROC-FS=$(stat -f -c %T /proc)\n"
              "unshare -r -m sh -c 'mount -t tmpfs nr /tmp && mkdir /tmp/old && cd /tmp "
              "&& /usr/sbin/pivot_root . old && echo PIVOT-OK' || echo PIVOT-FAILED\n")
    on = jail(host, alice, script, nested_on).stdout
    assert "PROC-MOUNTS=/proc\n" in on and "PROC-FS=proc\n" in on, on
    max_on = int(on.split("MAX=")[1].split()[0])
    assert max_on > 1, on
    assert "PIVOT-OK" in on, on
    # Control: with nested off the same nested namespace is refused.
    off = jail(host, alice, script, nested_off).stdout
    assert "PIVOT-OK" not in off and "PIVOT-FAILED" in off, off
    assert "unshare: unshare failed: No space left on device" in off, off


def test_root_in_a_nested_namespace_reaches_nothing_outside_the_jail(host, alice, bob, nested_on):
    """With nested on a tenant can be "root" over namespaces of its own: it
    still cannot read another home, /root or shadow, write /etc or /usr,
    chown a system file or change a sysctl. Mounting over /etc in its own
    mount namespace works (the control showing the namespace is real) and
    changes nothing outside; the jail's read-only binds cannot be remounted
    writable nor unmounted there (the kernel locks mounts inherited by a less
    privileged namespace)."""
    mark = f"ctj-nested-{uuid.uuid4().hex[:8]}"
    r = jail(host, alice, f"""
unshare -r sh -c '
  echo "NESTED uid=$(id -u) caps=$(grep CapEff /proc/self/status | cut -f2)"
  cat /etc/shadow >/dev/null 2>&1 && echo LEAK shadow
  touch /etc/{mark} 2>/dev/null && echo LEAK etc
  touch /usr/{mark} 2>/dev/null && echo LEAK usr
  ls /root >/dev/null 2>&1 && echo LEAK root
  ls {host.home(bob)} >/dev/null 2>&1 && echo LEAK bob
  chown 0 /etc/hostname 2>/dev/null && echo LEAK chown
  echo x > /proc/sys/kernel/core_pattern 2>/dev/null && echo LEAK sysctl
  echo h > /proc/sysrq-trigger 2>/dev/null && echo LEAK sysrq
  unshare -m sh -c "mount -t tmpfs x /etc && touch /etc/{mark} && echo MOUNTED-PRIVATE-ETC"
  unshare -m sh -c "mount -t tmpfs x /tmp && mount -o remount,bind,ro /tmp && mount -o remount,bind,rw /tmp && echo REMOUNT-OWN-OK"
  unshare -m sh -c "mount -o remount,bind,rw /usr 2>/dev/null && touch /usr/{mark} && echo LEAK remount-rw"
  unshare -m sh -c "umount -l /etc 2>/dev/null && echo LEAK umount-etc; ls /etc/{mark} 2>/dev/null && echo LEAK etc"
  unshare -m sh -c "mount --bind / /tmp 2>/dev/null && ls /tmp/root /tmp/home 2>/dev/null | grep -q {host.home(bob).split('/')[-1]} && echo LEAK bob-via-bind"
  true
'
echo "UNSHARE rc=$?"
""", nested_on)
    out = r.stdout
    caps = out.split("NESTED uid=0 caps=")[1].split()[0]
    assert int(caps, 16) != 0, out  # full capabilities, over its own namespaces only
    assert "MOUNTED-PRIVATE-ETC" in out and "UNSHARE rc=0" in out, out
    # Control for the remount probe: the same remounts work on its own mount.
    assert "REMOUNT-OWN-OK" in out, out
    assert "LEAK" not in out, out
    for d in ["/etc", "/usr", "/root", "/tmp"]:
        assert not os.path.exists(os.path.join(d, mark))
    # bob's home is absent from the jail, not merely unreadable.
    assert os.path.isdir(host.home(bob))


def test_tiocsti_is_blocked_inside_an_inner_sandbox(host, alice, nested_on):
    """The jail's seccomp program is inherited by every inner sandbox: a
    nested bwrap without --new-session (it shares the caller's terminal)
    still cannot push input into the caller's shell."""
    # Where dev.tty.legacy_tiocsti = 0 the kernel refuses TIOCSTI too, but
    # later and with EIO: the EPERM asserted below is the filter's either way
    # (the positive control, TIOCSTI working without the jail, is
    # test_attack_inside.py's test_without_the_jail_tiocsti_injects_input).
    marker = f"/tmp/ctj-tiocsti-{uuid.uuid4().hex[:8]}"
    inner = shlex.join(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
                        "--proc", "/proc", "--", "python3", "-c", TIOCSTI % marker.encode().decode()])
    jail_argv = shlex.join(host.jail(alice, f"{inner}; echo INNER-EXIT=$?"))
    t = PtyProcess(["/bin/sh", "-c", f"{jail_argv}; echo HELPER_DONE; read -r line; eval \"$line\"; "
                    "echo GOT:[$line]"],
                   env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "CLIHOST_JAIL_CONFIG": nested_on})
    try:
        assert t.wait_for("HELPER_DONE", 30), t.output()
        time.sleep(0.5)
        t.write("echo nothing-injected\n")
        assert t.wait_for("GOT:[", 10), t.output()
        t.wait(10)
    finally:
        t.close()
    assert "INNER-EXIT=0" in t.output(), t.output()
    assert "TIOCSTI refused 1" in t.output(), t.output()  # EPERM from the jail's filter
    assert "GOT:[echo nothing-injected]" in t.output(), t.output()
    assert not os.path.exists(marker)


# --- check and print ------------------------------------------------------------

def test_check_reports_and_proves_a_nested_sandbox(host, alice, nested_on, nested_off):
    with routes_closed(alice):  # check passes only with the routes around the jail closed
        on = host.run_root([host.bin, "check", "--user", alice], config=nested_on)
        off = host.run_root([host.bin, "check", "--user", alice], config=nested_off)
    assert on.returncode == 0, on.stdout + on.stderr
    assert "nested sandbox: allowed (" in on.stdout, on.stdout
    assert "nested sandbox trial: ok (an inner bwrap ran /bin/true" in on.stdout, on.stdout
    assert off.returncode == 0, off.stdout + off.stderr
    assert "nested sandbox: not allowed (" in off.stdout and "nested sandbox trial" not in off.stdout, off.stdout


def test_check_fails_when_the_inner_bwrap_cannot_run(host, alice):
    """nested_sandbox = true but the jail's /usr hides bwrap: the inner
    trial fails, and check says so with exit 3 (the control for the trial
    above: it really runs an inner bwrap)."""
    bw = os.path.join(host.prefix, "bwrap")
    shutil.copy("/usr/bin/bwrap", bw)
    os.chmod(bw, 0o755)
    try:
        conf = host.config_variant({"jail": f"nested_sandbox = true\nbwrap = {bw}"})
        r = host.run_root([host.bin, "check", "--user", alice], config=conf)
        assert r.returncode == 3, r.stdout + r.stderr
        assert "jail trial: ok" in r.stdout, r.stdout
        assert ("nested sandbox trial: FAIL: an inner bwrap could not run /bin/true in the jail"
                in r.stdout), r.stdout
        assert "result: refused: a jail cannot start (nested sandbox trial)" in r.stdout, r.stdout
    finally:
        os.unlink(bw)


def test_print_shows_the_setting_and_the_argv(host, alice):
    # print shows two plans: the session jail's (where the tenant's work and
    # its agents run: the setting applies) and the attach jail's (a tmux
    # client only: never nested namespaces). Under the default network.
    nested_on = host.config_variant({"jail": "nested_sandbox = true"})
    nested_off = host.config_variant({"jail": "nested_sandbox = false"})
    on = host.run_root([host.bin, "print", "--user", alice, "--session", "s"], config=nested_on)
    off = host.run_root([host.bin, "print", "--user", alice, "--session", "s"], config=nested_off)
    assert on.returncode == 0 and off.returncode == 0, (on, off)
    # Headers and command lines (the network's comment lines left out).
    keep = lambda out: [l for l in out.splitlines() if not l.startswith("#") or l.startswith("# clihost-jail plan:")]
    on_lines, off_lines = keep(on.stdout), keep(off.stdout)
    assert on_lines[0].endswith(", nested sandbox allowed, network isolated"), on.stdout
    assert off_lines[0].endswith(", nested sandbox not allowed, network isolated"), off.stdout
    assert on_lines[2].endswith(", nested sandbox not allowed, network none"), on.stdout  # the attach jail
    on_argv, off_argv = shlex.split(on_lines[1]), shlex.split(off_lines[1])
    assert "--disable-userns" not in on_argv and "--disable-userns" in off_argv
    off_argv.remove("--disable-userns")
    assert on_argv == off_argv  # nothing else of the jail changes
    assert "--disable-userns" in shlex.split(on_lines[3])


def test_real_agent_sandbox_works_in_an_isolated_jail(host, alice, workspace, agents):
    """The default network = isolated and an agent's own sandbox together:
    the jail has its own network (slirp4netns's tap0), the agent's sandbox
    (srt: its own --unshare-net) has only a loopback, and the agent runs."""
    ws = workspace
    srt_settings(host, alice, ws)
    conf = host.config_variant({"jail": "nested_sandbox = true"})
    ifaces = "echo IFACES $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort)\n"
    line = real_agent_line(agents, "srt", "echo INNER-ran\n" + ifaces)
    r = jail(host, alice, f"cd {ws}\n{ifaces}{line}\necho AGENT-EXIT=$?\n", conf, timeout=120)
    out = r.stdout
    assert r.returncode == 0 and "AGENT-EXIT=0" in out, out
    jail_part, inner_part = out.split("INNER-ran")
    assert "IFACES lo tap0" in jail_part, out
    assert "IFACES lo\n" in inner_part, out


def test_nested_over_the_host_proc_warns_and_inner_bwrap_cannot_start(host, alice):
    """proc = inherit binds the host's /proc read-only: an inner bwrap cannot
    write its uid_map there. print and the audit log say so; the warning is
    true (the inner bwrap fails with exactly that reason)."""
    conf = host.config_variant({"jail": "nested_sandbox = true\nproc = inherit"})
    warning = "nested_sandbox = true but /proc is the host's (read-only): inner sandboxes cannot start"
    p = host.run_root([host.bin, "print", "--user", alice, "--session", "s"], config=conf)
    assert f"# warning: {warning}\n" in p.stdout, p.stdout
    s = new_session()
    r = host.run_root(host.jail(alice, "exec 2>&1; bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev "
                                       "-- /bin/true; echo EXIT=$?", session=s), config=conf)
    assert r.stdout.splitlines() == ["bwrap: setting up uid map: Read-only file system", "EXIT=1"], r.stdout
    warned = lambda l: "decision=allow" in l and f"; warning: {warning}" in l
    lines = host.audit_lines(f"session={s}", want=2, until=warned)
    assert any(warned(l) for l in lines), lines


# --- real agents' sandboxes -------------------------------------------------------

def _npm_install(name, version):
    """npm install --prefix /opt/ctj-agents/NAME-VERSION, once (a stamp
    marks a complete install). Install scripts are not run: npm runs as
    root here and neither package needs one (codex's binary is an optional
    dependency)."""
    prefix = os.path.join(AGENTS_DIR, f"{name.replace('/', '+')}-{version}")
    stamp = os.path.join(prefix, ".ctj-installed")
    if os.path.exists(stamp):
        return prefix
    shutil.rmtree(prefix, ignore_errors=True)
    os.makedirs(prefix, mode=0o755)
    r = subprocess.run(["npm", "install", "--prefix", prefix, "--ignore-scripts", "--no-audit", "--no-fund",
                        "--omit=dev", f"{name}@{version}"], capture_output=True, text=True, timeout=NPM_TIMEOUT,
                       stdin=subprocess.DEVNULL,
                       # The runner's environment: a CI proxy or TLS-inspecting
                       # CA (NODE_EXTRA_CA_CERTS) must reach npm.
                       env={**os.environ, "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr
    open(stamp, "w").close()
    return prefix


@pytest.fixture(scope="module")
def agents(host):
    os.makedirs(AGENTS_DIR, mode=0o755, exist_ok=True)
    os.chown(AGENTS_DIR, 0, 0)
    os.chmod(AGENTS_DIR, 0o755)
    # srt checks for these before it sandboxes anything (its network bridge
    # and its mandatory-deny file search).
    subprocess.run(["bash", os.path.join(REPO, "install", "ensure-packages.sh"), "socat", "ripgrep"], check=True,
                   timeout=300)
    srt = os.path.join(_npm_install("@anthropic-ai/sandbox-runtime", SRT_VERSION), "node_modules", ".bin", "srt")
    codex = os.path.join(_npm_install("@openai/codex", CODEX_VERSION), "node_modules", ".bin", "codex")
    # The jail binds /opt read-only: nothing in it may be writable by the tenant.
    bad = subprocess.run(["find", AGENTS_DIR, "-perm", "/022", "!", "-type", "l"], capture_output=True, text=True)
    assert bad.stdout == "", bad.stdout
    return {"srt": srt, "codex": codex}


def srt_settings(host, tenant, ws):
    """~/.srt-settings.json: no allowed domains (no network), writes only to
    the workspace."""
    path = os.path.join(host.home(tenant), ".srt-settings.json")
    with open(path, "w") as f:
        json.dump({"network": {"allowedDomains": [], "deniedDomains": []},
                   "filesystem": {"denyRead": [], "allowWrite": [ws], "denyWrite": []}}, f)
    pw = pwd.getpwnam(tenant)
    os.chown(path, pw.pw_uid, pw.pw_gid)


def real_agent_line(agents, agent, script):
    if agent == "srt":
        return f"{agents['srt']} -c {shlex.quote(script)}"
    # `codex sandbox [COMMAND]...` (0.171.0): the Linux sandbox, no model call.
    return f"{agents['codex']} sandbox -c 'sandbox_mode=\"workspace-write\"' -- /bin/sh -c {shlex.quote(script)}"


@pytest.mark.parametrize("agent", ["srt", "codex"])
def test_real_agent_sandbox_works_with_nested_on(host, alice, nested_on, listener, workspace, agents, agent):
    ws = workspace
    srt_settings(host, alice, ws)
    line = real_agent_line(agents, agent, probe(ws, listener) +
                           "grep -E '^(NoNewPrivs|Seccomp_filters)' /proc/self/status\n")
    r = jail(host, alice, f"cd {ws}\n{control(ws, listener)}"
                          f"grep -E '^Seccomp_filters' /proc/self/status | sed 's/^/JAIL-/'\n"
                          f"{line}\necho AGENT-EXIT=$?\n", nested_on, timeout=120)
    out = r.stdout
    assert r.returncode == 0 and "AGENT-EXIT=0" in out, out
    assert_jail_control(out, host, alice, ws)
    # codex's seccomp program refuses network sockets itself (EPERM) on top
    # of its --unshare-net.
    assert_inner_isolation(out, host, alice, ws, tcp_error={"srt": "ECONNREFUSED", "codex": "EPERM"}[agent])
    # Each agent loads a seccomp program of its own on top of the jail's.
    jail_filters = int(out.split("JAIL-Seccomp_filters:")[1].split()[0])
    inner_filters = int(out.split("INNER ran")[1].split("Seccomp_filters:")[1].split()[0])
    assert inner_filters > jail_filters, out


@pytest.mark.parametrize("agent", ["srt", "codex"])
def test_real_agent_sandbox_is_refused_with_nested_off(host, alice, nested_off, listener, workspace, agents, agent):
    ws = workspace
    srt_settings(host, alice, ws)
    line = real_agent_line(agents, agent, probe(ws, listener))
    r = jail(host, alice, f"cd {ws}\n{line}\necho AGENT-EXIT=$?\n", nested_off, timeout=120)
    # Both agents pass their bwrap's failure through unchanged and exit 1:
    # nothing of the command ran, and no fallback ran it unsandboxed.
    assert r.stdout.splitlines() == [INNER_BWRAP_REFUSAL, "AGENT-EXIT=1"], r.stdout
    assert not os.path.exists(os.path.join(ws, "ctj-inner-written"))
