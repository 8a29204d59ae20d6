"""Attacks through inherited file descriptors: descriptors of root-only files
handed down through the setuid exec must not reach the jail, and closed
stdin/stdout/stderr must not turn a file the helper opens into its output."""
import fcntl
import os

import pytest

from attackutil import INSIDE, assert_inside, assert_refusal_line, guard, payloads, pid_audit, pid_lines, \
    snapshot, spawn  # noqa: F401 (fixtures)
from conftest import NON_TENANT, PROXY, exited, new_session, pam_closed, refused


def free_fds(n, start):
    """n descriptor numbers >= start that this process does not use (pytest does use some)."""
    out, fd = [], start
    while len(out) < n:
        try:
            fcntl.fcntl(fd, fcntl.F_GETFD)
        except OSError:
            out.append(fd)
        fd += 1
    return out


def probe(fds):
    """Every jailed process's descriptors, then attempts to use the inherited numbers."""
    nums = " ".join(map(str, fds))
    return INSIDE + f"""
echo "SELF $(ls /proc/self/fd | sort -n | tr '\\n' ' ')"
ls -l /proc/[0-9]*/fd/ 2>/dev/null | sed 's/^/FD /'
for n in {nums}; do
  cat /proc/self/fd/$n/ >/dev/null 2>&1 && echo "REOPENED $n"
  ls /proc/self/fd/$n/ >/dev/null 2>&1 && echo "LISTED $n"
done
python3 -c '
import os
for n in ({", ".join(map(str, fds))},):
    try:
        print("READ", n, os.read(n, 100))
    except OSError:
        pass
    try:
        os.write(n, b"pwned")
        print("WROTE", n)
    except OSError:
        pass
'
true
"""


@pytest.mark.parametrize("caller", [PROXY, "root"])
def test_root_only_descriptors_do_not_reach_the_jail(host, alice, guard, caller):
    secret_path = os.path.join(guard.root_canary, "secret")  # 0600 in a 0700 dir of root
    log_path = os.path.join(guard.root_canary, "log")
    with open(log_path, "w") as f:
        f.write("root log\n")
    os.chmod(log_path, 0o600)
    guard.before = snapshot(guard.paths)  # now with the log
    opened = [os.open(secret_path, os.O_RDONLY),
              os.open("/root", os.O_RDONLY | os.O_DIRECTORY),
              os.open(secret_path, os.O_RDONLY)]
    wr = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    # the secret low and high, /root (a directory), the log opened for writing
    secret, rootdir, *_ = free_fds(2, 5)
    secret_high, log_fd = free_fds(2, 200)
    targets = [secret, rootdir, secret_high, log_fd]
    try:
        for src, dst in zip(opened + [wr], targets):
            os.dup2(src, dst, inheritable=True)
        s = new_session()
        r = spawn(host.jail(alice, probe(targets), session=s),
                  user=None if caller == "root" else caller, pass_fds=targets)
    finally:
        for fd in opened + [wr] + targets:
            os.close(fd)
    assert r.returncode == 0, r
    assert_inside(host, alice, r.stdout)
    out = dict(l.split(" ", 1) for l in r.stdout.splitlines() if " " in l)
    # ls's own directory fd (3) is the only one above 2.
    assert set(out["SELF"].split()) <= {"0", "1", "2", "3"}, out["SELF"]
    fd_lines = [l for l in r.stdout.splitlines() if l.startswith("FD ")]
    assert any("-> /proc/" in l for l in fd_lines), fd_lines  # the listing worked
    for l in fd_lines:  # no jailed process (bwrap's init included) holds one
        assert "ctj-attack-canary" not in l and "-> /root" not in l, l
    for word in ["REOPENED", "READ", "LISTED", "WROTE"]:
        assert word not in r.stdout, r.stdout
    assert "root-only canary" not in r.stdout and "root log" not in r.stdout
    lines = host.audit_lines(f"session={s}", want=2, until=pam_closed)
    assert any(pam_closed(l) for l in lines), lines
    guard.check()


# Writes what fds 0-2 of a jailed process are into a file (by path, so that
# no redirection of its own changes them).
STD_FDS_TO = ("""python3 -c 'import os, sys; open(sys.argv[1], "w").write("".join(os.readlink("/proc/self/fd/%d" % n) """
              """+ "\\n" for n in (0, 1, 2)) + "OK\\n")'""")


def foreign_syslog_lines(host, r):
    """Lines syslog tagged with the helper's pid that are neither our audit
    lines nor PAM modules' own: raw text that reached the log socket."""
    lines = pid_lines(host, r.pid, r.started, timeout=1.0)
    return [l for l in lines if "action=" not in l and "pam_" not in l]


@pytest.mark.parametrize("caller", [PROXY, "root"])
@pytest.mark.parametrize("closed", [(0, 1, 2), (1, 2), (2,), (0,)], ids=["012", "12", "2", "0"])
def test_closed_standard_descriptors_do_not_capture_output(host, alice, guard, closed, caller):
    user = None if caller == "root" else caller
    home = host.home(alice)
    s = new_session()
    out = os.path.join(home, f"ctj-fds-{s}")
    # A launch that works, a refusal (error message) and a usage error.
    ok = spawn(host.jail(alice, STD_FDS_TO + " " + out, session=s), close_std=closed,
               user=user)
    bad = spawn(host.jail(NON_TENANT, "echo RAN"), close_std=closed, user=user)
    usage = spawn([host.bin, "run"], close_std=closed, user=user)
    assert ok.returncode == 0, ok
    listing = open(out).read().splitlines()
    os.unlink(out)
    assert len(listing) == 4 and listing[3] == "OK", listing
    for fd in closed:
        # What the jailed shell got: the helper's /dev/null, or (setuid:
        # glibc's AT_SECURE start-up check runs first) /dev/full for 0 and
        # /dev/null for 1 and 2. Never a file the helper opened.
        assert listing[fd] in ("/dev/null", "/dev/full"), listing
    assert bad.returncode == 1 and usage.returncode == 2, (bad, usage)
    if 2 not in closed:
        assert_refusal_line(bad, codes=(1,))
        assert_refusal_line(usage, codes=(2,))
    lines = host.audit_lines(f"session={s}", want=2, until=exited)
    assert any(exited(l) for l in lines), lines
    assert any("decision=deny" in l for l in pid_audit(host, bad, until=refused))
    assert any("decision=deny" in l for l in pid_audit(host, usage, until=refused))
    for r in (ok, bad, usage):
        assert not foreign_syslog_lines(host, r), foreign_syslog_lines(host, r)
    guard.check()  # the policy, the PAM service and the binary are intact
