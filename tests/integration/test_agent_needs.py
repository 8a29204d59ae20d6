"""What a tenant's AI agents need, without a workaround (issue 25).

1. A running session jail keeps the settings it started with: `list` and
   `check --user` name every setting that differs from the config file now,
   and after `stop` the next connection's jail follows the file.
2. `[jail] setenv`: fixed variables for every tenant, seen in the session,
   attach and one-off jails ($HOME expanded); the helper's own variables
   refused with their reasons; a malformed item refused with its reason.
   A real agent (Anthropic's sandbox-runtime) installed with npm inside a
   jail into the prefix setenv gives, then run from setenv's PATH with its
   own nested sandbox.
3. Disk: `check` says whether the file system of a tenant's home enforces a
   quota for it, on a loop-mounted ext4 image made here, with and without
   quota support; the quota check's "ok" is true (a write past the limit
   fails inside the jail; the control without a limit succeeds).
"""
import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import PROXY, REPO, RUNTIME_DIR, TENANT_GROUP, attach_clients, new_session, sh, wait_until
from ptyutil import PtyProcess, shell_ready

SRT_VERSION = "0.0.83"  # @anthropic-ai/sandbox-runtime, as in test_nested_sandbox.py
AGENT_ENV = ("NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt NPM_CONFIG_PREFIX=$HOME/.npm-global "
             "PATH=$HOME/.local/bin:$HOME/.npm-global/bin:/usr/local/bin:/usr/bin:/bin CTJ_FIXED=fixed-42")


def root_attach(host, tenant, session, conf, terms):
    """A connection as a root proxy under config `conf` (only root may name one)."""
    t = PtyProcess([host.bin, "run", "--user", tenant, "--session", session],
                   env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "CLIHOST_JAIL_CONFIG": conf})
    terms.append(t)
    return t


def in_session_jail(host, tenant, command):
    """Runs `command` in the tenant's session jail (tmux's run-shell runs it
    in its server, the session jail's tmux, and waits) and returns its
    output, which it writes to a file in the home."""
    out = os.path.join(host.home(tenant), f".ctj-out-{uuid.uuid4().hex[:8]}")
    r = host.tmux(tenant, "run-shell", f"({command}) > {out} 2>&1")
    assert r.returncode == 0, r
    try:
        return open(out).read()
    finally:
        os.unlink(out)


def list_line(host, tenant, conf):
    r = host.run_root([host.bin, "list", "--user", tenant], config=conf)
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout
    return lines[0]


def check_line(out, key):
    lines = [l for l in out.splitlines() if l.startswith(key + ": ")]
    assert len(lines) == 1, out
    return lines[0][len(key) + 2:]


# --- 1. a running session jail keeps its settings -----------------------------------

def test_a_session_jail_started_before_a_config_change_is_named_until_stop(host, alice, terms):
    before = host.config_variant({"jail": "nested_sandbox = true\ntmpfs_size = 256M"})
    after = host.config_variant({"jail": "nested_sandbox = false\ntmpfs_size = 128M"})
    t = root_attach(host, alice, new_session(), before, terms)
    assert shell_ready(t), t.output()
    probe = ("unshare -r true && echo NESTED-OK || echo NESTED-REFUSED; "
             "echo TMP=$(df -k --output=size /tmp | tail -1 | tr -d ' ')")
    # The jail runs with the settings it started with.
    out = in_session_jail(host, alice, probe)
    assert "NESTED-OK" in out and f"TMP={256 * 1024}" in out, out

    # Against the file it started with: nothing differs.
    assert " changed=- sessions=" in list_line(host, alice, before)
    # Against the changed file: list names both keys, check both values.
    line = list_line(host, alice, after)
    assert re.fullmatch(r"tenant=\S+ uid=\d+ supervisor=\d+ started=\S+ changed=tmpfs_size,nested_sandbox "
                        r"sessions=\S+ memory=\S+ tasks=\S+", line), line
    r = host.run_root([host.bin, "check", "--user", alice], config=after)
    assert check_line(r.stdout, "session jail settings") == (
        "WARNING: differ from the config file: tmpfs_size (started 256M, now 128M), nested_sandbox (started "
        f"true, now false); to apply the file's settings: clihost-jail stop --user {alice} (ends everything the "
        "tenant runs), then its next connection starts a jail with them"), r.stdout
    r = host.run_root([host.bin, "check"], config=after)
    assert f"session jail of {alice}: WARNING: settings differ from the config file: tmpfs_size (started 256M, " \
           "now 128M), nested_sandbox (started true, now false);" in r.stdout, r.stdout
    # The running jail itself has not changed (the report is about it).
    out = in_session_jail(host, alice, probe)
    assert "NESTED-OK" in out and f"TMP={256 * 1024}" in out, out
    # A one-off is the supervisor's too, started with its settings (its jail
    # may be prepared before the request): asked with the changed file, it
    # runs with the ones the supervisor started with.
    r = host.run_root(host.jail(alice, probe), config=after)
    assert r.returncode == 0 and "NESTED-OK" in r.stdout and f"TMP={256 * 1024}" in r.stdout, r

    # stop, then the next connection: a jail that follows the file.
    settings = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(alice).pw_uid}.settings")
    assert os.path.exists(settings)
    assert host.run_root([host.bin, "stop", "--user", alice], config=after).returncode == 0
    assert not os.path.exists(settings)  # removed with the record
    t2 = root_attach(host, alice, new_session(), after, terms)
    assert shell_ready(t2), t2.output()
    out = in_session_jail(host, alice, probe)
    assert "NESTED-REFUSED" in out and f"TMP={128 * 1024}" in out, out
    assert " changed=- sessions=" in list_line(host, alice, after)
    r = host.run_root([host.bin, "check", "--user", alice], config=after)
    assert check_line(r.stdout, "session jail settings") == "as in the config file", r.stdout


def test_a_jail_whose_supervisor_recorded_no_settings_is_unknown(host, alice, terms):
    """A session jail started by an earlier clihost-jail (no settings file)
    is reported as unknown, never as current; a settings file of another
    supervisor is not believed either."""
    conf = host.config_variant({})
    t = root_attach(host, alice, new_session(), conf, terms)
    assert shell_ready(t), t.output()
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(alice).pw_uid}.settings")
    text = open(path).read()
    assert text.startswith("v1 ") and "\nnested_sandbox false\n" in text, text
    head, rest = text.split("\n", 1)
    _, pid, ticks = head.split()
    with open(path, "w") as f:  # another supervisor's (a pid that is not this one)
        f.write(f"v1 {int(pid) + 1} {ticks}\n{rest}")
    assert " changed=unknown sessions=" in list_line(host, alice, conf)
    os.unlink(path)
    assert " changed=unknown sessions=" in list_line(host, alice, conf)
    r = host.run_root([host.bin, "check", "--user", alice], config=conf)
    assert check_line(r.stdout, "session jail settings").startswith(
        "unknown (its supervisor recorded none: started by an earlier clihost-jail)"), r.stdout
    assert host.run_root([host.bin, "stop", "--user", alice], config=conf).returncode == 0


# --- 2. setenv ----------------------------------------------------------------------

def test_setenv_values_are_seen_in_session_attach_and_one_off_jails(host, alice, terms):
    conf = host.config_variant({"jail": f"setenv = {AGENT_ENV}"})
    home = host.home(alice)
    want = {"NODE_EXTRA_CA_CERTS": "/etc/ssl/certs/ca-certificates.crt",
            "NPM_CONFIG_PREFIX": f"{home}/.npm-global",
            "PATH": f"{home}/.local/bin:{home}/.npm-global/bin:/usr/local/bin:/usr/bin:/bin",
            "CTJ_FIXED": "fixed-42", "TTYD_SANDBOX": "true", "HOME": home, "USER": alice}
    show = "; ".join(f"echo {k}=${k}" for k in want)
    # One-off jail; the caller's own value of a fixed variable does not pass.
    r = host.run_root(host.jail(alice, show), config=conf,
                      env={"PATH": "/usr/bin:/bin", "CTJ_FIXED": "from-caller", "NPM_CONFIG_PREFIX": "/tmp"})
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == [f"{k}={v}" for k, v in want.items()], r.stdout
    # Session jail: the shells tmux starts.
    t = root_attach(host, alice, new_session(), conf, terms)
    assert shell_ready(t), t.output()
    out = in_session_jail(host, alice, show)
    assert out.splitlines() == [f"{k}={v}" for k, v in want.items()], out
    t.write("echo SHELL-SEES=$NPM_CONFIG_PREFIX:$CTJ_FIXED\r")
    assert t.wait_for(f"SHELL-SEES={home}/.npm-global:fixed-42", 10), t.output()
    # Attach jail: the tmux client's own environment.
    clients = attach_clients(alice)
    assert clients, "no attach jail's client found"
    env = dict(e.split("=", 1) for e in open(f"/proc/{clients[0]}/environ").read().split("\0") if "=" in e)
    for k, v in want.items():
        assert env.get(k) == v, (k, env)
    # print shows the values as the jail gets them.
    p = host.run_root([host.bin, "print", "--user", alice, "--session", "s"], config=conf)
    assert f" NPM_CONFIG_PREFIX={home}/.npm-global " in p.stdout and " CTJ_FIXED=fixed-42 " in p.stdout, p.stdout
    assert f"--setenv PATH {home}/.local/bin:{home}/.npm-global/bin:/usr/local/bin:/usr/bin:/bin" in p.stdout


def _own(host, tenant, path):
    pw = pwd.getpwnam(tenant)
    for dirpath, dirs, files in os.walk(path):
        for n in [dirpath, *(os.path.join(dirpath, f) for f in files)]:
            os.chown(n, pw.pw_uid, pw.pw_gid)


def test_setenv_holds_in_login_shells_new_tmux_windows_and_after_npm_install(host, alice, terms):
    """Issue 41, item 1: tmux starts login shells, and Debian's /etc/profile
    sets PATH for every user: the operator's PATH (jail.conf's example)
    must still be there after /etc/profile and ~/.profile ran, in the first
    window and in a new one, so that `npm install -g` into
    NPM_CONFIG_PREFIX, then the installed command, works in the terminal
    (a local package: no registry). The tenant's ~/.profile may still
    prepend its own and change a value. Control: a non-login shell's PATH
    is setenv's already (the jail's environment)."""
    home = host.home(alice)
    profile = os.path.join(home, ".profile")
    kept = open(profile).read() if os.path.exists(profile) else None
    try:
        _login_shells_keep_setenv(host, alice, terms, home)
    finally:
        if kept is not None:
            with open(profile, "w") as f:
                f.write(kept)
        for n in ("ctj-pkg", ".npm-global"):
            shutil.rmtree(os.path.join(home, n), ignore_errors=True)
        for n in os.listdir(home):
            if n.startswith(".ctj-"):
                os.unlink(os.path.join(home, n))


def _login_shells_keep_setenv(host, alice, terms, home):
    conf = host.config_variant({"jail": f"setenv = {AGENT_ENV}"})
    want_path = f"{home}/.local/bin:{home}/.npm-global/bin:/usr/local/bin:/usr/bin:/bin"
    pkg = os.path.join(home, "ctj-pkg")
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "package.json"), "w") as f:
        json.dump({"name": "ctj-semver", "version": "1.0.0", "bin": {"ctj-semver": "cli.js"}}, f)
    with open(os.path.join(pkg, "cli.js"), "w") as f:
        f.write('#!/usr/bin/env node\nconsole.log("CTJ-SEMVER-" + process.argv[2]);\n')
    os.chmod(os.path.join(pkg, "cli.js"), 0o755)
    _own(host, alice, pkg)
    t = root_attach(host, alice, new_session(), conf, terms)
    assert shell_ready(t), t.output()

    def shell_says(tag, command):
        """What `command` printed in the terminal's current shell (through a
        file in the home: a long PATH wraps on the screen)."""
        out = os.path.join(home, f".ctj-{tag}")
        t.write(f"({command}) > {out}.tmp 2>&1; mv {out}.tmp {out}\r")
        assert wait_until(lambda: os.path.exists(out), 60), t.output()
        return open(out).read().strip()

    assert shell_says("login", "shopt -q login_shell && echo login") == "login"
    assert shell_says("p1", "echo $PATH").startswith(want_path + ":"), "the first window's PATH"
    assert shell_says("npm", "npm install -g --offline --no-audit --no-fund ~/ctj-pkg >/dev/null 2>&1; echo $?") == "0"
    assert shell_says("semver1", "ctj-semver 1.2.3") == "CTJ-SEMVER-1.2.3"
    # A new tmux window: another login shell, the same PATH.
    t.write("tmux new-window\r")
    assert shell_ready(t, "WIN2"), t.output()
    assert shell_says("p2", "echo $PATH").startswith(want_path + ":"), "a new window's PATH"
    assert shell_says("semver2", "ctj-semver 4.5.6") == "CTJ-SEMVER-4.5.6"
    # The tenant's own ~/.profile runs last: it may prepend and change values.
    with open(os.path.join(home, ".profile"), "a") as f:
        f.write('\nPATH="$HOME/ctj-mine:$PATH"\nCTJ_FIXED=mine; export CTJ_FIXED\n')
    t.write("tmux new-window\r")
    assert shell_ready(t, "WIN3"), t.output()
    assert shell_says("p3", "echo $PATH").startswith(f"{home}/ctj-mine:{want_path}:")
    assert shell_says("f3", "echo $CTJ_FIXED") == "mine"
    # Control: the jail's own environment, without a profile.
    assert in_session_jail(host, alice, "echo $PATH").strip() == want_path


@pytest.mark.parametrize("value,reason", [
    ("TTYD_SANDBOX=false", "setenv may not set TTYD_SANDBOX: the helper forces it to true"),
    ("HOME=/tmp", "setenv may not set HOME: the helper sets it from the tenant's account"),
    ("USER=root", "setenv may not set USER: the helper sets it from the tenant's account"),
    ("LD_PRELOAD=/tmp/x.so", "setenv may not set LD_PRELOAD: it changes how programs load code or find tmux, "
                             "or is the proxy's secret"),
    ("PATH=$HOME/bin", "setenv: PATH must be clean absolute directories separated by ':' that keep "
                       "/usr/local/bin:/usr/bin:/bin together (entries may come before and after)"),
    ("NODE_EXTRA_CA_CERTS", "setenv: 'NODE_EXTRA_CA_CERTS' is not NAME=VALUE"),
    ("A=$USER", "setenv: the value of A names a variable other than $HOME"),
])
def test_setenv_refusals_name_their_reason(host, alice, value, reason):
    conf = host.config_variant({"jail": f"setenv = {value}"})
    line_no = open(conf).read().splitlines().index(f"setenv = {value}") + 1
    marker = f"/tmp/ctj-setenv-{uuid.uuid4().hex[:8]}"
    r = host.run_root(host.jail(alice, f"touch {marker}"), config=conf)
    assert r.returncode == 3, r
    assert r.stderr == f"clihost-jail: {conf}: config line {line_no}: {reason}\n", r.stderr
    assert not os.path.exists(marker)
    # Control: the same file without the line runs the jail.
    ok = host.config_variant({"jail": "setenv = CTJ_FIXED=1"})
    assert host.run_root(host.jail(alice, "true"), config=ok).returncode == 0


# --- a real agent, installed with npm inside the jail ------------------------------

def _registry_reachable():
    try:
        r = subprocess.run(["npm", "view", f"@anthropic-ai/sandbox-runtime@{SRT_VERSION}", "version"],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                           env={**os.environ, "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if r.returncode == 0 and r.stdout.strip() == SRT_VERSION else (r.stderr.strip() or r.stdout)


def test_sandbox_runtime_installed_by_npm_in_the_jail_runs_its_own_sandbox(host, alice):
    """As a tenant would: `npm install -g` inside its jail (setenv's
    NPM_CONFIG_PREFIX in the home; the site CA for npm behind an
    intercepting proxy), then `srt` found through setenv's PATH, its own
    bwrap sandbox nested in the jail (nested_sandbox = true), under the
    default network = isolated."""
    why = _registry_reachable()
    if why is not None:
        pytest.skip(f"the npm registry is unreachable from this host: {why}")
    subprocess.run(["bash", os.path.join(REPO, "install", "ensure-packages.sh"), "socat", "ripgrep"], check=True,
                   timeout=300)
    conf = host.config_variant({"jail": f"nested_sandbox = true\nsetenv = {AGENT_ENV}"})
    home = host.home(alice)
    pw = pwd.getpwnam(alice)
    ws = os.path.join(home, f"ws-{uuid.uuid4().hex[:8]}")
    os.makedirs(ws)
    os.chown(ws, pw.pw_uid, pw.pw_gid)
    settings = os.path.join(home, ".srt-settings.json")
    with open(settings, "w") as f:
        json.dump({"network": {"allowedDomains": [], "deniedDomains": []},
                   "filesystem": {"denyRead": [], "allowWrite": [ws], "denyWrite": []}}, f)
    os.chown(settings, pw.pw_uid, pw.pw_gid)
    ifaces = "echo IFACES $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort)"
    script = f"""exec 2>&1
npm install -g --no-audit --no-fund @anthropic-ai/sandbox-runtime@{SRT_VERSION} >/dev/null || echo NPM-FAILED
echo SRT=$(command -v srt)
cd {ws}
{ifaces}
srt -c {shlex.quote(f"echo INNER-ran; {ifaces}; echo inner > {ws}/written")}
echo AGENT-EXIT=$?
"""
    try:
        r = host.run_root(host.jail(alice, script), config=conf, timeout=300)
        out = r.stdout
        assert r.returncode == 0 and "NPM-FAILED" not in out, out
        # Installed into the prefix setenv gave, found through its PATH.
        assert f"SRT={home}/.npm-global/bin/srt\n" in out, out
        assert os.stat(os.path.join(home, ".npm-global", "bin")).st_uid == pw.pw_uid
        assert "AGENT-EXIT=0" in out, out
        jail_part, inner_part = out.split("INNER-ran")
        assert "\nIFACES lo tap0\n" in jail_part, out  # the jail's own network (slirp4netns)
        assert "\nIFACES lo\n" in inner_part, out      # srt's sandbox: no network at all
        assert open(os.path.join(ws, "written")).read() == "inner\n"
    finally:
        for p in (ws, os.path.join(home, ".npm-global"), os.path.join(home, ".npm")):
            shutil.rmtree(p, ignore_errors=True)
        os.unlink(settings)


# --- 3. disk quotas -----------------------------------------------------------------

class LoopHome:
    """An ext4 image made here, loop-mounted at a root-owned directory,
    holding one tenant's home."""

    def __init__(self, host, features, options):
        self.host = host
        self.dir = tempfile.mkdtemp(prefix="ctj-quota-", dir="/var/cache")
        os.chmod(self.dir, 0o755)
        self.image = os.path.join(self.dir, "fs.img")
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt, 0o755)
        with open(self.image, "wb") as f:
            f.truncate(96 << 20)
        sh("mkfs.ext4", "-q", "-F", *(["-O", features] if features else []), self.image)
        mounted = sh("mount", "-o", ",".join(["loop", *options]), self.image, self.mnt, check=False)
        if mounted.returncode != 0 and features:
            # The control: the same image without quotas mounts here.
            plain = os.path.join(self.dir, "plain.img")
            with open(plain, "wb") as f:
                f.truncate(32 << 20)
            sh("mkfs.ext4", "-q", "-F", plain)
            sh("mount", "-o", "loop", plain, self.mnt)
            sh("umount", self.mnt)
            shutil.rmtree(self.dir, ignore_errors=True)
            pytest.skip("this kernel cannot mount ext4 with its quota feature (an image without it mounts; the "
                        "kernel lacks quota support such as CONFIG_QFMT_V2); mount said: " + mounted.stderr.strip())
        assert mounted.returncode == 0, mounted.stderr
        self.device = sh("findmnt", "-n", "-o", "SOURCE", self.mnt).stdout.strip()
        os.chmod(self.mnt, 0o755)
        self.tenant = f"ctj-q{uuid.uuid4().hex[:6]}"
        host.extra_users = [*getattr(host, "extra_users", []), self.tenant]
        sh("useradd", "-m", "-d", os.path.join(self.mnt, self.tenant), "-s", "/bin/bash", "-G", TENANT_GROUP,
           self.tenant)
        self.home = os.path.join(self.mnt, self.tenant)
        os.chmod(self.home, 0o750)

    def check(self):
        r = self.host.run_root([self.host.bin, "check", "--user", self.tenant])
        return check_line(r.stdout, f"disk quota of {self.tenant}")

    def write_mib(self, mib):
        """dd of `mib` MiB into the home, in a one-off jail as the tenant."""
        return self.host.run_root(self.host.jail(
            self.tenant, f"exec 2>&1; dd if=/dev/zero of=$HOME/big bs=1M count={mib} status=none && echo WROTE; "
                         "rm -f $HOME/big"))

    def close(self):
        sh("pkill", "-KILL", "-u", self.tenant, check=False)
        sh("userdel", "-f", self.tenant, check=False)
        sh("umount", self.mnt, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def loop_home(host):
    made = []

    def make(features=None, options=()):
        made.append(LoopHome(host, features, options))
        return made[-1]

    yield make
    for h in made:
        h.close()


def test_check_says_a_home_without_quotas_can_be_filled_and_how_to_turn_them_on(host, loop_home):
    h = loop_home()
    assert h.check() == (
        f"WARNING: no quotas on {h.mnt} (ext4, {h.device}): {h.tenant} can fill {h.mnt}, which every home on it "
        f"shares (fix: tune2fs -O quota {h.device} while it is unmounted (or quotacheck -cum {h.mnt}), add usrquota "
        f"to its options in /etc/fstab and remount, then setquota -u {h.tenant} SOFT HARD 0 0 {h.mnt})")
    # True: nothing stops the tenant from writing 40 MiB.
    assert "WROTE" in h.write_mib(40).stdout


def test_check_says_quotas_counted_but_not_enforced(host, loop_home):
    h = loop_home("quota")  # the quota feature without usrquota: usage counted, limits not enforced
    assert h.check().startswith(f"WARNING: user quotas are counted but not enforced on {h.mnt} (ext4, {h.device}): "
                                f"{h.tenant} can fill {h.mnt}"), h.check()


def test_check_reports_an_enforced_user_quota_and_it_holds(host, loop_home):
    h = loop_home("quota", ["usrquota"])
    subprocess.run(["bash", os.path.join(REPO, "install", "ensure-packages.sh"), "quota"], check=True, timeout=300)
    # Enforced, but this tenant has no limit yet.
    assert h.check() == (
        f"WARNING: user quotas are enforced on {h.mnt} (ext4, {h.device}) but {h.tenant} has no block limit: "
        f"{h.tenant} can fill {h.mnt}, which every home on it shares (fix: setquota -u {h.tenant} SOFT HARD 0 0 "
        f"{h.mnt})")
    assert "WROTE" in h.write_mib(40).stdout  # control: without a limit the write succeeds
    sh("setquota", "-u", h.tenant, "0", str(20 * 1024), "0", "0", h.mnt)
    v = h.check()
    assert re.fullmatch(rf"ok \(user quotas are enforced on {re.escape(h.mnt)} \(ext4, {re.escape(h.device)}\): "
                        rf"{h.tenant}'s limit 20M, used \d+[BK]\)", v), v
    # What check says is what the kernel does: the write past 20M fails in the jail.
    out = h.write_mib(40).stdout
    assert "WROTE" not in out and "Disk quota exceeded" in out, out
