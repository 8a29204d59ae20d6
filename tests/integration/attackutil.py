"""Shared pieces of the attack suites (test_attack_*.py).

- Payloads: small programs and shared objects, compiled once per run, that
  leave a marker file in a world-writable directory under the host's /tmp
  when they run. Inside the jail /tmp is a private tmpfs, so any marker there
  means a payload ran outside the jail (and its name says with which uids).
- pid_audit(): the audit lines of one helper run (conftest.spawn reports the
  helper's pid): refusals that happen before the session is known carry
  session=-, but syslog tags every line with clihost-jail[PID].
- Guard: a snapshot of files outside the tenant's home that no attack may
  change (the policy, the PAM service, the installed binary, root-only and
  world-writable canaries, the other tenants' homes).

Everything this module creates is named ctj-attack-* and removed afterwards.
"""
import hashlib
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import tempfile
import uuid

import pytest

from conftest import PROXY, TEST_CONFIG, TENANTS, pid_lines, pids, refused, start_as, wait_until
# The attack suites import these from here; they live in conftest (one spawn helper for every suite).
from conftest import Ran, spawn  # noqa: F401 (re-exported)

HOST_PIDNS = os.readlink("/proc/self/ns/pid")

# Printed by a jailed shell: proves where it runs (and as whom).
INSIDE = ('echo "CTJ_INSIDE uid=$(id -u) sandbox=$TTYD_SANDBOX '
          'pidns=$(readlink /proc/self/ns/pid) pid=$$"')


def pid_audit(host, r, want=1, timeout=5.0, until=None):
    """The audit lines of the helper run r (a Ran); `until` as for
    conftest.log_lines."""
    return [l for l in pid_lines(host, r.pid, r.started, want, timeout, until) if "action=" in l]


def assert_inside(host, tenant, stdout):
    """The jailed shell reported: tenant uid, TTYD_SANDBOX=true, its own pid namespace."""
    lines = [l for l in stdout.splitlines() if l.startswith("CTJ_INSIDE ")]
    assert len(lines) == 1, stdout
    f = dict(kv.split("=", 1) for kv in lines[0].split()[1:])
    assert int(f["uid"]) == pwd.getpwnam(tenant).pw_uid, f
    assert f["sandbox"] == "true", f
    assert f["pidns"] and f["pidns"] != HOST_PIDNS, f
    assert int(f["pid"]) < 50, f  # a pid of the jail's own namespace


def assert_refusal_line(r, codes=(1, 2)):
    """One concise, printable stderr line; a policy/usage exit code; no crash."""
    assert r.returncode in codes, r
    err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode(errors="replace")
    assert err.startswith("clihost-jail: "), r
    assert err.count("\n") == 1 and err.endswith("\n"), r
    assert all(c == "\n" or (" " <= c and c != "\x7f") for c in err), r  # no terminal/log injection
    assert len(err) < 1024, len(err)


def assert_denied_in_audit(host, r, session=None):
    if session:
        # A refusal by the supervisor comes after the front's allow line.
        lines = host.audit_lines(f"session={session}", until=refused)
    else:
        lines = pid_audit(host, r, until=refused)
    assert any(refused(l) for l in lines), (r, lines)
    for l in lines:  # the audit line cannot be split or forged by caller input
        assert l.count("action=") == 1 and "\x1b" not in l, l
    return lines


# --- compiled payloads --------------------------------------------------------------------

MARK_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
static void __attribute__((constructor)) ctj_mark(void) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s.pid%d.ruid%d.euid%d", MARKERS, TAG, (int)getpid(), (int)getuid(), (int)geteuid());
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) close(fd);
}
"""

# LD_AUDIT wants la_version; LD_PRELOAD ignores it.
PRELOAD_C = MARK_C + "unsigned la_version(unsigned v) { return v; }\n"

# Stand-in for a library the helper loads, found via LD_LIBRARY_PATH: every
# symbol the real one exports, each "succeeding" (returning 0), so that
# loading it would silently disable the privilege drop (libcap-ng.so.0, now
# linked statically where its archive exists) or PAM (libpam.so.0, which the
# helper dlopens: PAM_SUCCESS is 0).
def fake_library_source(real="/lib/x86_64-linux-gnu/libcap-ng.so.0"):
    out = subprocess.run(["nm", "-D", "--defined-only", real], capture_output=True, text=True, check=True).stdout
    names = sorted({l.split()[-1].split("@")[0] for l in out.splitlines() if " T " in l})
    return MARK_C + "".join(f"long {n}(long a, long b, long c) {{ (void)a; (void)b; (void)c; return 0; }}\n"
                            for n in names)


def fake_capng_source():
    return fake_library_source()


# The helper's own way of loading PAM (pam_dl.cpp): the control that shows a
# process which nothing stops picks the fake libpam up.
DLOPEN_PAM_C = r"""
#include <dlfcn.h>
int main(void) { return dlopen("libpam.so.0", RTLD_NOW | RTLD_LOCAL) ? 0 : 1; }
"""


# A gconv module (the pkexec CVE-2021-4034 payload shape).
GCONV_C = MARK_C + r"""
#include <stddef.h>
int gconv_init(void *step) { (void)step; return 0; }
int gconv(void *a, void *b, void *c, void *d, void *e, int f) { (void)a; (void)b; (void)c; (void)d; (void)e; (void)f; return 0; }
void gconv_end(void *step) { (void)step; }
"""

# execve with an exact argv (possibly empty: argc 0) and raw envp strings.
# usage: ctj-execve PATH ARGC ARG... ENV...
EXECVE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) return 100;
    int n = atoi(argv[2]);
    if (n < 0 || 3 + n > argc) return 100;
    char **args = calloc((size_t)n + 1, sizeof *args);
    for (int i = 0; i < n; ++i) args[i] = argv[3 + i];
    char **envp = &argv[3 + n];  /* the rest, NULL-terminated by the kernel */
    execve(argv[1], args, envp);
    perror("execve");
    return 101;
}
"""

FAKE_TOOL_SH = """#!/bin/sh
: > "{markers}/path-{name}.pid$$.uid$(/usr/bin/id -u)" 2>/dev/null
exec {real} "$@"
"""


def _cc(src, out, *flags):
    c = out + ".c"
    with open(c, "w") as f:
        f.write(src)
    subprocess.run(["gcc", "-O1", "-Wall", "-o", out, c, *flags], check=True, capture_output=True, text=True)
    os.chmod(out, 0o755)
    return out


class Payloads:
    def __init__(self, host):
        self.host = host
        self.dir = tempfile.mkdtemp(prefix="ctj-attack-", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.markers = os.path.join(self.dir, "markers")
        os.mkdir(self.markers)
        os.chmod(self.markers, 0o1777)
        q = f'-DMARKERS="{self.markers}"'

        def so(name, src, tag, *extra):
            return _cc(src, os.path.join(self.dir, name), "-shared", "-fPIC", q, f'-DTAG="{tag}"', *extra)

        self.preload_so = so("libctjpreload.so", PRELOAD_C, "preload")
        self.libdir = os.path.join(self.dir, "lib")
        os.mkdir(self.libdir)
        so("lib/libcap-ng.so.0", fake_capng_source(), "ldlibpath", "-Wl,-soname,libcap-ng.so.0")
        so("lib/libpam.so.0", fake_library_source("/lib/x86_64-linux-gnu/libpam.so.0"), "ldlibpath",
           "-Wl,-soname,libpam.so.0")
        self.dlopen_pam = _cc(DLOPEN_PAM_C, os.path.join(self.dir, "ctj-dlopen-pam"), "-ldl")
        self.gconv_dir = os.path.join(self.dir, "gconv")
        os.mkdir(self.gconv_dir)
        so("gconv/ctjevil.so", GCONV_C, "gconv")
        with open(os.path.join(self.gconv_dir, "gconv-modules"), "w") as f:
            f.write("module\tCTJEVIL//\tINTERNAL\tctjevil\t1\nmodule\tINTERNAL\tCTJEVIL//\tctjevil\t1\n")
        self.execve = _cc(EXECVE_C, os.path.join(self.dir, "ctj-execve"))
        self.fakebin = os.path.join(self.dir, "fakebin")
        os.mkdir(self.fakebin)
        for name, real in [("bwrap", "/usr/bin/bwrap"), ("tmux", "/usr/bin/tmux"), ("sh", "/bin/dash"),
                           ("env", "/usr/bin/env"), ("id", "/usr/bin/id")]:
            path = os.path.join(self.fakebin, name)
            with open(path, "w") as f:
                f.write(FAKE_TOOL_SH.format(markers=self.markers, name=name, real=real))
            os.chmod(path, 0o755)
        # The same helper binary without the setuid bit: the positive control
        # showing that the loader payloads do work when nothing stops them.
        self.plain_bin = os.path.join(self.dir, "clihost-jail-plain")
        shutil.copy(host.bin, self.plain_bin)
        os.chmod(self.plain_bin, 0o755)

    def found(self):
        return sorted(os.listdir(self.markers))

    def clear(self):
        for n in os.listdir(self.markers):
            os.unlink(os.path.join(self.markers, n))

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def payloads(host):
    p = Payloads(host)
    yield p
    p.cleanup()
    for g in _GUARDS:
        g.cleanup()


# --- what must not change -----------------------------------------------------------------

def _digest(path):
    st = os.lstat(path)
    d = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            h.update(f.read(4 << 20))
        d += (st.st_size, h.hexdigest())
    elif stat.S_ISLNK(st.st_mode):
        d += (os.readlink(path),)
    return d


def snapshot(paths):
    out = {}
    for p in paths:
        if not os.path.lexists(p):
            out[p] = None
            continue
        out[p] = _digest(p)
        if os.path.isdir(p) and not os.path.islink(p):
            for root, dirs, files in os.walk(p):
                for n in dirs + files:
                    full = os.path.join(root, n)
                    try:
                        out[full] = _digest(full)
                    except FileNotFoundError:
                        pass
    return out


_GUARDS = []


class Guard:
    """Files outside the attacked tenant's home; check() asserts none changed
    and no payload left a marker (i.e. ran outside the jail)."""

    def __init__(self, host, payloads, tenant, others=None):
        _GUARDS.append(self)  # cleaned up with the payloads at the latest
        self.host, self.payloads = host, payloads
        self.root_canary = f"/root/ctj-attack-canary-{uuid.uuid4().hex[:8]}"
        os.mkdir(self.root_canary, 0o700)
        with open(os.path.join(self.root_canary, "secret"), "w") as f:
            f.write("root-only canary\n")
        self.ww_canary = tempfile.mkdtemp(prefix="ctj-attack-ww-", dir="/tmp")
        os.chmod(self.ww_canary, 0o1777)
        self.others = [t for t in TENANTS if t != tenant] if others is None else list(others)
        self.paths = [TEST_CONFIG, "/etc/pam.d/clihost-jail", host.bin, "/etc/sudoers", "/etc/environment",
                      "/etc/security/pam_env.conf", "/etc/security/limits.conf", self.root_canary,
                      self.ww_canary, payloads.dir, *[host.home(t) for t in self.others]]
        payloads.clear()
        self.before = snapshot(self.paths)

    def check(self):
        after = snapshot(self.paths)
        changed = {k: (self.before.get(k), after.get(k)) for k in set(self.before) | set(after)
                   if self.before.get(k) != after.get(k)}
        assert not changed, f"files outside the tenant's home changed: {changed}"
        assert not self.payloads.found(), f"a payload ran outside the jail: {self.payloads.found()}"

    def cleanup(self):
        shutil.rmtree(self.root_canary, ignore_errors=True)
        shutil.rmtree(self.ww_canary, ignore_errors=True)


@pytest.fixture
def guard(host, payloads, alice):
    g = Guard(host, payloads, alice)
    yield g
    g.cleanup()


# --- tmux and processes ---------------------------------------------------------------------

def tmux_sock(host, tenant):
    return host.tmux_sock(tenant)


def has_tmux_session(host, tenant, session):
    return host.has_tmux_session(tenant, session)


def live_processes(host, user):
    """Processes of user that still run (zombies run nothing)."""
    return pids(uid=pwd.getpwnam(user).pw_uid, live=True)


def wait_no_live(host, user, timeout=5.0):
    return wait_until(lambda: not live_processes(host, user), timeout)


def pids_named(host, user, comm):
    return pids(uid=pwd.getpwnam(user).pw_uid, comm=comm)


def start_jail(host, tenant, script, session, env=None, user=PROXY):
    """A jail running in the background (as the proxy would start it)."""
    return start_as(user, host.jail(tenant, script, session=session), env=env or None, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def quote(argv):
    return shlex.join(argv)
