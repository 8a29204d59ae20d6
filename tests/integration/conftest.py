"""The harness of the root integration suites, in one place:

- the `host` fixture: real users and groups, the real helper installed
  setuid-root into a temporary prefix, the repo's PAM service, a root-owned
  test config and its variants (`Host.config_variant`);
- becoming a user: `as_user` is the one demotion (groups, gid, uid, then
  rlimits and closed std fds) every child the harness starts as someone else
  goes through; `start_as` starts such a child, `spawn` runs one to its end;
- the audit-log reader: `log_lines` (and `Host.audit_lines`, `pid_lines`);
- the process scanner: `pids` (and `proc_state`, `proc_status`,
  `proc_children`, `proc_exe`, `awaiting_init`);
- the host's features, probed where a suite needs them: `tiocsti_for_all`
  (dev.tty.legacy_tiocsti), `cgroup_controllers` and `cgroup_missing` (the
  cgroup layout, which v1/v2 controllers exist and are writable, a freezer),
  and the test set-up the default policy (network = isolated) needs
  (`network_setup_missing`: /dev/net/tun 0666, the group, the rules), which
  tests/run.sh makes.

Every name the suites create starts with "ctj"; everything is removed after.
"""
import contextlib
import datetime
import fcntl
import glob
import grp
import os
import pwd
import re
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import termios
import time
import uuid

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_BIN = os.environ.get("CLIHOST_JAIL_BUILD_BIN", os.path.join(REPO, "build", "ci", "clihost-jail"))
TEST_CONFIG = os.environ.get("CLIHOST_JAIL_TEST_CONFIG", "/etc/clihost-jail-test/jail.conf")
RUNTIME_DIR = os.environ.get("CLIHOST_JAIL_TEST_RUNTIME_DIR", "/run/clihost-jail-test")
AUTH_LOG = "/var/log/auth.log"
PAM_TARGET = "/etc/pam.d/clihost-jail"  # the harness installs the repo's service here
# The attach stub, built beside the helper, installed where the test build
# looks for it (CMake CLIHOST_JAIL_ATTACH_STUB, set by tests/run.sh).
STUB_BIN = os.environ.get("CLIHOST_JAIL_STUB_BIN", os.path.join(os.path.dirname(BUILD_BIN), "clihost-jail-attach"))
STUB_TARGET = os.environ.get("CLIHOST_JAIL_TEST_ATTACH_STUB", "/usr/local/libexec/clihost-jail-test/clihost-jail-attach")
# The supervisor program and the admin program (check, print), built beside
# the helper, installed where the test build execs them (CMake
# CLIHOST_JAIL_SUPERVISOR, CLIHOST_JAIL_ADMIN, set by tests/run.sh).
SUPERVISOR_BIN = os.environ.get("CLIHOST_JAIL_SUPERVISOR_BIN",
                                os.path.join(os.path.dirname(BUILD_BIN), "clihost-jail-supervisor"))
SUPERVISOR_TARGET = os.environ.get("CLIHOST_JAIL_TEST_SUPERVISOR",
                                   "/usr/local/libexec/clihost-jail-test/clihost-jail-supervisor")
ADMIN_BIN = os.environ.get("CLIHOST_JAIL_ADMIN_BIN", os.path.join(os.path.dirname(BUILD_BIN), "clihost-jail-admin"))
ADMIN_TARGET = os.environ.get("CLIHOST_JAIL_TEST_ADMIN", "/usr/local/libexec/clihost-jail-test/clihost-jail-admin")

EXEC_GROUP = "ctj-exec"        # group of the setuid binary (mode 4750)
TENANT_GROUP = "ctj-tenants"
PROXY = "ctj-proxy"            # listed in [callers] users
INTRUDER = "ctj-intruder"      # may exec the binary, but is no caller
OUTSIDER = "ctj-outsider"      # may not even exec it
TENANTS = ["ctj-alice", "ctj-bob"]
NON_TENANT = "ctj-carol"

# What a child started by the harness gets unless a test says otherwise.
DEFAULT_ENV = {"PATH": "/usr/bin:/bin"}

CGROUP_ROOT = "/sys/fs/cgroup"


def _own_cgroup():
    """The cgroup this test run is in, in the memory hierarchy (v1) or the
    unified one (v2), without its leading '/'. On these machines it belongs
    to the machine's own manager: nothing may leave it, so the tenants'
    cgroups are made below it (its path is then the parent in every
    hierarchy: made where absent, removed after)."""
    for line in open("/proc/self/cgroup"):
        _, controllers, path = line.rstrip("\n").split(":", 2)
        if "memory" in controllers.split(",") or (controllers == "" and os.path.exists(CGROUP_ROOT + "/cgroup.controllers")):
            return path.strip("/")
    return ""


# The tenants' cgroups in the suites: PARENT/UID in each hierarchy.
CGROUP_PARENT = "/".join(p for p in (_own_cgroup(), "ctj-tenants") if p)


# refusal_delay_max = 0: the refusal delay is off but where a test turns it
# on (test_clihost_proxy.py); the suites make many refusals on purpose.
# [jail] stays last: tests append [jail] keys to BASE_CONFIG.
BASE_CONFIG = f"""[callers]
users = {PROXY}
groups =
[tenants]
group = {TENANT_GROUP}
min_uid = 1000
max_uid = 60000
refusal_delay_max = 0
[limits]
cgroup_parent = {CGROUP_PARENT}
[jail]
allow_caller_command = true
shell = /usr/bin/bash
"""


def cgroup_dirs(rel):
    """rel's directory in every cgroup hierarchy there is (v2: one)."""
    if os.path.exists(CGROUP_ROOT + "/cgroup.controllers"):
        return [os.path.join(CGROUP_ROOT, rel)]
    return [os.path.join(CGROUP_ROOT, c, rel) for c in ("memory", "pids", "cpu", "freezer")
            if os.path.exists(os.path.join(CGROUP_ROOT, c, "cgroup.procs"))]


def tenant_cgroup(tenant, controller, leaf="jails", parent=None):
    """The tenant's cgroup directory (its jails leaf by default) in the
    hierarchy of `controller` (v1; ignored on v2)."""
    rel = os.path.join(parent or CGROUP_PARENT, str(pwd.getpwnam(tenant).pw_uid), leaf)
    if os.path.exists(CGROUP_ROOT + "/cgroup.controllers"):
        return os.path.join(CGROUP_ROOT, rel)
    return os.path.join(CGROUP_ROOT, controller, rel)


def remove_cgroup_tree(rel):
    """Removes the suites' cgroups: rel and what is below it, deepest first,
    then each of rel's components that the suites made (empty ones). A
    hybrid host's cgroup2 hierarchy too: the lock holders' PARENT/helper is
    made there."""
    unified = os.path.join(CGROUP_ROOT, "unified")
    extra = [os.path.join(unified, rel)] if os.path.exists(os.path.join(unified, "cgroup.procs")) else []
    for top in cgroup_dirs(rel) + extra:
        for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            with contextlib.suppress(OSError):
                os.rmdir(d)
        # Up to the hierarchy's mount: a non-empty one (the run's own
        # cgroup, which holds this process) stays.
        mount = top[: len(top) - len(rel)].rstrip("/")
        d = os.path.dirname(top)
        while len(d) > len(mount):
            with contextlib.suppress(OSError):
                os.rmdir(d)
            d = os.path.dirname(d)
# Where suites put an sshd drop-in for the test tenant group (removed after).
TEST_SSHD_DROP_IN = "/etc/ssh/sshd_config.d/ctj-routes-test.conf"


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kw)


# --- becoming a user ----------------------------------------------------------

def as_user(user, limits=(), close_std=(), controlling_tty=False):
    """A preexec_fn that makes the child `user` (None: it stays root) the way
    the proxy's own process is that user: its supplementary groups
    (initgroups), gid, uid. Then `limits` ((resource, (soft, hard)) pairs,
    set after the demotion, so only what the user may set), then the std fds
    in `close_std` are closed. controlling_tty: first a new session with
    stdin (a pty slave) as its controlling terminal, as ttyd gives one."""
    pw = pwd.getpwnam(user) if user else None

    def setup():
        if controlling_tty:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        if pw:
            os.initgroups(user, pw.pw_gid)
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
        for res, val in limits:
            resource.setrlimit(res, val)
        for fd in close_std:
            os.close(fd)

    return setup


def start_as(user, argv, env=None, limits=(), close_std=(), controlling_tty=False, **popen):
    """Start argv as `user` (see as_user) in "/", with DEFAULT_ENV unless env
    is given; returns the Popen, with .started (time.time() just before)."""
    started = time.time()
    p = subprocess.Popen(argv, env=dict(DEFAULT_ENV) if env is None else env, cwd="/",
                         preexec_fn=as_user(user, limits, close_std, controlling_tty), **popen)
    p.started = started
    return p


class Ran:
    """What spawn returns: like subprocess.CompletedProcess, plus the pid
    (syslog tags every line with clihost-jail[PID]) and the start time."""

    def __init__(self, returncode, stdout, stderr, pid, started=0.0):
        self.returncode, self.stdout, self.stderr, self.pid = returncode, stdout, stderr, pid
        self.started = started

    def __repr__(self):
        return f"Ran(rc={self.returncode}, pid={self.pid}, out={self.stdout[-600:]!r}, err={self.stderr[-600:]!r})"


def spawn(argv, user=PROXY, env=None, limits=(), pass_fds=(), close_std=(), timeout=60, binary=False, pipes=False):
    """Run argv as `user` (None: root) to its end, stdin /dev/null; returns Ran.

    Output goes to files, not pipes: a jail process that outlives the helper
    (the bug class some tests look for) would hold a pipe open and hang the
    test. pipes=True for RLIMIT_FSIZE, where writing to a regular file would
    be the limit's business. pass_fds: inherited fds (kept at their numbers)."""
    if pipes:
        p = start_as(user, argv, env, limits, close_std, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, pass_fds=pass_fds)
        out, err = p.communicate(timeout=timeout)
    else:
        with tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
            p = start_as(user, argv, env, limits, close_std, stdin=subprocess.DEVNULL, stdout=fout, stderr=ferr,
                         pass_fds=pass_fds)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise
            fout.seek(0)
            ferr.seek(0)
            out, err = fout.read(), ferr.read()
    if not binary:
        out, err = out.decode(errors="replace"), err.decode(errors="replace")
    return Ran(p.returncode, out, err, p.pid, p.started)


# --- the audit log ----------------------------------------------------------------

class _AuthLog:
    """The auth log's lines written since this test process started, read
    incrementally: each call reads only what was appended since the last
    (the log is shared by every suite and grows to tens of megabytes over
    a run; read whole on every poll it cost seconds a test). A rotated or
    truncated log is read from its start."""

    def __init__(self):
        self.inode, self.offset, self.lines, self.partial = None, 0, [], b""
        try:
            st = os.stat(AUTH_LOG)
            self.inode, self.offset = st.st_ino, st.st_size
        except FileNotFoundError:
            pass

    def read(self):
        try:
            with open(AUTH_LOG, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_ino != self.inode or st.st_size < self.offset:
                    self.inode, self.offset, self.partial = st.st_ino, 0, b""
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return self.lines
        self.offset += len(data)
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]
        self.lines.extend(data[:cut].decode(errors="replace").splitlines(True))
        return self.lines


_AUTH_LOG = _AuthLog()


def _read_auth_log():
    """The auth log's lines written since this test process started: a
    test looks only for what its own runs wrote."""
    return _AUTH_LOG.read()


def log_lines(select, want=1, timeout=5.0, until=None):
    """The auth-log lines for which select(line) is true, once there are
    `want` of them (and, given `until`, one of them for which until(line)
    is true) or `timeout` seconds have passed (syslog writes them
    asynchronously, and processes write them in no fixed order)."""
    deadline = time.time() + timeout
    while True:
        lines = [l for l in _read_auth_log() if select(l)]
        done = len(lines) >= want and (until is None or any(until(l) for l in lines))
        if done or time.time() >= deadline:
            return lines
        time.sleep(0.1)


def pam_closed(line):
    """A supervisor's last line: its PAM session closed. It comes after the
    jail's own end line, and may come after the front has returned."""
    return "PAM session closed" in line


def exited(line):
    """An audit line of a jail's (or its supervisor's) end."""
    return "decision=exit" in line


def refused(line):
    """An audit line that refuses a request or says it failed; the
    supervisor's comes after the front's allow line."""
    return "decision=deny" in line or "decision=fail" in line


def logged_at(line):
    """The time of a syslog line (rsyslog's ISO timestamp), or 0."""
    try:
        return datetime.datetime.fromisoformat(line.split(" ", 1)[0]).timestamp()
    except ValueError:
        return 0.0


def pid_lines(host, pid, since, want=1, timeout=5.0, until=None):
    """Every syslog line of one helper process (tagged clihost-jail[PID]),
    written since `since` (pids are reused; the log is not); `until` as
    for log_lines."""
    tag = f"clihost-jail[{pid}]:"
    return log_lines(lambda l: tag in l and logged_at(l) >= since - 1.0, want, timeout, until)


def front_and_supervisor_lines(host, r, want=1, timeout=5.0, until=None):
    """The syslog lines of a front (a Ran or Popen with .pid, .started) and
    of the supervisor it handed over to (named in its "handing over to the
    supervisor N" line, the front's first): a one-off's allow line, its
    plan's warnings and PAM are the supervisor's, and `until` waits for
    one of those."""
    lines = pid_lines(host, r.pid, r.started, want, timeout)
    for l in lines:
        m = re.search(r"handing over to the supervisor (\d+)", l)
        if m:
            lines += pid_lines(host, int(m.group(1)), r.started, want, timeout, until)
            break
    return lines


# --- processes ----------------------------------------------------------------------

def proc_exe(pid):
    return os.readlink(f"/proc/{pid}/exe")


def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, T, Z, X, ...)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def proc_status(pid, key):
    """The fields of the "KEY:" line of /proc/PID/status (e.g. Uid: real,
    effective, saved, fs)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split()[1:]
    raise OSError(f"no {key} in /proc/{pid}/status")


def proc_children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def pids(uid=None, exe=None, comm=None, live=False):
    """The processes that match every criterion given: owned by uid, running
    the binary exe, named comm, and (live) not a zombie (this VM's init reaps
    lazily, and a zombie runs nothing). A process that vanishes while it is
    read does not match."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if uid is not None and os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            if exe is not None and proc_exe(pid) != exe:
                continue
            if comm is not None:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() != comm:
                        continue
            if live and proc_state(pid) in ("Z", "X"):
                continue
        except OSError:
            continue
        out.append(pid)
    return out


# How long init may take to reap an orphan: this VM's init reaps lazily
# (defunct processes linger up to 3 s); most inits reap at once.
INIT_REAP_WAIT = 10.0


def awaiting_init(pid):
    """An exited orphan that init has yet to reap: a zombie whose parent is
    pid 1. Where init reaps lazily (this VM's init: up to 3 s) it lingers;
    it runs nothing and holds nothing but its pid. A zombie whose parent
    still runs is not one (that parent has not reaped it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
    except OSError:
        return True  # gone
    return state in ("Z", "X") and ppid == "1"


def wait_until(pred, timeout=10.0, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def install_program(src, target, mode):
    """A program at the path the test build names, root's (its directory
    root's 0755), as an install makes it; replaced atomically."""
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    tmp = target + ".new"
    shutil.copy(src, tmp)
    os.chown(tmp, 0, 0)
    os.chmod(tmp, mode)
    os.replace(tmp, target)


def install_attach_stub():
    """The attach stub, root's 0755; the supervisor program, root's 0700
    (not setuid, executable by root only); the admin program, root's 0755;
    the session jail's tmux server's OOM fork handler beside the stub
    (helper/stub/oom_preload.cpp), root's 0644."""
    install_program(STUB_BIN, STUB_TARGET, 0o755)
    install_program(SUPERVISOR_BIN, SUPERVISOR_TARGET, 0o700)
    install_program(ADMIN_BIN, ADMIN_TARGET, 0o755)
    built = os.path.join(os.path.dirname(STUB_BIN), "clihost-jail-oom.so")
    preload = os.path.join(os.path.dirname(STUB_TARGET), "clihost-jail-oom.so")
    install_program(built, preload, 0o644)


def _waiting_jails(uid, oneoff):
    """The processes of a tenant's jails waiting for their connection (each:
    its stub, bwrap's pid 1, bwrap, its watcher), by the tenant's uid: the
    attach jails' or (oneoff) the one-off jails', told apart by bwrap's
    --json-status-fd, which only a one-off jail's has."""
    out = set()
    for pid in pids(uid=uid, live=True):
        try:
            if os.readlink(f"/proc/{pid}/exe") != STUB_TARGET:
                continue
        except OSError:
            continue
        chain, p = set(), pid
        while p > 1:
            try:
                if os.stat(f"/proc/{p}").st_uid != uid:
                    break
                chain.add(p)
                p = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                break
        argvs = []
        for q in chain:
            try:
                argvs.append(open(f"/proc/{q}/cmdline", "rb").read().split(b"\0"))
            except OSError:
                pass
        if any(b"--json-status-fd" in a for a in argvs) == oneoff:
            out |= chain
    return out


def prepared_attach_jails(uid):
    """The processes of a tenant's attach jails prepared for the next
    connection (each waits: its stub, bwrap's pid 1, bwrap, its watcher),
    by the tenant's uid."""
    return _waiting_jails(uid, oneoff=False)


def prepared_oneoff_jails(uid):
    """Likewise, the one-off jail prepared for the tenant's next one-off."""
    return _waiting_jails(uid, oneoff=True)


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
        # The supervisor program: the supervisors and their children (the
        # jails' watchers, before their drop) run it, never the setuid front.
        self.supervisor_bin = SUPERVISOR_TARGET
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
        install_attach_stub()
        _make_root_dir(self.conf_dir)
        _make_root_dir(self.variants)
        self._write(TEST_CONFIG, BASE_CONFIG)
        # An installed service (the quickstart's, the package's conffile) is
        # kept whole, bytes, mode and owner, and put back; none is removed.
        if os.path.lexists(PAM_TARGET):
            st = os.lstat(PAM_TARGET)
            self._pam_backup = (open(PAM_TARGET, "rb").read(), st.st_mode & 0o7777, st.st_uid, st.st_gid)
        shutil.copy(os.path.join(REPO, "pam", "clihost-jail"), PAM_TARGET)
        os.chmod(PAM_TARGET, 0o644)

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
        remove_cgroup_tree(CGROUP_PARENT)
        for u in [PROXY, INTRUDER, OUTSIDER, NON_TENANT, *TENANTS, *getattr(self, "extra_users", [])]:
            _delete_user(u)
        for g in [EXEC_GROUP, TENANT_GROUP]:
            sh("groupdel", g, check=False)
        shutil.rmtree(self.prefix, ignore_errors=True)
        shutil.rmtree(self.conf_dir, ignore_errors=True)
        if self._pam_backup is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(PAM_TARGET)
        else:
            data, mode, uid, gid = self._pam_backup
            with open(PAM_TARGET, "wb") as f:
                f.write(data)
            os.chown(PAM_TARGET, uid, gid)
            os.chmod(PAM_TARGET, mode)

    def _write(self, path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chown(path, 0, 0)
        os.chmod(path, 0o644)

    def config_variant(self, extra=None, replace=None):
        """A root-owned config; returns its path. extra: {section: "key = value\n..."}
        lines added at the top of the section (a key the base sets too is then
        a duplicate, which the helper refuses). replace: {section: {key: value}}
        sets each key to value, in place if the base has it, added otherwise;
        a value of None removes the key."""
        path = os.path.join(self.variants, f"{uuid.uuid4().hex}.conf")
        lines = BASE_CONFIG.splitlines()

        def section_end(section):
            """Index after the last line of [section], appending the header if absent."""
            if f"[{section}]" not in lines:
                lines.append(f"[{section}]")
            i = lines.index(f"[{section}]") + 1
            while i < len(lines) and not lines[i].startswith("["):
                i += 1
            return i

        for section, keys in (replace or {}).items():
            for key, value in keys.items():
                end = section_end(section)
                start = lines.index(f"[{section}]") + 1
                at = next((i for i in range(start, end) if lines[i].split("=", 1)[0].strip() == key), None)
                if at is not None and value is None:
                    del lines[at]
                elif at is not None:
                    lines[at] = f"{key} = {value}"
                elif value is not None:
                    lines.insert(end, f"{key} = {value}")
        for section, body in (extra or {}).items():
            section_end(section)
            at = lines.index(f"[{section}]") + 1
            lines[at:at] = body.splitlines()
        self._write(path, "\n".join(lines) + "\n")
        return path

    # --- running ------------------------------------------------------------
    def home(self, user):
        return pwd.getpwnam(user).pw_dir

    def run_as(self, user, args, env=None, timeout=60):
        """Run args as `user` (uid, gid and groups), like the proxy would."""
        return spawn(args, user=user, env=env, timeout=timeout)

    def tmux_sock(self, tenant):
        """The tenant's tmux socket, where the helper's tmux commands put it."""
        return os.path.join(self.home(tenant), ".cache", "tmux", "clihost.sock")

    def tmux(self, tenant, *args):
        """tmux ARGS as the tenant on the tenant's socket (outside any jail)."""
        return self.run_as(tenant, ["tmux", "-S", self.tmux_sock(tenant), *args])

    def has_tmux_session(self, tenant, session):
        return self.tmux(tenant, "has-session", "-t", "=" + session).returncode == 0

    def run_root(self, args, env=None, config=None, timeout=60):
        """Run args as root (a root proxy); config: CLIHOST_JAIL_CONFIG."""
        e = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"} if env is None else dict(env)
        if config:
            e["CLIHOST_JAIL_CONFIG"] = config
        return spawn(args, user=None, env=e, timeout=timeout)

    def jail(self, tenant, script, session=None, verb="run"):
        """argv of `clihost-jail run` running /bin/sh -c script in the jail."""
        return [self.bin, verb, "--user", tenant, "--session", session or new_session(),
                "--", "/bin/sh", "-c", script]

    # --- observing ------------------------------------------------------------
    def audit_lines(self, token, want=1, timeout=5.0, until=None):
        """auth.log lines containing token (waits for syslog to write them;
        with `until`, also for a line it is true of: log_lines)."""
        return log_lines(lambda l: token in l, want, timeout, until)

    def processes_of(self, user):
        return pids(uid=pwd.getpwnam(user).pw_uid)

    def helper_pids(self):
        """Processes running the installed helper or its supervisor program
        (and their fault-injection builds): the fronts, the supervisors and
        their watchers (the tenant's side, between the parent and bwrap)."""
        out = []
        for exe in (self.bin, SUPERVISOR_TARGET, SUPERVISOR_TARGET + "-faults"):
            out += pids(exe=exe)
        return out

    def waiting_parents(self):
        """The helper processes that still have effective uid 0."""
        out = []
        for pid in self.helper_pids():
            try:
                if proc_status(pid, "Uid")[1] == "0":
                    out.append(pid)
            except OSError:
                continue
        return out

    def supervisors(self):
        """The tenants' supervisors (root, the pid of each live record in
        the runtime directory)."""
        out = []
        for path in glob.glob(os.path.join(RUNTIME_DIR, "*.state")):
            try:
                pid = int(open(path).read().split()[3])
            except (OSError, ValueError, IndexError):
                continue
            if pid in self.waiting_parents():
                out.append(pid)
        return out

    def fronts(self):
        """The fronts (`run` as ttyd or a caller runs it): root helper
        processes that are no supervisor, nor a supervisor's child on its
        way to becoming one (the double fork, or a jail child before its
        drop): their parent is no helper process."""
        helpers = set(self.helper_pids())
        sups = set(self.supervisors())
        out = []
        for pid in self.waiting_parents():
            try:
                ppid = int(proc_status(pid, "PPid")[0])
            except OSError:
                continue
            if pid not in sups and ppid not in helpers and ppid not in sups:
                out.append(pid)
        return out

    def wait_gone(self, user, timeout=5.0):
        """Every process of user has ended: none runs, and none is a zombie
        that a live process of ours (the helper, bwrap) failed to reap; an
        orphan that init has yet to reap counts as gone (awaiting_init).
        Then, not asserted, it gives init up to INIT_REAP_WAIT to reap those,
        so that the next test starts with no process of user at all."""
        gone = wait_until(lambda: all(awaiting_init(p) for p in self.processes_of(user)), timeout)
        if gone:
            self.wait_reaped(user)
        return gone

    def wait_reaped(self, user, timeout=None):
        """No process of user is left at all, zombies awaiting init included
        (bounded by INIT_REAP_WAIT: init's pace is the host's)."""
        return wait_until(lambda: not self.processes_of(user), INIT_REAP_WAIT if timeout is None else timeout)


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


FAULTS_BIN = os.environ.get("CLIHOST_JAIL_FAULTS_BIN",
                            os.path.join(os.path.dirname(os.environ.get("CLIHOST_JAIL_BUILD_BIN", "")),
                                         "tests", "clihost-jail-faults"))


def install_faults_bin(host, name="clihost-jail-faults"):
    """The fault-injection build (never shipped) copied next to the helper,
    runnable by root only as the tests run it; its supervisor and admin
    programs where it execs them (the test build's paths + "-faults")."""
    assert os.path.exists(FAULTS_BIN), FAULTS_BIN
    faults_dir = os.path.dirname(FAULTS_BIN)
    install_program(os.path.join(faults_dir, "clihost-jail-supervisor-faults"), SUPERVISOR_TARGET + "-faults", 0o700)
    install_program(os.path.join(faults_dir, "clihost-jail-admin-faults"), ADMIN_TARGET + "-faults", 0o755)
    path = os.path.join(host.prefix, name)
    shutil.copy(FAULTS_BIN, path)
    os.chmod(path, 0o755)
    return path


def attach_clients(tenant):
    """The tenant's live tmux clients of attach jails (tmux -N ... new-session -A)."""
    out = []
    for pid in pids(uid=pwd.getpwnam(tenant).pw_uid, live=True):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"tmux") and b"new-session" in argv and b"-N" in argv:
            out.append(pid)
    return out


def new_session():
    return "t" + uuid.uuid4().hex[:12]


# --- the host's features ---------------------------------------------------------
# A test may skip only where the host lacks a feature, and then names it
# (pytest.skip(reason)); where the feature exists it runs its real assertion.

LEGACY_TIOCSTI = "/proc/sys/dev/tty/legacy_tiocsti"


def tiocsti_for_all():
    """None where the kernel lets an unprivileged process push input into its
    own terminal with TIOCSTI (no dev.tty.legacy_tiocsti, as before Linux 6.2,
    or it is 1); else the kernel's reason. Where it is 0 the kernel refuses
    TIOCSTI without CAP_SYS_ADMIN (EIO), so a positive control showing that
    TIOCSTI would work from a tenant cannot run; the jail's seccomp filter
    still refuses it first, with EPERM."""
    try:
        with open(LEGACY_TIOCSTI) as f:
            value = f.read().strip()
    except FileNotFoundError:
        return None
    if value == "1":
        return None
    return (f"dev.tty.legacy_tiocsti = {value}: this kernel refuses TIOCSTI to every process without "
            "CAP_SYS_ADMIN, so unjailed TIOCSTI cannot be shown to work")


def _mountinfo():
    """(mount point, root within its filesystem, fstype, super options) of
    each mount this process sees."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields, rest = left.split(), right.split()
            out.append((fields[4].replace("\\040", " "), fields[3], rest[0], rest[2].split(",")))
    return out


def _cgroup_dir(mount_point, mount_root, path):
    if mount_root != "/" and (path == mount_root or path.startswith(mount_root + "/")):
        path = path[len(mount_root):]
    return os.path.normpath(mount_point + "/" + path.lstrip("/"))


def cgroup_writable(path):
    """A child cgroup can be made under path (made and removed at once)."""
    probe = os.path.join(path, f"ctj-probe-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    os.rmdir(probe)
    return True


def cgroup_controllers():
    """The cgroup controllers of the cgroup this process runs in:
    {name: (version, directory)}, v1 hierarchies and the v2 one. "freezer" is
    v1's controller or, in v2, the cgroup.freeze file every non-root cgroup
    has (Linux >= 5.2). Whether each can be written: cgroup_writable(dir)."""
    mounts = _mountinfo()
    out = {}
    with open("/proc/self/cgroup") as f:
        lines = [l.rstrip("\n").split(":", 2) for l in f if l.strip()]
    for hid, names, path in lines:
        if hid == "0":
            m = next((m for m in mounts if m[2] == "cgroup2"), None)
            if m is None:
                continue
            d = _cgroup_dir(m[0], m[1], path)
            try:
                with open(os.path.join(d, "cgroup.controllers")) as f:
                    v2 = f.read().split()
            except OSError:
                v2 = []
            for name in v2:
                out[name] = (2, d)
            if os.path.exists(os.path.join(d, "cgroup.freeze")):
                out.setdefault("freezer", (2, d))
            continue
        for name in names.split(","):
            if not name or name.startswith("name="):
                continue
            m = next((m for m in mounts if m[2] == "cgroup" and name in m[3]), None)
            if m is not None:
                out[name] = (1, _cgroup_dir(m[0], m[1], path))
    return out


def cgroup_missing(*names):
    """None when each named controller exists for this process and a child
    cgroup can be made under it; else the host's reason, for pytest.skip."""
    found = cgroup_controllers()
    for name in names:
        if name not in found:
            return (f"no cgroup {name} controller for this process (v1 hierarchies and v2 controllers here: "
                    f"{', '.join(sorted(found)) or 'none'})")
        version, d = found[name]
        if not cgroup_writable(d):
            return f"the cgroup v{version} {name} controller at {d} is not writable here (no child cgroup can be made)"
    return None


TUN = "/dev/net/tun"
NET_GROUP = "clihost-jail-net"


def network_setup_missing():
    """What the default policy (network = isolated) needs of the test host and
    tests/run.sh sets up, as udev, the quickstart and the .deb do on a real
    host; None when all is there. Not a host feature: a suite started without
    that set-up fails with this, not with every jail's own refusal."""
    missing = []
    try:
        mode = stat.S_IMODE(os.stat(TUN).st_mode)
        if mode & 0o006 != 0o006:
            missing.append(f"{TUN} is mode {mode:04o}, not 0666 (slirp4netns opens it as the tenant)")
    except FileNotFoundError:
        missing.append(f"no {TUN} (mknod -m 0666 {TUN} c 10 200)")
    try:
        grp.getgrnam(NET_GROUP)
    except KeyError:
        missing.append(f"no group {NET_GROUP}")
    if subprocess.run(["nft", "list", "table", "inet", "clihost_jail"], capture_output=True).returncode != 0:
        missing.append("the host-address rules are not loaded (nft -f install/nftables/clihost-jail.nft)")
    return "; ".join(missing) or None


@pytest.fixture(scope="session")
def host():
    if os.geteuid() != 0:
        pytest.fail("integration tests must run as root")
    assert os.path.exists(BUILD_BIN), f"build the helper first: {BUILD_BIN}"
    missing = network_setup_missing()
    if missing:
        pytest.fail(f"the test host lacks tests/run.sh's set-up for network = isolated: {missing}")
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


@pytest.fixture
def terms(host):
    """The test's connections (ptyutil.attach appends to it): closed after
    the test, then every session jail the suites left running is stopped."""
    opened = []
    yield opened
    for t in opened:
        t.close()
    host.stop_all()
