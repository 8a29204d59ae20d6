"""A refused request starts nothing (SECURITY.md, row 32): an attach whose
stdio is not a terminal is refused by the front before any supervisor's
start: no PAM session, no slirp4netns, no tmux server, no supervisor, and
one audit line, the refusal (issue 40, finding 4: the supervisor, its
session jail and a tmux server with no session used to start first, and
ran until `stop`)."""
import os
import pwd

from conftest import PROXY, RUNTIME_DIR, log_lines, logged_at, new_session, spawn, wait_until
from ptyutil import attach, shell_ready


def _lines_about(tenant, since, want=1, timeout=3.0):
    """The helper's lines about tenant since `since` (after the test's own
    `stop` had ended), and PAM's lines of a session opened for it."""
    return log_lines(lambda l: logged_at(l) >= since and
                     (f" tenant={tenant} " in l or f"session opened for user {tenant}" in l), want, timeout)


def test_an_attach_without_a_terminal_starts_nothing(host, alice, terms):
    host.run_root([host.bin, "stop", "--user", alice])
    assert host.wait_gone(alice), host.processes_of(alice)
    uid = pwd.getpwnam(alice).pw_uid
    s = new_session()
    r = spawn([host.bin, "run", "--user", alice, "--session", s])  # stdin /dev/null, stdout a file
    assert r.returncode == 1, r
    assert r.stderr == "clihost-jail: an attach hands over a terminal\n", r
    # Nothing of the tenant runs, nothing is recorded: no supervisor, no
    # session jail, no tmux, no slirp4netns (all of them would be the
    # tenant's processes, or the supervisor's record).
    assert not wait_until(lambda: host.processes_of(alice) != [], 2), host.processes_of(alice)
    assert not os.path.exists(os.path.join(RUNTIME_DIR, f"{uid}.state"))
    assert not os.path.exists(host.tmux_sock(alice)) or not host.has_tmux_session(alice, s)
    # One audit line about the tenant, the refusal; no PAM session opened.
    lines = _lines_about(alice, r.started, want=2)
    assert len(lines) == 1, lines
    assert f"caller={PROXY} " in lines[0] and "decision=deny" in lines[0], lines
    assert 'reason="an attach hands over a terminal"' in lines[0], lines
    # Control: the same attach on a terminal starts the supervisor, its
    # PAM session and its session jail, and the probes above see them.
    t = attach(host, alice, s, terms)
    assert shell_ready(t), t.output()
    assert os.path.exists(os.path.join(RUNTIME_DIR, f"{uid}.state"))
    assert host.processes_of(alice) != []
    seen = _lines_about(alice, t.proc.started, want=3)
    assert any("PAM session open" in l for l in seen) and any("session opened for user" in l for l in seen), seen
