"""What the owner-model suites (test_owner*.py, test_lifecycle.py) read of
a tenant's supervisor: its record, its place in the process tree, and what
`list --json` says of the tenant."""
import json
import os
import pwd

from conftest import PROXY, RUNTIME_DIR


def supervisor_pid(tenant):
    """The pid in the tenant's supervisor record, or None without one."""
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.state")
    try:
        return int(open(path).read().split()[3])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid):
    """pid's argv, or [] once it has gone (a process may end between a
    listing of pids and this read)."""
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return []


def ppid(pid):
    # Past the last ")": the command name may hold any byte.
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])


def ancestors(pid):
    """pid's parent, its parent, ... up to (and with) init."""
    out = []
    while pid > 1:
        try:
            pid = ppid(pid)
        except OSError:
            break
        out.append(pid)
    return out


def listed_json(host, tenant):
    """The one `list --json --user TENANT` object, asked as the proxy."""
    r = host.run_as(PROXY, [host.bin, "list", "--json", "--user", tenant])
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout
    return json.loads(lines[0])
