#!/usr/bin/python3
"""tests/bench/accounts.py: the scale stage's tenant accounts, made and
removed in one go each (run.sh --scale). useradd and userdel rewrite and
sync every account file once per account: about a second each on the bench
machine with a few hundred accounts, half an hour for 1,000 tenants there
and back. This writes each file once, under lckpwdf(3), the lock shadow's
tools (useradd, userdel, newusers, vipw) take first.

  add PREFIX N GROUP   accounts PREFIX01..PREFIXN (zero-padded to two digits
                       at least, as run.sh names them): free uids from 20000
                       up, each its own group of the same number, password
                       locked ("!"), shell /bin/sh, home /home/NAME (not made
                       here), member of GROUP. Refuses if a name exists.
                       Prints "NAME UID" lines.
  --root DIR first: the files under DIR instead (the unit test's copy);
  no lock is taken then.

  remove PREFIX        every account and group named PREFIX and digits (the
                       run's own unique prefix), and those names in member
                       lists: passwd, shadow, group, gshadow, subuid, subgid.
"""
import ctypes
import os
import re
import sys
import time

FILES = ["/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/subuid", "/etc/subgid"]
FIRST_UID, LAST_UID = 20000, 59999


class Locked:
    """lckpwdf(): waits up to 15 s for the account files' lock (none for a
    copy under --root)."""

    def __init__(self, root):
        self.libc = None if root != "/" else ctypes.CDLL(None, use_errno=True)

    def __enter__(self):
        if self.libc is None:
            return self
        if self.libc.lckpwdf() != 0:
            raise SystemExit(f"accounts.py: lckpwdf failed: {os.strerror(ctypes.get_errno())}")
        return self

    def __exit__(self, *_):
        if self.libc is not None:
            self.libc.ulckpwdf()


def rewrite(path, edit):
    """The file's lines through edit(lines) -> lines, written beside it with
    its mode and owner, synced, then renamed over it."""
    if not os.path.exists(path):
        return
    st = os.stat(path)
    with open(path) as f:
        lines = f.read().splitlines()
    new = edit(lines)
    if new == lines:
        return
    tmp = f"{path}.cjb{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o7777)
    try:
        os.fchown(fd, st.st_uid, st.st_gid)
        os.write(fd, ("\n".join(new) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def entries(path):
    """(name, id) of each line of passwd or group."""
    with open(path) as f:
        return [(w[0], int(w[2])) for w in (line.split(":") for line in f.read().splitlines()) if len(w) > 2]


def add(root, prefix, n, group):
    names = [f"{prefix}{i:02d}" for i in range(1, n + 1)]

    def at(path):
        return os.path.join(root, path.lstrip("/"))

    with Locked(root):
        users, groups = entries(at("/etc/passwd")), entries(at("/etc/group"))
        used_u, used_g = {u for _, u in users}, {g for _, g in groups}
        taken = {x for x, _ in users} | {x for x, _ in groups}
        clash = [x for x in names if x in taken]
        if clash:
            raise SystemExit(f"accounts.py: {clash[0]} exists already")
        if group not in {x for x, _ in groups}:
            raise SystemExit(f"accounts.py: no group {group}")
        ids, uid = [], FIRST_UID
        for _ in names:
            while uid in used_u or uid in used_g:
                uid += 1
            if uid > LAST_UID:
                raise SystemExit("accounts.py: no free uid left in 20000..59999")
            ids.append(uid)
            uid += 1
        day = int(time.time() // 86400)
        rewrite(at("/etc/passwd"), lambda ls: ls + [f"{x}:x:{u}:{u}::/home/{x}:/bin/sh" for x, u in zip(names, ids)])
        rewrite(at("/etc/shadow"), lambda ls: ls + [f"{x}:!:{day}:0:99999:7:::" for x in names])

        def with_members(ls, gshadow):
            out = []
            for line in ls:
                f = line.split(":")
                if f[0] == group:
                    members = [m for m in f[-1].split(",") if m]
                    f[-1] = ",".join(members + names)
                out.append(":".join(f))
            return out + [f"{x}:!::" if gshadow else f"{x}:x:{u}:" for x, u in zip(names, ids)]

        rewrite(at("/etc/group"), lambda ls: with_members(ls, False))
        rewrite(at("/etc/gshadow"), lambda ls: with_members(ls, True))
    for x, u in zip(names, ids):
        print(x, u)


def remove(root, prefix):
    ours = re.compile(re.escape(prefix) + r"[0-9]+\Z")

    def drop(ls):
        return [line for line in ls if not ours.match(line.split(":", 1)[0])]

    def drop_members(ls):
        out = []
        for line in drop(ls):
            f = line.split(":")
            f[-1] = ",".join(m for m in f[-1].split(",") if m and not ours.match(m))
            out.append(":".join(f))
        return out

    with Locked(root):
        for path in FILES:
            rewrite(os.path.join(root, path.lstrip("/")), drop_members if path in ("/etc/group", "/etc/gshadow") else drop)


def main(argv):
    root = "/"
    if argv[:1] == ["--root"] and len(argv) > 1:
        root, argv = argv[1], argv[2:]
    if root == "/" and os.getuid() != 0:
        raise SystemExit("accounts.py: must run as root")
    # The prefix names only our own accounts: letters and digits, a letter first.
    if len(argv) >= 2 and not re.fullmatch(r"[a-z][a-z0-9]{3,20}", argv[1]):
        raise SystemExit(f"accounts.py: bad prefix {argv[1]!r}")
    if len(argv) == 4 and argv[0] == "add":
        add(root, argv[1], int(argv[2]), argv[3])
    elif len(argv) == 2 and argv[0] == "remove":
        remove(root, argv[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
