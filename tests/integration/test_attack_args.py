"""Attacks through the command line of the setuid helper, by its allowed
caller (ctj-proxy): root and non-tenants as targets, uids outside the range,
overlong, malformed and binary values, session names that are paths or shell
code, and argument floods.

Each must be refused with the exit code of clihost-jail(8) (1 policy, 2 usage),
one printable stderr line, an audit line (session=- when the refusal comes
before the session is known: found through the pid syslog puts in the tag),
no command run anywhere, and no file outside the tenant's home changed."""
import errno
import os
import pwd
import random
import resource
import sys
import uuid

import pytest

from attackutil import assert_denied_in_audit, assert_refusal_line, guard, payloads, spawn  # noqa: F401
from conftest import NON_TENANT, TENANT_GROUP, new_session, sh


def attempt(host, argv, codes=(1, 2), user="ctj-proxy"):
    r = spawn(argv, user=user)
    assert_refusal_line(r, codes)
    assert "RAN" not in r.stdout
    assert_denied_in_audit(host, r)
    return r


def run_argv(host, user, session, *rest):
    return [host.bin, "run", "--user", user, "--session", session, *rest]


def cmd(marker):
    return ["--", "/bin/sh", "-c", f"touch {marker}; echo RAN"]


def test_user_root_and_uid0_aliases_are_refused(host, guard):
    marker = f"/tmp/ctj-attack-ran-{uuid.uuid4().hex}"
    for argv in [run_argv(host, "root", new_session(), *cmd(marker)),
                 [host.bin, "run", "--user=root", "--session", new_session(), *cmd(marker)],
                 [host.bin, "run", "--session", new_session(), "--user", "root", *cmd(marker)],
                 [host.bin, "kill", "--user", "root", "--session", new_session()]]:
        r = attempt(host, argv, codes=(1,))
        assert "uid 0" in r.stderr, r
    # A second uid-0 account, in the tenant group. (Never pkill/userdel -r it:
    # its uid is root's.)
    sh("useradd", "-o", "-u", "0", "-M", "-N", "-g", TENANT_GROUP, "-d", "/nonexistent", "-s",
       "/usr/sbin/nologin", "ctj-toor")
    try:
        r = attempt(host, run_argv(host, "ctj-toor", new_session(), *cmd(marker)), codes=(1,))
        assert "uid 0" in r.stderr, r
    finally:
        sh("userdel", "-f", "ctj-toor", check=False)
    assert not os.path.exists(marker)
    guard.check()


def test_non_tenant_is_refused(host, guard):
    marker = f"/tmp/ctj-attack-ran-{uuid.uuid4().hex}"
    s = new_session()
    r = attempt(host, run_argv(host, NON_TENANT, s, *cmd(marker)), codes=(1,))
    assert "not a member" in r.stderr
    assert_denied_in_audit(host, r, session=s)
    for who in ["ctj-no-such-user", "nobody", "daemon"]:
        attempt(host, run_argv(host, who, new_session(), *cmd(marker)), codes=(1,))
    assert not os.path.exists(marker)
    guard.check()


def test_uid_outside_the_range_and_numeric_names_are_refused(host, alice, guard):
    uid = pwd.getpwnam(alice).pw_uid
    marker = f"/tmp/ctj-attack-ran-{uuid.uuid4().hex}"
    for extra in [f"min_uid = 1000\nmax_uid = {uid - 1}", f"min_uid = {uid + 1}\nmax_uid = 60000"]:
        body = extra
        conf = host.config_variant({})
        text = open(conf).read().replace("min_uid = 1000\nmax_uid = 60000\n", body + "\n")
        with open(conf, "w") as f:
            f.write(text)
        s = new_session()
        r = host.run_root(run_argv(host, alice, s, *cmd(marker)), config=conf)
        assert r.returncode == 1 and "outside" in r.stderr, (r.returncode, r.stderr)
        assert any("decision=deny" in l for l in host.audit_lines(f"session={s}"))
    # A uid is not a name: "--user 0" or the tenant's uid never select anyone.
    for name in ["0", str(uid), "#0", f"#{uid}", "+0", "-0", "0x0", "00", " 0"]:
        attempt(host, run_argv(host, name, new_session(), *cmd(marker)), codes=(1, 2))
    assert not os.path.exists(marker)
    guard.check()


def test_overlong_and_malformed_values_are_refused(host, alice, guard):
    marker = f"/tmp/ctj-attack-ran-{uuid.uuid4().hex}"
    c = cmd(marker)
    cases = [
        run_argv(host, "a" * 33, new_session(), *c),
        run_argv(host, "a" * 60000, new_session(), *c),
        run_argv(host, alice, "s" * 65, *c),
        run_argv(host, alice, "s" * 60000, *c),
        run_argv(host, "", new_session(), *c),
        run_argv(host, alice, "", *c),
        run_argv(host, f"{alice}\nroot", new_session(), *c),
        run_argv(host, alice, "s\naction=run decision=allow", *c),
        run_argv(host, alice, "s\x1b]0;owned\x07", *c),
        run_argv(host, f"{alice}\x1b[2J", new_session(), *c),
        run_argv(host, "-root", new_session(), *c),
        run_argv(host, f"{alice}/../root", new_session(), *c),
        run_argv(host, f"../{alice}", new_session(), *c),
        [host.bin, "run", "--user", alice, "--user", "root", "--session", new_session(), *c],
        [host.bin, "run", "--user", alice, "--session", new_session(), "--session", "x", *c],
        [host.bin, "run", "--user", alice, "--session"],
        [host.bin, "run", "--user"],
        [host.bin, "run", "--user", alice, "--session", new_session(), "--"],
        [host.bin, "run", "--user", alice, "--session", new_session(), "/bin/sh", "-c", "echo RAN"],
        [host.bin, "run", "--username", alice, "--session", new_session(), *c],
        [host.bin, "run", "--user", alice, "--session", new_session(), "--tenant", "root", *c],
        [host.bin, "run", "-u", alice, "-s", new_session(), *c],
        [host.bin, "kill", "--user", alice, "--session", new_session(), *c],
        [host.bin, "check", "--user", alice, "--session", new_session()],
        [host.bin, "--version", "run"],
        [host.bin, "RUN", "--user", alice, "--session", new_session(), *c],
        [host.bin, "run\n", "--user", alice, "--session", new_session(), *c],
        [host.bin, "x" * 100000],
    ]
    for argv in cases:
        r = attempt(host, argv)
        assert "\x1b" not in r.stderr
    assert not os.path.exists(marker)
    guard.check()


def test_binary_junk_arguments_are_refused(host, alice, guard):
    rng = random.Random(0xC71)

    # Never a valid name: one byte outside [A-Za-z0-9_.-] at a random place.
    bad = [c for c in range(1, 256) if not (chr(c).isascii() and (chr(c).isalnum() or chr(c) in "_.-"))]

    def junk(n):
        j = bytearray(rng.randrange(1, 256) for _ in range(n))
        j[rng.randrange(n)] = rng.choice(bad)
        return bytes(j)

    b = os.fsencode
    for i in range(40):
        j = junk(rng.choice([1, 7, 64, 300, 5000]))
        shape = i % 5
        argv = [[b(host.bin), j],
                [b(host.bin), b"run", j],
                [b(host.bin), b"run", b"--user", j, b"--session", b"x"],
                [b(host.bin), b"run", b"--user", b(alice), b"--session", j],
                [b(host.bin), b"run", b"--user", b(alice), b"--session", b"x", j]][shape]
        r = spawn(argv)
        assert r.returncode in (1, 2), (argv, r)
        assert_refusal_line(r)
        assert_denied_in_audit(host, r)
    guard.check()


@pytest.mark.parametrize("name", [
    "a/b", "../../../tmp/ctj", "..", ".", ".hidden", "a b", " a", "a\tb", "-a", "--user", "-", "a:b", "*", "~",
    "$(touch /tmp/ctj-attack-meta)", "`touch /tmp/ctj-attack-meta`", "a;touch /tmp/ctj-attack-meta",
    "a|touch /tmp/ctj-attack-meta", "a&&touch /tmp/ctj-attack-meta", "a\ntouch /tmp/ctj-attack-meta",
    "a'b", 'a"b', "a\\b", "=a", "#a", "%0", "é", "a\x7f",
])
def test_session_names_that_are_paths_or_shell_code_are_refused(host, alice, guard, name):
    meta = "/tmp/ctj-attack-meta"
    if os.path.exists(meta):
        os.unlink(meta)
    tmux_dir = os.path.join(host.home(alice), ".cache", "tmux")
    before = sorted(os.listdir(tmux_dir)) if os.path.isdir(tmux_dir) else None
    for argv in [[host.bin, "run", "--user", alice, "--session", name],
                 [host.bin, "kill", "--user", alice, "--session", name],
                 [host.bin, "run", "--user", name, "--session", "x"]]:
        attempt(host, argv, codes=(1, 2))
    assert not os.path.exists(meta)
    after = sorted(os.listdir(tmux_dir)) if os.path.isdir(tmux_dir) else None
    assert before == after
    guard.check()


def test_argument_floods_are_refused(host, alice, guard):
    base = [host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/echo", "RAN"]
    # The kernel refuses a single string over MAX_ARG_STRLEN (128 KiB), and
    # so 10 MiB in one argument, before the helper runs at all. (No 10 MiB
    # of arguments reaches any program on Linux; the largest flood that does
    # is the next test's.)
    for size in [10 << 20, 200 << 10]:
        with pytest.raises(OSError) as e:
            spawn(base + ["x" * size])
        assert e.value.errno == errno.E2BIG
    # Under the kernel's limits, the helper's own bounds (256 words, 64 KiB)
    # refuse about 1 MiB spread over many arguments, and smaller floods.
    cases = [(base + ["y" * 1023] * 1024, "too many arguments"),
             (base + ["y" * 5000] * 200, "arguments too long"),
             (base + ["z" * 100000], "arguments too long"),
             (base + ["w"] * 300, "too many arguments")]
    for argv, why in cases:
        r = attempt(host, argv, codes=(2,))
        assert why in r.stderr, r
    guard.check()


# Linux caps argv+envp of one execve at min(RLIMIT_STACK / 4, 6 MiB) (3/4 of
# the 8 MiB _STK_LIM, fs/exec.c), and each string at MAX_ARG_STRLEN
# (128 KiB): a full 10 MiB of arguments cannot reach any program on Linux,
# whatever the caller's stack limit. The most that can is just under 6 MiB.
FLOOD_ARG = 120 << 10
FLOOD_STACK = [(resource.RLIMIT_STACK, (32 << 20, resource.RLIM_INFINITY))]


def test_argument_flood_at_the_kernels_cap_reaches_the_helper_and_is_refused(host, alice, guard):
    """As many ~120 KiB arguments as the kernel accepts with RLIMIT_STACK
    raised to 32 MiB (so its cap is 6 MiB, not the 2 MiB of the default
    8 MiB stack): about 6 MiB really arrives at the helper, which must refuse
    it itself (usage error, one stderr line, audited) and run nothing."""
    marker = f"/tmp/ctj-attack-ran-{uuid.uuid4().hex}"
    base = [host.bin, "run", "--user", alice, "--session", new_session(), "--", "/bin/sh", "-c",
            f"touch {marker}; echo RAN"]
    # 10 MiB spread over strings the kernel would each accept: still E2BIG.
    with pytest.raises(OSError) as e:
        spawn(base + ["y" * FLOOD_ARG] * ((10 << 20) // FLOOD_ARG), limits=FLOOD_STACK)
    assert e.value.errno == errno.E2BIG
    # The largest flood the kernel lets through (a refused execve runs nothing).
    r = None
    for n in range((7 << 20) // FLOOD_ARG, 0, -1):
        try:
            r = spawn(base + ["y" * FLOOD_ARG] * n, limits=FLOOD_STACK)
            break
        except OSError as err:
            assert err.errno == errno.E2BIG, err
    print(f"flood: {n} x {FLOOD_ARG} bytes reached the helper", file=sys.stderr)
    assert r is not None and n * FLOOD_ARG >= (11 << 20) // 2, n  # >= 5.5 MiB reached the helper
    assert len(base) + n < 256  # so the byte bound refuses, not the word bound
    assert_refusal_line(r, codes=(2,))
    assert "arguments too long" in r.stderr, r
    assert "RAN" not in r.stdout
    assert not os.path.exists(marker)
    assert_denied_in_audit(host, r)
    guard.check()
