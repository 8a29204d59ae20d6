"""What the helper writes to the caller's terminal (stderr) and to syslog
carries no raw byte outside printable ASCII: 8-bit C1 controls (0x9b CSI,
0x85 NEL) and UTF-8 line separators (U+2028) typed into an argument come
out as \\xNN. And every audit line names the caller, also for a refusal
during argument parsing."""
import os
import pwd
import subprocess
import time
import uuid

from attackutil import pid_audit, spawn
from conftest import AUTH_LOG, PROXY

HOSTILE = b"ctj\x9b2J\x85\xe2\x80\xa8\x1b[31m\"\\x"
ESCAPED = b"ctj\\x9b2J\\x85\\xe2\\x80\\xa8\\x1b[31m\\x22\\x5cx"


def raw_log_lines(token, want=1, timeout=5.0):
    """auth.log lines containing token, as bytes (no decoding that could hide a raw byte)."""
    deadline = time.time() + timeout
    while True:
        with open(AUTH_LOG, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - (8 << 20)))
            lines = [l for l in f.read().splitlines() if token in l]
        if len(lines) >= want or time.time() >= deadline:
            return lines
        time.sleep(0.1)


def printable(line):
    return all(0x20 <= c <= 0x7e for c in line)


def test_syslog_keeps_raw_bytes_so_the_probe_can_see_them():
    """Positive control: rsyslog writes a raw 0x9b/0x85/U+2028 to auth.log as
    it gets it, so the assertions below would see an unescaped byte."""
    token = b"ctj-raw-control-" + uuid.uuid4().hex.encode()
    subprocess.run([b"logger", b"-p", b"authpriv.info", token + b" " + HOSTILE], check=True)
    lines = raw_log_lines(token)
    assert len(lines) == 1, lines
    assert b"\x9b" in lines[0] and b"\x85" in lines[0] and b"\xe2\x80\xa8" in lines[0], lines[0]
    assert not printable(lines[0])


def test_hostile_bytes_in_an_argument_are_escaped_on_stderr_and_in_the_audit_line(host):
    token = "ctj" + uuid.uuid4().hex[:10]
    r = spawn([os.fsencode(host.bin), token.encode() + HOSTILE], binary=True)
    assert r.returncode == 2, r
    assert r.stderr == b"clihost-jail: unknown command '" + token.encode() + ESCAPED + b"' (try --help)\n", r.stderr
    lines = raw_log_lines(token.encode())
    assert len(lines) == 1, lines
    uid = pwd.getpwnam(PROXY).pw_uid
    assert lines[0].endswith(
        f"action=- caller={PROXY} caller_uid={uid} via=setuid tenant=- session=- decision=deny ".encode() +
        b"reason=\"unknown command '" + token.encode() + ESCAPED + b"' (try --help)\""), lines[0]
    assert printable(lines[0]), lines[0]


def test_a_usage_refusal_names_the_caller(host, alice):
    """Refused while parsing arguments (before any tenant or policy is known):
    the audit line still says who called, and how."""
    uid = pwd.getpwnam(PROXY).pw_uid
    for argv in ([host.bin, "run", "--user", alice], [host.bin, "run", "--use", alice, "--session", "x"], [host.bin]):
        r = spawn(argv)
        assert r.returncode == 2, (argv, r)
        assert r.stderr.startswith("clihost-jail: ") and r.stderr.endswith(" (try --help)\n"), (argv, r)
        lines = pid_audit(host, r)
        assert len(lines) == 1, (argv, lines)
        assert f"caller={PROXY} caller_uid={uid} via=setuid " in lines[0], lines[0]
        assert "decision=deny" in lines[0] and r.stderr[len("clihost-jail: "):-1] in lines[0], lines[0]
    # Root too (real uid 0, no sudo).
    r = spawn([host.bin, "frobnicate"], user=None)
    assert r.returncode == 2, r
    lines = pid_audit(host, r)
    assert len(lines) == 1 and "caller=root caller_uid=0 via=root " in lines[0], lines
