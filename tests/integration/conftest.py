"""Shared fixtures of the root integration suites: real users and groups,
the real helper installed setuid-root into a temporary prefix, the repo's PAM
service, a root-owned test config, and readers for the audit log.

Every name the suites create starts with "ctj"; everything is removed after.
"""
import contextlib
import fcntl
import glob
import grp
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_BIN = os.environ.get("CLIHOST_JAIL_BUILD_BIN", os.path.join(REPO, "build", "ci", "clihost-jail"))
TEST_CONFIG = os.environ.get("CLIHOST_JAIL_TEST_CONFIG", "/etc/clihost-jail-test/jail.conf")
RUNTIME_DIR = os.environ.get("CLIHOST_JAIL_TEST_RUNTIME_DIR", "/run/clihost-jail-test")
AUTH_LOG = "/var/log/auth.log"

EXEC_GROUP = "ctj-exec"        # group of the setuid binary (mode 4750)
TENANT_GROUP = "ctj-tenants"
PROXY = "ctj-proxy"            # listed in [callers] users
INTRUDER = "ctj-intruder"      # may exec the binary, but is no caller
OUTSIDER = "ctj-outsider"      # may not even exec it
TENANTS = ["ctj-alice", "ctj-bob"]
NON_TENANT = "ctj-carol"

BASE_CONFIG = f"""[callers]
users = {PROXY}
groups =
[tenants]
group = {TENANT_GROUP}
min_uid = 1000
max_uid = 60000
[jail]
allow_caller_command = true
shell = /usr/bin/bash
"""
# Where suites put an sshd drop-in for the test tenant group (removed after).
TEST_SSHD_DROP_IN = "/etc/ssh/sshd_config.d/ctj-routes-test.conf"


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


def _delete_user(name):
    sh("pkill", "-KILL", "-u", name, check=False)
    sh("userdel", "-r", "-f", name, check=False)


def _make_root_dir(path, mode=0o755):
    os.makedirs(path, exist_ok=True)
    os.chown(path, 0, 0)
    os.chmod(path, mode)


class Host:
    """The test host: users, the installed helper, configs, logs."""

    def __init__(self):
        # Not /run: on a systemd host it is a nosuid tmpfs, where the setuid
        # bit of the installed helper would silently do nothing. /var/cache is
        # on the root filesystem on Debian and not bound into the jails.
        self.prefix = tempfile.mkdtemp(prefix="ctj-", dir="/var/cache")
        os.chmod(self.prefix, 0o755)
        if os.statvfs(self.prefix).f_flag & os.ST_NOSUID:
            pytest.fail(f"{self.prefix} is on a nosuid mount: the setuid helper cannot be tested there")
        self.bin = os.path.join(self.prefix, "clihost-jail")
        self.conf_dir = os.path.dirname(TEST_CONFIG)
        self.variants = os.path.join(self.conf_dir, "variants")
        self._pam_backup = None

    # --- set-up -------------------------------------------------------------
    def create(self):
        for u in [PROXY, INTRUDER, OUTSIDER, NON_TENANT, *TENANTS]:
            _delete_user(u)
        for g in [EXEC_GROUP, TENANT_GROUP]:
            sh("groupdel", g, check=False)
            sh("groupadd", g)
        sh("useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", "-G", EXEC_GROUP, PROXY)
        sh("useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", "-G", EXEC_GROUP, INTRUDER)
        sh("useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", OUTSIDER)
        for t in TENANTS:
            self.add_tenant(t)
        sh("useradd", "-m", "-s", "/bin/bash", NON_TENANT)
        # The real install shape: root:EXEC_GROUP, mode 4750.
        shutil.copy(BUILD_BIN, self.bin)
        os.chown(self.bin, 0, grp.getgrnam(EXEC_GROUP).gr_gid)
        os.chmod(self.bin, 0o4750)
        _make_root_dir(self.conf_dir)
        _make_root_dir(self.variants)
        self._write(TEST_CONFIG, BASE_CONFIG)
        pam_target = "/etc/pam.d/clihost-jail"
        if os.path.exists(pam_target):
            self._pam_backup = open(pam_target).read()
        shutil.copy(os.path.join(REPO, "pam", "clihost-jail"), pam_target)
        os.chmod(pam_target, 0o644)

    def add_tenant(self, name, home_mode=0o750):
        _delete_user(name)
        sh("useradd", "-m", "-s", "/bin/bash", "-G", TENANT_GROUP, name)
        os.chmod(pwd.getpwnam(name).pw_dir, home_mode)
        return name

    def stop_all(self):
        """Ends every session jail the suites left running (by the helper's
        own `stop`, so that PAM sessions are closed)."""
        for name in os.listdir(RUNTIME_DIR) if os.path.isdir(RUNTIME_DIR) else []:
            if not name.endswith(".state"):
                continue
            try:
                tenant = open(os.path.join(RUNTIME_DIR, name)).read().split()[1]
            except (OSError, IndexError):
                continue
            self.run_root([self.bin, "stop", "--user", tenant], timeout=30)

    def destroy(self):
        self.stop_all()
        for u in [PROXY, INTRUDER, OUTSIDER, NON_TENANT, *TENANTS, *getattr(self, "extra_users", [])]:
            _delete_user(u)
        for g in [EXEC_GROUP, TENANT_GROUP]:
            sh("groupdel", g, check=False)
        shutil.rmtree(self.prefix, ignore_errors=True)
        shutil.rmtree(self.conf_dir, ignore_errors=True)
        if self._pam_backup is not None:
            with open("/etc/pam.d/clihost-jail", "w") as f:
                f.write(self._pam_backup)

    def _write(self, path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chown(path, 0, 0)
        os.chmod(path, 0o644)

    def config_variant(self, extra):
        """A root-owned config: the base plus `extra` keys; returns its path."""
        path = os.path.join(self.variants, f"{uuid.uuid4().hex}.conf")
        text = BASE_CONFIG
        for section, body in extra.items():
            if f"[{section}]" in text:
                text = text.replace(f"[{section}]\n", f"[{section}]\n{body}\n", 1)
            else:
                text += f"[{section}]\n{body}\n"
        self._write(path, text)
        return path

    # --- running ------------------------------------------------------------
    def home(self, user):
        return pwd.getpwnam(user).pw_dir

    def run_as(self, user, args, env=None, timeout=60, **kw):
        """Run args as `user` (uid, gid and groups), like the proxy would."""
        pw = pwd.getpwnam(user)

        def demote():
            os.initgroups(user, pw.pw_gid)
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)

        return subprocess.run(args, env=env if env is not None else {"PATH": "/usr/bin:/bin"},
                              preexec_fn=demote, capture_output=True, text=True, timeout=timeout, cwd="/", **kw)

    def run_root(self, args, env=None, config=None, timeout=60, **kw):
        e = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"} if env is None else dict(env)
        if config:
            e["CLIHOST_JAIL_CONFIG"] = config
        return subprocess.run(args, env=e, capture_output=True, text=True, timeout=timeout, cwd="/", **kw)

    def jail(self, tenant, script, session=None, verb="run"):
        """argv of `clihost-jail run` running /bin/sh -c script in the jail."""
        return [self.bin, verb, "--user", tenant, "--session", session or new_session(),
                "--", "/bin/sh", "-c", script]

    # --- observing ------------------------------------------------------------
    def audit_lines(self, token, want=1, timeout=5.0):
        """auth.log lines containing token (waits for syslog to write them)."""
        deadline = time.time() + timeout
        lines = []
        while time.time() < deadline:
            try:
                with open(AUTH_LOG, errors="replace") as f:
                    lines = [l for l in f if token in l]
            except FileNotFoundError:
                lines = []
            if len(lines) >= want:
                break
            time.sleep(0.1)
        return lines

    def processes_of(self, user):
        uid = pwd.getpwnam(user).pw_uid
        out = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                st = os.stat(f"/proc/{pid}")
            except FileNotFoundError:
                continue
            if st.st_uid == uid:
                out.append(int(pid))
        return out

    def helper_pids(self):
        """Processes running the installed helper: the waiting root parents
        and their watchers (the tenant's side, between the parent and bwrap)."""
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.readlink(f"/proc/{pid}/exe") == self.bin:
                    out.append(int(pid))
            except OSError:
                pass
        return out

    def waiting_parents(self):
        """The helper processes that still have effective uid 0."""
        out = []
        for pid in self.helper_pids():
            try:
                with open(f"/proc/{pid}/status") as f:
                    uids = next(l for l in f if l.startswith("Uid:")).split()
            except (OSError, StopIteration):
                continue
            if uids[2] == "0":
                out.append(pid)
        return out

    def wait_gone(self, user, timeout=5.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.processes_of(user):
                return True
            time.sleep(0.05)
        return not self.processes_of(user)


class HostFiles:
    """Backs up host files (or their absence) and puts them back exactly."""

    def __init__(self, paths):
        self.saved = {}
        for p in paths:
            if os.path.lexists(p):
                st = os.lstat(p)
                with open(p, "rb") as f:
                    self.saved[p] = (f.read(), st.st_mode, st.st_uid, st.st_gid)
            else:
                self.saved[p] = None

    def restore(self):
        for p, v in self.saved.items():
            if v is None:
                if os.path.lexists(p):
                    os.unlink(p)
            else:
                data, mode, uid, gid = v
                with open(p, "wb") as f:
                    f.write(data)
                os.chown(p, uid, gid)
                os.chmod(p, mode & 0o7777)


def write_root(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chown(path, 0, 0)
    os.chmod(path, mode)


@contextlib.contextmanager
def login_shell(user, shell):
    old = pwd.getpwnam(user).pw_shell
    sh("usermod", "-s", shell, user)
    try:
        yield
    finally:
        sh("usermod", "-s", old, user)


@contextlib.contextmanager
def sshd_can_report():
    """What `sshd -T` (run by check) needs: host keys and sshd's privilege
    separation directory, which its service makes at start. Whatever this
    creates is removed afterwards."""
    assert os.path.exists("/usr/sbin/sshd"), "openssh-server is part of the test host (tests/run.sh installs it)"
    made_dir = not os.path.isdir("/run/sshd")
    if made_dir:
        os.makedirs("/run/sshd", mode=0o755)
    keys_before = set(glob.glob("/etc/ssh/ssh_host_*"))
    if not any(k.endswith("_key") for k in keys_before):
        sh("ssh-keygen", "-A")
    new_keys = set(glob.glob("/etc/ssh/ssh_host_*")) - keys_before
    try:
        yield
    finally:
        for k in new_keys:
            os.unlink(k)
        if made_dir:
            shutil.rmtree("/run/sshd", ignore_errors=True)


@contextlib.contextmanager
def routes_closed(tenant):
    """Every route around the jail closed for `tenant`, as an operator does
    (README, "Tenants"), so that `check --user tenant` can pass: an sshd
    drop-in for the test tenant group, cron.deny and at.deny entries, login
    shell nologin (BASE_CONFIG sets [jail] shell). Host files restored after."""
    files = HostFiles(["/etc/cron.deny", "/etc/at.deny", TEST_SSHD_DROP_IN])
    try:
        with sshd_can_report(), login_shell(tenant, "/usr/sbin/nologin"):
            os.makedirs(os.path.dirname(TEST_SSHD_DROP_IN), exist_ok=True)
            write_root(TEST_SSHD_DROP_IN, f"DenyGroups {TENANT_GROUP}\n")
            for f, mode in [("/etc/cron.deny", 0o644), ("/etc/at.deny", 0o640)]:
                old = open(f).read() if os.path.exists(f) else ""
                write_root(f, old + ("" if old.endswith("\n") or not old else "\n") + tenant + "\n", mode)
            yield
    finally:
        files.restore()


def new_session():
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="session")
def host():
    if os.geteuid() != 0:
        pytest.fail("integration tests must run as root")
    assert os.path.exists(BUILD_BIN), f"build the helper first: {BUILD_BIN}"
    # One suite at a time on a machine: they share the test users, the PAM
    # service and the compiled-in test config path.
    with open("/run/ctj-integration.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        h = Host()
        h.create()
        try:
            yield h
        finally:
            h.destroy()


@pytest.fixture
def session_name():
    return new_session()


@pytest.fixture
def alice():
    return TENANTS[0]


@pytest.fixture
def bob():
    return TENANTS[1]
