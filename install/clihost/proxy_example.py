#!/usr/bin/env python3
"""How a multi-tenant proxy (clihost) starts and stops a tenant's terminal
through clihost-jail.

The proxy runs as user `clihost` (helper installed setuid 4750 root:clihost,
or via sudo) or as root. It never needs root for a tenant itself: the helper
checks the caller and tenant, opens the PAM session and starts the jail.

Every command is an argv list passed to exec, never a shell string: a tenant
or session name can then never become shell syntax. Names are also checked
here with the helper's own rules, so that a bad request fails early with a
clear message instead of a refused ttyd start.

    python3 proxy_example.py --dry-run terminal --user alice --session main --port 7681
    python3 proxy_example.py --dry-run kill --user alice --session main
    python3 proxy_example.py --dry-run stop --user alice
    python3 proxy_example.py --dry-run list

The tenant's work lives in its session jail, not in ttyd: the first terminal
starts it, closing a browser tab ends only that connection's attach jail,
and ttyd keeps serving the same session to the next tab. The proxy's three
lifecycle calls:
- DELETE of a terminal: stop its ttyd (SIGTERM, reap it), then `kill` the
  tmux session; the last session's end ends the tenant's session jail.
- proxy restart: running ttyds and their connections may die; the session
  jails live on. `list` says which tenants and sessions exist: start ttyd
  again for each session the proxy still knows.
- tenant removed or disabled: `stop` ends its session jail and everything in
  it (expire or remove the account first, so that no new attach starts one).
"""
import argparse
import re
import shlex
import subprocess
import sys

HELPER = "/usr/libexec/clihost-jail/clihost-jail"
TTYD = "/usr/bin/ttyd"
SUDO = "/usr/bin/sudo"

# The helper's rules (docs/ARCHITECTURE.md): session [A-Za-z0-9_.-]{1,64}, not starting
# with '-' or '.'; account names as the helper accepts them.
SESSION_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")
USER_RE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,31}\Z")

# The environment handed to ttyd and the helper: nothing of the proxy's own
# (tokens, cookies, database URLs must not reach ttyd). The helper keeps only
# TERM LANG LC_ALL COLORTERM (jail.conf extra_env) anyway.
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

# Exit codes of the helper itself; any other code is the jailed command's.
HELPER_EXIT = {1: "refused by policy", 2: "usage error", 3: "host cannot run a safe jail", 4: "internal error"}


def _check_names(user, session):
    if not USER_RE.match(user):
        raise ValueError(f"invalid tenant name: {user!r}")
    if not SESSION_RE.match(session):
        raise ValueError(f"invalid session name: {session!r}")


def _helper_prefix(helper, via_sudo):
    # -n: never prompt; a daemon has no terminal, a prompt would hang.
    return [SUDO, "-n", helper] if via_sudo else [helper]


def terminal_argv(helper, user, session, ttyd=TTYD, port=7681, interface="127.0.0.1", via_sudo=False):
    """argv that serves one tenant terminal on PORT: ttyd runs the helper."""
    _check_names(user, session)
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"invalid port: {port!r}")
    return [
        ttyd,
        "--port", str(int(port)),
        # Only the proxy should reach ttyd: it authenticates the tenant first.
        "--interface", interface,
        # No --once: each browser connection gets an attach jail of its own,
        # and closing a tab (ttyd's SIGHUP to its command) ends only that one;
        # the session itself lives in the tenant's session jail.
        # ttyd >= 1.7 is read-only unless told otherwise.
        "--writable",
        *_helper_prefix(helper, via_sudo),
        "run", "--user", user, "--session", session,
    ]


def kill_argv(helper, user, session, via_sudo=False):
    """argv that ends the tenant's tmux session NAME (tmux kill-session, as the tenant)."""
    _check_names(user, session)
    return [*_helper_prefix(helper, via_sudo), "kill", "--user", user, "--session", session]


def stop_argv(helper, user, via_sudo=False):
    """argv that ends the tenant's session jail and everything in it."""
    _check_names(user, "x")
    return [*_helper_prefix(helper, via_sudo), "stop", "--user", user]


def list_argv(helper, user=None, via_sudo=False):
    """argv that lists the live session jails (of one tenant)."""
    if user is not None:
        _check_names(user, "x")
    return [*_helper_prefix(helper, via_sudo), "list", *(["--user", user] if user is not None else [])]


def parse_list(text):
    """`list` output -> {tenant: [session, ...]}: one line per session jail,
    tenant=NAME uid=UID supervisor=PID started=ISO8601 sessions=a,b (or -)."""
    out = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        sessions = fields.get("sessions", "-")
        out[fields["tenant"]] = [] if sessions == "-" else sessions.split(",")
    return out


def launch_terminal(user, session, port, helper=HELPER, ttyd=TTYD, via_sudo=False):
    """Start ttyd for the tenant; returns the Popen (the proxy reaps it)."""
    argv = terminal_argv(helper, user, session, ttyd=ttyd, port=port, via_sudo=via_sudo)
    # start_new_session: the proxy's own signals (Ctrl-C in a dev shell) do
    # not hit running terminals; the proxy ends them explicitly.
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=CHILD_ENV, close_fds=True, start_new_session=True)


def kill_session(user, session, helper=HELPER, via_sudo=False, timeout=30):
    """End the tenant's session; returns (ok, message)."""
    argv = kill_argv(helper, user, session, via_sudo=via_sudo)
    r = _run_helper(argv, timeout)
    if r.returncode == 0:
        return True, "session ended"
    # A refusal always prints one line starting with "clihost-jail: "; without
    # it, the code is tmux's (1: no such session).
    refusal = [line for line in r.stderr.splitlines() if line.startswith("clihost-jail: ")]
    if refusal:
        return False, f"{HELPER_EXIT.get(r.returncode, 'error')}: {refusal[0]}"
    return False, f"tmux exited {r.returncode} (no such session?)"


def delete_terminal(ttyd_proc, user, session, helper=HELPER, via_sudo=False):
    """What the proxy does on DELETE: stop ttyd first (no new connection can
    start an attach), then end the tmux session (its last one ends the
    tenant's session jail)."""
    if ttyd_proc.poll() is None:
        ttyd_proc.terminate()
        try:
            ttyd_proc.wait(10)
        except subprocess.TimeoutExpired:
            ttyd_proc.kill()
            ttyd_proc.wait()
    return kill_session(user, session, helper=helper, via_sudo=via_sudo)


def _run_helper(argv, timeout=30):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, env=CHILD_ENV, capture_output=True, text=True,
                          timeout=timeout, check=False)


def stop_tenant(user, helper=HELPER, via_sudo=False, timeout=60):
    """End the tenant's session jail; returns (ok, message)."""
    r = _run_helper(stop_argv(helper, user, via_sudo=via_sudo), timeout)
    if r.returncode == 0:
        return True, r.stdout.strip()
    return False, f"{HELPER_EXIT.get(r.returncode, 'error')}: {r.stderr.strip()}"


def list_sessions(helper=HELPER, user=None, via_sudo=False, timeout=60):
    """{tenant: [session, ...]} of the live session jails."""
    r = _run_helper(list_argv(helper, user, via_sudo=via_sudo), timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{HELPER_EXIT.get(r.returncode, 'error')}: {r.stderr.strip()}")
    return parse_list(r.stdout)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--helper", default=HELPER, help="path of clihost-jail (default %(default)s)")
    p.add_argument("--ttyd", default=TTYD, help="path of ttyd (default %(default)s)")
    p.add_argument("--sudo", action="store_true", help="call the helper through sudo -n")
    p.add_argument("--dry-run", action="store_true", help="print the argv instead of running it")
    sub = p.add_subparsers(dest="action", required=True)
    t = sub.add_parser("terminal", help="serve a terminal with ttyd")
    k = sub.add_parser("kill", help="end a tmux session")
    st = sub.add_parser("stop", help="end a tenant's session jail")
    ls = sub.add_parser("list", help="list the live session jails")
    for s in (t, k):
        s.add_argument("--user", required=True)
        s.add_argument("--session", required=True)
    st.add_argument("--user", required=True)
    ls.add_argument("--user")
    t.add_argument("--port", type=int, required=True)
    a = p.parse_args(argv)
    try:
        if a.action == "terminal":
            cmd = terminal_argv(a.helper, a.user, a.session, ttyd=a.ttyd, port=a.port, via_sudo=a.sudo)
        elif a.action == "kill":
            cmd = kill_argv(a.helper, a.user, a.session, via_sudo=a.sudo)
        elif a.action == "stop":
            cmd = stop_argv(a.helper, a.user, via_sudo=a.sudo)
        else:
            cmd = list_argv(a.helper, a.user, via_sudo=a.sudo)
    except ValueError as e:
        print(f"proxy_example: {e}", file=sys.stderr)
        return 2
    if a.dry_run:
        print(shlex.join(cmd))
        return 0
    if a.action == "terminal":
        return launch_terminal(a.user, a.session, a.port, helper=a.helper, ttyd=a.ttyd, via_sudo=a.sudo).wait()
    if a.action == "list":
        r = _run_helper(cmd)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        return r.returncode
    if a.action == "stop":
        ok, msg = stop_tenant(a.user, helper=a.helper, via_sudo=a.sudo)
    else:
        ok, msg = kill_session(a.user, a.session, helper=a.helper, via_sudo=a.sudo)
    print(msg, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
