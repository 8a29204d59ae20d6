"""Every tmpfs of a jail is sized ([jail] tmpfs_size): a tenant cannot take the
host's memory by filling /tmp, /var/tmp, /run or /dev/shm (unsized, each
tmpfs may grow to half of the host's RAM). The /dev tmpfs that bwrap builds
cannot be sized (`--size` applies to `--tmpfs` only), so it is read-only."""
import re
import shlex

import pytest

from attackutil import INSIDE, assert_inside
from conftest import new_session

MIB = 1 << 20
SIZED = ["/tmp", "/var/tmp", "/run", "/dev/shm"]


def write_probe(path, mib):
    """Write `mib` MiB of zeros to path/f; report dd's verdict and the size
    of the mount (df, KiB) on one line each."""
    return (f"dd if=/dev/zero of={path}/ctj-fill bs=64K count={mib * 16} 2>&1 | tr '\\n' ' ' | sed 's|^|DD {path} |'; echo\n"
            f"echo \"SIZE {path} $(df -k --output=size {path} | tail -1 | tr -d ' ')\"\n"
            f"echo \"FILE {path} $(stat -c %s {path}/ctj-fill)\"\n")


def run_sized(host, tenant, size, script):
    conf = host.config_variant({"jail": f"tmpfs_size = {size}"})
    s = new_session()
    r = host.run_root(host.jail(tenant, INSIDE + "\n" + script, session=s), config=conf)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert_inside(host, tenant, r.stdout)
    return r


def fields(stdout, key):
    return {l.split()[1]: l.split(" ", 2)[2] for l in stdout.splitlines() if l.startswith(key + " ")}


def test_writing_more_than_tmpfs_size_gets_enospc(host, alice):
    """tmpfs_size = 1M: writing 2 MiB fails with ENOSPC in every tmpfs and no
    file grows past 1 MiB; the mount is 1 MiB (1024 KiB) big."""
    r = run_sized(host, alice, "1M", "".join(write_probe(p, 2) for p in SIZED))
    dd, size, file = fields(r.stdout, "DD"), fields(r.stdout, "SIZE"), fields(r.stdout, "FILE")
    for p in SIZED:
        assert "No space left on device" in dd[p], (p, r.stdout)
        assert size[p] == "1024", (p, r.stdout)
        assert int(file[p]) <= MIB, (p, r.stdout)


def test_the_same_write_succeeds_with_a_larger_size(host, alice):
    """Positive control: with tmpfs_size = 4M the same 2 MiB write succeeds,
    so the ENOSPC above is the size, not something else about the jail."""
    r = run_sized(host, alice, "4M", "".join(write_probe(p, 2) for p in SIZED))
    dd, size, file = fields(r.stdout, "DD"), fields(r.stdout, "SIZE"), fields(r.stdout, "FILE")
    for p in SIZED:
        assert "No space left" not in dd[p] and "copied" in dd[p], (p, r.stdout)
        assert size[p] == "4096", (p, r.stdout)
        assert int(file[p]) == 2 * MIB, (p, r.stdout)


def test_the_default_size_is_256m(host, alice):
    r = host.run_root(host.jail(alice, "df -k --output=size,target /tmp /var/tmp /run /dev/shm | tail -n +2"))
    assert r.returncode == 0, r
    sizes = dict(reversed(l.split()) for l in r.stdout.splitlines())
    assert sizes == {p: str(256 * 1024) for p in SIZED}, r.stdout


DEV_PROBE = ("touch /dev/ctj-fill 2>&1 | sed 's/^/TOUCH /'\n"
             "dd if=/dev/zero of=/dev/ctj-fill bs=64K count=32 2>&1 | tail -1 | sed 's/^/DEVDD /'\n"
             "echo hello > /dev/null && echo NULL-OK\n")


def test_dev_cannot_be_written_past_the_size(host, alice):
    """/dev is read-only inside (its tmpfs cannot be sized); /dev/null still
    works. Positive control: the same tenant in a bwrap jail with only `--dev`
    (what the plan had before) writes 2 MiB into /dev, more than tmpfs_size."""
    r = run_sized(host, alice, "1M", DEV_PROBE)
    assert "TOUCH touch: cannot touch '/dev/ctj-fill': Read-only file system" in r.stdout, r.stdout
    assert "DEVDD dd: failed to open '/dev/ctj-fill': Read-only file system" in r.stdout, r.stdout
    assert "NULL-OK" in r.stdout, r.stdout
    control = host.run_as(alice, ["/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                                  "--dev", "/dev", "/bin/sh", "-c", DEV_PROBE])
    assert control.returncode == 0, control
    assert "2097152 bytes (2.1 MB, 2.0 MiB) copied" in control.stdout, control.stdout


def test_print_shows_the_size_before_each_tmpfs(host, alice):
    conf = host.config_variant({"jail": "tmpfs_size = 64K"})
    r = host.run_root([host.bin, "print", "--user", alice, "--session", new_session()], config=conf)
    assert r.returncode == 0, r
    # The session jail's bwrap argv: the first line that is not a comment.
    argv = shlex.split(next(ln for ln in r.stdout.splitlines() if not ln.startswith("#")))
    tmpfs = [i for i, a in enumerate(argv) if a == "--tmpfs"]
    assert [argv[i + 1] for i in tmpfs] == SIZED[3:] + SIZED[:3], argv
    assert all(argv[i - 2:i] == ["--size", "65536"] for i in tmpfs), argv
    dev = argv.index("--dev")
    assert argv[dev:dev + 4] == ["--dev", "/dev", "--remount-ro", "/dev"], argv


@pytest.mark.parametrize("value", ["0", "0M", "-1", "256m", "1.5G", "0x100000", "17179869184G", "1025G", "65535"])
def test_invalid_tmpfs_size_is_refused(host, alice, value):
    """Never "unlimited" (tmpfs reads 0 as no limit), never a wrapped-around
    product, never a spelling the operator may have meant otherwise."""
    conf = host.config_variant({"jail": f"tmpfs_size = {value}"})
    s = new_session()
    r = host.run_root(host.jail(alice, "echo RAN", session=s), config=conf)
    assert r.returncode == 3, r
    assert "RAN" not in r.stdout
    assert re.fullmatch(r"clihost-jail: /etc/\S+\.conf: config line 12: tmpfs_size must be a byte count like 256M, 1G or 65536, "
                        r"between 64K and 1024G\n", r.stderr), r.stderr
    lines = host.audit_lines(f"session={s}")
    assert len(lines) == 1 and "decision=fail" in lines[0] and "tmpfs_size must be a byte count" in lines[0], lines
