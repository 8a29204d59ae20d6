"""tests/bench/test_scale_tools.py: what `run.sh --scale 1000` needs of the
bench's own tools, checked without the helper or the host's accounts
(ctest unit.bench_tools; no root needed).

- accounts.py makes and removes a run's tenants in one rewrite of each
  account file, and gives the files back exactly as they were;
- scalebench reads the process tree once for all tenants (it read /proc
  once per process of each tenant: at 1,000 tenants, 16,000 processes,
  hours of it);
- scalebench's drain and jailbench's hang-up work on descriptors past
  FD_SETSIZE (1024), where select() fails: the bench holds two per tenant.
"""
import os
import resource
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import jailbench  # noqa: E402
import scalebench  # noqa: E402

ACCOUNTS = os.path.join(HERE, "accounts.py")
FILES = {"passwd": "root:x:0:0:root:/root:/bin/bash\nusr1:x:20000:20000::/home/usr1:/bin/sh\n",
         "shadow": "root:*:19000:0:99999:7:::\nusr1:!:19000:0:99999:7:::\n",
         "group": "root:x:0:\nusr1:x:20000:\nclihost-tenants:x:993:usr1\n",
         "gshadow": "root:*::\nusr1:!::\nclihost-tenants:!::usr1\n",
         "subuid": "usr1:100000:65536\n", "subgid": "usr1:100000:65536\n"}


@pytest.fixture
def root(tmp_path):
    (tmp_path / "etc").mkdir()
    for name, text in FILES.items():
        (tmp_path / "etc" / name).write_text(text)
    return tmp_path


def accounts(root, *args):
    return subprocess.run([sys.executable, ACCOUNTS, "--root", str(root), *args], capture_output=True, text=True)


def test_accounts_made_and_removed_in_one_go(root):
    r = accounts(root, "add", "cjbab12cd", "3", "clihost-tenants")
    assert r.returncode == 0, r.stderr
    # uid 20000 is taken (usr1): the next free ones, each its own group.
    assert r.stdout.split() == ["cjbab12cd01", "20001", "cjbab12cd02", "20002", "cjbab12cd03", "20003"]
    etc = root / "etc"
    assert "cjbab12cd02:x:20002:20002::/home/cjbab12cd02:/bin/sh" in (etc / "passwd").read_text().splitlines()
    assert any(line.startswith("cjbab12cd02:!:") for line in (etc / "shadow").read_text().splitlines())
    assert "clihost-tenants:x:993:usr1,cjbab12cd01,cjbab12cd02,cjbab12cd03" in (etc / "group").read_text()
    assert "cjbab12cd03:x:20003:" in (etc / "group").read_text().splitlines()
    r = accounts(root, "remove", "cjbab12cd")
    assert r.returncode == 0, r.stderr
    for name, text in FILES.items():
        assert (etc / name).read_text() == text, name


def test_accounts_refuses_a_name_that_exists(root):
    r = accounts(root, "add", "usrx", "1", "clihost-tenants")   # usrx01 is free: control
    assert r.returncode == 0, r.stderr
    r = accounts(root, "add", "usrx", "2", "clihost-tenants")
    assert r.returncode != 0 and "usrx01 exists already" in r.stderr
    r = accounts(root, "add", "usry", "1", "nogroup")
    assert r.returncode != 0 and "no group nogroup" in r.stderr


def test_accounts_remove_touches_only_the_prefix(root):
    # A name with the prefix but more after it than digits is not ours.
    shutil.copy(root / "etc" / "passwd", root / "passwd.orig")
    with open(root / "etc" / "passwd", "a") as f:
        f.write("cjbab12cdx:x:30000:30000::/home/x:/bin/sh\n")
    assert accounts(root, "remove", "cjbab12cd").returncode == 0
    assert "cjbab12cdx:" in (root / "etc" / "passwd").read_text()


@pytest.fixture
def tree():
    """A parent with two children, one of them with a child: the shape of a
    supervisor and its watchers."""
    procs = [subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & sh -c 'sleep 60; true' & wait"])]
    time.sleep(0.3)
    yield procs[0].pid
    for p in [procs[0].pid] + scalebench.descendants(procs[0].pid):
        try:
            os.kill(p, 9)
        except ProcessLookupError:
            pass
    procs[0].wait()


def test_roles_read_the_process_tree_once(tree, monkeypatch):
    calls = []
    real = jailbench.pids   # every read of the process tree lists /proc through it
    monkeypatch.setattr(jailbench, "pids", lambda: calls.append(1) or real())
    t = scalebench.Tenant.__new__(scalebench.Tenant)
    t.name, t.conn, t.supervisor = "x", None, tree
    roles = t.roles()
    assert len(calls) == 1, f"{len(calls)} scans of /proc for one tenant"
    assert sorted(roles) == ["other", "supervisor"] and len(roles["other"]) == 4, roles
    # With a tree taken once for all tenants: no scan at all.
    t.roles(scalebench.ProcTree())
    assert len(calls) == 2


def high_fd(fd):
    """fd moved to a number past FD_SETSIZE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1600:
        pytest.skip(f"RLIMIT_NOFILE's hard limit {hard} is below 1600: no descriptor past FD_SETSIZE here")
    if soft != resource.RLIM_INFINITY and soft < 1600:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1600, hard))
    os.dup2(fd, 1500)
    os.close(fd)
    return 1500


def test_drain_past_fd_setsize():
    master, slave = os.openpty()
    master = high_fd(master)
    try:
        os.write(slave, b"status line\n")
        t = scalebench.Tenant.__new__(scalebench.Tenant)
        t.conn = type("C", (), {"master": master})()
        scalebench.drain([t])   # select() raised ValueError here
        os.set_blocking(master, False)
        with pytest.raises(BlockingIOError):
            os.read(master, 100)   # all of it was read
    finally:
        os.close(master)
        os.close(slave)
