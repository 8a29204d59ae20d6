"""The helper in a Docker-shaped container, run by Debian's runc (no Docker
daemon, no image registry, no downloads but one Debian package by name).

The rootfs is what install/clihost/Dockerfile builds, made here without a
registry: an overlay over this host's own "/" (bubblewrap, tmux, PAM, libc),
with a layer on top that holds the helper (setuid root, group clihost, as the
.deb installs it), the proxy user and two tenants, the PAM service, the
config and the routes closed as an operator does. Each bundle reproduces
Docker 28's defaults (moby oci/defaults.go): its capability set, its masked
and read-only paths, its mounts and namespaces, and Docker's own default
seccomp profile (profiles/seccomp/default.json, from Debian's
golang-github-docker-docker-dev) converted to OCI linux.seccomp the way
moby's seccomp_linux.go does. `docker run -v /dev/log:/dev/log` is the audit
route (the host's rsyslog).

The matrix (install/clihost/README.md, "Docker / Dokku") is one test per
container setting; each asserts check's exit and its exact FAIL line, run's
exit and its exact `clihost-jail:` line, and in the working settings a real
session: a session jail with its tmux session started under a pty, `ls /home`
in a jail showing only the tenant, `kill` ending it with nothing of the
tenant left. Every container is killed and deleted at the end of its test.
"""
import contextlib
import fcntl
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import (BUILD_BIN, REPO, TEST_CONFIG, cgroup_controllers, cgroup_missing, cgroup_writable, log_lines,
                      logged_at, pids, sh, wait_until)
from forkbomb import FORKS
from ptyutil import PtyProcess

RUNC = shutil.which("runc") or "/usr/sbin/runc"
DOCKER_DEV_PACKAGE = "golang-github-docker-docker-dev"
PROFILE_IN_PACKAGE = "usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json"
NARROW_SCRIPT = os.path.join(REPO, "install", "clihost", "seccomp_allow_userns.py")
HELPER = "/usr/libexec/clihost-jail/clihost-jail"  # where the .deb installs it

# The image's accounts (install/clihost/Dockerfile). Uids far from the ones
# useradd hands out, so that no host suite's process scan can see ours.
PROXY, PROXY_UID = "clihost", 59000          # the proxy; group clihost may run the helper
TENANT_GROUP, TENANT_GROUP_GID = "clihost-tenants", 59010
TENANTS = {"ctjc-alice": 59001, "ctjc-bob": 59002}
ALICE = "ctjc-alice"

CONFIG = f"""[callers]
users = {PROXY}
groups =
[tenants]
group = {TENANT_GROUP}
min_uid = 1000
max_uid = 60000
refusal_delay_max = 0
[jail]
allow_caller_command = true
shell = /usr/bin/bash
# The container's own network namespace, shared by its tenants: this matrix
# is about what Docker takes away from the jail, not about the network
# (network = isolated in a container also needs /dev/net/tun and the rules
# loaded in the container's namespace: README, "Docker / Dokku").
network = host
"""

# moby oci/caps/defaults.go (Docker 28).
DOCKER_CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
               "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
               "CAP_KILL", "CAP_AUDIT_WRITE"]
# moby oci/defaults.go (Docker 28): what --security-opt systempaths=unconfined removes.
DOCKER_MASKED = ["/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
                 "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
                 "/sys/firmware", "/sys/devices/virtual/powercap"]
DOCKER_READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}[platform.machine()]
GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
SCMP_NATIVE = {"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}.get(GOARCH)

# The five calls the narrow profile adds to Docker's (seccomp_allow_userns.py).
USERNS_SYSCALLS = {"clone", "mount", "pivot_root", "umount2", "unshare"}

# Exact reasons, as the helper words them (helper/host/container_check.cpp,
# helper/decide/proc_decision.cpp, helper/proc/probe.cpp).
SECCOMP_REASON = ("unprivileged user namespaces are not available: a seccomp filter on this process blocks namespace "
                  "creation (Seccomp: 2 in /proc/self/status, while the kernel allows user namespaces; in Docker: "
                  "--security-opt seccomp=clihost-seccomp.json, made by install/clihost/seccomp_allow_userns.py from "
                  "Docker's default profile)")


def over_proc(paths):
    return ("a fresh procfs cannot be mounted: something is mounted over part of /proc (" + ", ".join(paths) +
            "), so the kernel refuses a fresh procfs in a new user namespace; in Docker: --security-opt "
            "systempaths=unconfined")


PROC_SYS_RO = ("cannot start the jail: /proc/sys is read-only here, and bwrap --disable-userns must write "
               "/proc/sys/user/max_user_namespaces; in Docker: --security-opt systempaths=unconfined")
NO_NEW_PRIVS = ("no_new_privs is set on this process (NoNewPrivs: 1 in /proc/self/status), so the kernel ignored the "
                "setuid bit (Docker: --security-opt no-new-privileges); start the container without it, or run the "
                "proxy as root in the container")
# The mounts over /proc in mountinfo order: runc makes the read-only paths
# first, then the masks, each only where the path exists on this kernel.
MASKED_IN_PROC = [p for p in DOCKER_MASKED if p.startswith("/proc/") and os.path.exists(p)]
READONLY_IN_PROC = [p for p in DOCKER_READONLY if os.path.exists(p)]


# --- Docker's seccomp profiles ------------------------------------------------------

def fetch_docker_profile(workdir):
    """Docker's default profile, from the Debian package (apt by package name;
    `apt-get update` first only if apt cannot find it, as on a fresh machine)."""
    d = os.path.join(workdir, "deb")
    os.makedirs(d)
    got = subprocess.run(["apt-get", "download", "-q", DOCKER_DEV_PACKAGE], cwd=d, capture_output=True, text=True)
    if got.returncode != 0:
        sh("apt-get", "update", "-qq")
        got = subprocess.run(["apt-get", "download", "-q", DOCKER_DEV_PACKAGE], cwd=d, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    debs = glob.glob(os.path.join(d, "*.deb"))
    assert len(debs) == 1, debs
    sh("dpkg-deb", "-x", debs[0], os.path.join(d, "x"))
    path = os.path.join(d, "x", PROFILE_IN_PACKAGE)
    with open(path) as f:
        return path, json.load(f)


def kernel_at_least(version):
    have = [int(x) for x in re.findall(r"\d+", platform.release())[:2]]
    want = [int(x) for x in re.findall(r"\d+", version)[:2]]
    return have >= want


def docker_to_oci(profile, caps):
    """Docker's profile format to OCI linux.seccomp, as moby's setupSeccomp
    does for a container with bounding set `caps` on this architecture: a rule
    is kept only if the container has every capability it includes, none it
    excludes, and the architecture and kernel match."""
    arches = []
    for a in profile.get("archMap") or []:
        if a["architecture"] == SCMP_NATIVE:
            arches = [a["architecture"], *a.get("subArchitectures", [])]
    assert arches, f"no archMap entry for {SCMP_NATIVE}"
    out = {"defaultAction": profile["defaultAction"], "architectures": arches, "syscalls": []}
    if profile.get("defaultErrnoRet") is not None:
        out["defaultErrnoRet"] = profile["defaultErrnoRet"]
    for rule in profile["syscalls"]:
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if inc.get("arches") and GOARCH not in inc["arches"]:
            continue
        if exc.get("arches") and GOARCH in exc["arches"]:
            continue
        if inc.get("caps") and not all(c in caps for c in inc["caps"]):
            continue
        if exc.get("caps") and any(c in caps for c in exc["caps"]):
            continue
        if inc.get("minKernel") and not kernel_at_least(inc["minKernel"]):
            continue
        r = {"names": rule.get("names") or [rule["name"]], "action": rule["action"]}
        if rule.get("errnoRet") is not None:
            r["errnoRet"] = rule["errnoRet"]
        if rule.get("args"):
            r["args"] = [{"index": a["index"], "value": a["value"], "valueTwo": a.get("valueTwo", 0), "op": a["op"]}
                         for a in rule["args"]]
        out["syscalls"].append(r)
    return out


def unconditional_allows(oci):
    return {n for r in oci["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" and not r.get("args") for n in r["names"]}


# --- the rootfs ----------------------------------------------------------------------

def whiteout(path):
    """An overlayfs whiteout: the file is absent from the merged rootfs."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mknod(path, 0o600 | 0o020000, os.makedev(0, 0))


def opaque_dir(path, mode=0o755):
    """A directory that hides the host's directory of the same name."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)
    os.setxattr(path, "trusted.overlay.opaque", b"y")


def write(path, text, mode=0o644, uid=0, gid=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chown(path, uid, gid)
    os.chmod(path, mode)


def account_file(name, ours):
    """The host's /etc/NAME without entries of our names, plus `ours`."""
    names = {l.split(":", 1)[0] for l in ours}
    with open(f"/etc/{name}") as f:
        kept = [l for l in f.read().splitlines() if l.split(":", 1)[0] not in names]
    return "\n".join(kept + ours) + "\n"


def build_image_layer(base):
    """The layer install/clihost/Dockerfile adds to Debian (bubblewrap,
    tmux and PAM come from the host's own "/", the lower layer)."""
    for d in ["/run", "/tmp", "/var/tmp", "/home", os.path.dirname(TEST_CONFIG)]:
        opaque_dir(base + d, 0o1777 if d.endswith("tmp") else 0o755)
    users = [f"{PROXY}:x:{PROXY_UID}:{PROXY_UID}::/nonexistent:/usr/sbin/nologin"]
    groups = [f"{PROXY}:x:{PROXY_UID}:", f"{TENANT_GROUP}:x:{TENANT_GROUP_GID}:{','.join(TENANTS)}"]
    shadow = [f"{PROXY}:!:19000:0:99999:7:::"]
    gshadow = [f"{PROXY}:!::", f"{TENANT_GROUP}:!::{','.join(TENANTS)}"]
    for t, uid in TENANTS.items():
        # Login shell nologin: the jail's shell is [jail] shell (routes closed).
        users.append(f"{t}:x:{uid}:{uid}::/home/{t}:/usr/sbin/nologin")
        groups.append(f"{t}:x:{uid}:")
        shadow.append(f"{t}:!:19000:0:99999:7:::")
        gshadow.append(f"{t}:!::")
        os.makedirs(f"{base}/home/{t}")
        os.chown(f"{base}/home/{t}", uid, uid)
        os.chmod(f"{base}/home/{t}", 0o750)
    write(base + "/etc/passwd", account_file("passwd", users))
    write(base + "/etc/group", account_file("group", groups))
    write(base + "/etc/shadow", account_file("shadow", shadow), 0o640, gid=42)
    write(base + "/etc/gshadow", account_file("gshadow", gshadow), 0o640, gid=42)
    os.makedirs(base + os.path.dirname(HELPER))
    shutil.copy(BUILD_BIN, base + HELPER)
    os.chown(base + HELPER, 0, PROXY_UID)
    os.chmod(base + HELPER, 0o4750)
    with open(os.path.join(REPO, "pam", "clihost-jail")) as f:
        write(base + "/etc/pam.d/clihost-jail", f.read())
    write(base + TEST_CONFIG, CONFIG)
    # Routes around the jail closed as in README "Tenants": no sshd in the
    # image (a slim image has none), cron and at denied.
    whiteout(base + "/usr/sbin/sshd")
    write(base + "/etc/cron.deny", "".join(t + "\n" for t in TENANTS))
    write(base + "/etc/at.deny", "".join(t + "\n" for t in TENANTS), 0o640)


# --- the bundles -----------------------------------------------------------------------

def docker_spec(rootfs, seccomp, systempaths=True, masked=True, readonly=True, no_new_privs=False,
                proc_options=(), cgroup=None):
    """config.json of `docker run` with Docker 28's defaults, plus
    -v /dev/log:/dev/log. seccomp: an OCI linux.seccomp or None
    (seccomp=unconfined); systempaths False: systempaths=unconfined; masked /
    readonly: keep only one of the two lists. cgroup: None, no cgroup file
    system; "ro", Docker's default on a host with v1 controllers (the
    container's own cgroups mounted read-only, the host's cgroup namespace);
    "rw", a delegated container cgroup (a cgroup namespace of its own, its
    subtree mounted read-write: /sys/fs/cgroup's root is the container's
    cgroup, which runc makes below the test's own)."""
    caps = list(DOCKER_CAPS)
    linux = {
        "namespaces": [{"type": t} for t in ["pid", "ipc", "uts", "mount", "network"]],
        "maskedPaths": DOCKER_MASKED if systempaths and masked else [],
        "readonlyPaths": DOCKER_READONLY if systempaths and readonly else [],
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
    }
    if seccomp is not None:
        linux["seccomp"] = seccomp
    if cgroup == "rw":
        linux["namespaces"].append({"type": "cgroup"})
    nosuid = ["nosuid", "noexec", "nodev"]
    cgroup_mount = [{"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                     "options": nosuid + ["ro" if cgroup == "ro" else "rw"]}] if cgroup else []
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": 0, "gid": 0}, "args": ["/bin/sleep", "infinity"],
            "env": [PATH_ENV], "cwd": "/",
            "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
            "noNewPrivileges": no_new_privs,
        },
        "root": {"path": rootfs, "readonly": False},
        "hostname": "clihost",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc", "options": nosuid + list(proc_options)},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": nosuid + ["ro"]},
            {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": nosuid},
            {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": nosuid + ["mode=1777"]},
            {"destination": "/dev/log", "type": "bind", "source": "/dev/log", "options": ["rbind", "rprivate"]},
            *cgroup_mount,
        ],
        "linux": linux,
    }


def sanitizer_env():
    """Under tests/sanitize.sh (an ASan+UBSan helper), its options, with the
    leak check off: LeakSanitizer stops the world with ptrace, which Docker's
    seccomp profile refuses, and it then fails every run of the helper."""
    env = []
    if os.environ.get("ASAN_OPTIONS"):
        env.append("ASAN_OPTIONS=" + os.environ["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0"))
    if os.environ.get("UBSAN_OPTIONS"):
        env.append("UBSAN_OPTIONS=" + os.environ["UBSAN_OPTIONS"])
    return env


def process_spec(spec, args, uid=0, gid=0, groups=()):
    """A `docker exec -u UID` process: Docker gives a non-root user only the
    bounding set (a setuid-root helper gets the rest from the kernel)."""
    caps = spec["process"]["capabilities"]["bounding"]
    mine = caps if uid == 0 else []
    return {"terminal": False, "user": {"uid": uid, "gid": gid, "additionalGids": list(groups)}, "args": args,
            "env": [PATH_ENV, "TERM=xterm-256color", *sanitizer_env()], "cwd": "/",
            "capabilities": {"bounding": caps, "effective": mine, "permitted": mine},
            "noNewPrivileges": spec["process"]["noNewPrivileges"]}


class Container:
    def __init__(self, cid, spec, workdir):
        self.cid, self.spec, self.workdir = cid, spec, workdir

    def _process_file(self, args, uid, gid, groups):
        path = os.path.join(self.workdir, f"process-{uuid.uuid4().hex[:8]}.json")
        with open(path, "w") as f:
            json.dump(process_spec(self.spec, args, uid, gid, groups), f)
        return [RUNC, "exec", "--process", path, self.cid]

    def exec(self, args, uid=0, gid=0, groups=(), timeout=90):
        return subprocess.run(self._process_file(args, uid, gid, groups), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)

    def check(self, timeout=90):
        """The operator's `check` of ALICE: as the container's root (check is
        not run for the proxy: README, "Three programs")."""
        return self.exec([HELPER, "check", "--user", ALICE], timeout=timeout)

    def as_proxy(self, args, timeout=90):
        """The proxy's call: as user clihost, through the setuid helper."""
        return self.exec([HELPER, *args], uid=PROXY_UID, gid=PROXY_UID, timeout=timeout)

    def write_config(self, text):
        """The container's jail.conf replaced, as its root would."""
        r = self.exec(["/usr/bin/python3", "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", TEST_CONFIG,
                       text])
        assert r.returncode == 0, r

    def read(self, path):
        r = self.exec(["/bin/cat", path])
        assert r.returncode == 0, r
        return r.stdout

    def terminal(self, args):
        """The proxy's ttyd in the container: the helper under a pty of the
        container's own devpts (script(1) allocates it, as ttyd would), its
        output relayed to a pty of the test."""
        command = " ".join([HELPER, *args])  # fixed words, no quoting needed
        return PtyProcess(self._process_file(["/usr/bin/script", "-qfec", command, "/dev/null"], PROXY_UID,
                                             PROXY_UID, ()))


def runc_cgroup_missing():
    """runc puts each container in a cgroup of its own under this process's:
    on a v1 host in each hierarchy, the devices one enforcing the spec's
    device rules; on a v2-only host in the unified hierarchy (device rules as
    eBPF). None where it can make one; else the host's reason."""
    found = cgroup_controllers()
    if any(version == 1 for version, _ in found.values()):
        return cgroup_missing("devices")
    unified = {d for version, d in found.values() if version == 2}
    if not unified:
        return "this process is in no cgroup hierarchy with a controller runc could use"
    d = unified.pop()
    return None if cgroup_writable(d) else f"the cgroup v2 directory {d} is not writable here (no child cgroup)"


@pytest.fixture(scope="module")
def world():
    """Docker's profiles and the image layer, built once; the integration
    lock held throughout (the suites share the machine)."""
    if os.geteuid() != 0:
        pytest.fail("the container suite must run as root")
    assert os.path.exists(BUILD_BIN), f"build the helper first: {BUILD_BIN}"
    assert os.access(RUNC, os.X_OK), "runc is part of the test host (tests/run.sh installs it)"
    why = runc_cgroup_missing()
    if why:
        pytest.skip(f"runc cannot give a container its cgroup: {why}")
    # The lower layer is the filesystem mounted on "/" alone (overlayfs does
    # not follow submounts): the image's programs must be on it.
    assert not any(os.path.ismount(d) for d in ("/usr", "/etc", "/var")), "needs /usr, /etc and /var on /'s filesystem"
    with open("/run/ctj-integration.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        top = tempfile.mkdtemp(prefix="ctjc-", dir="/var/tmp")
        layers = os.path.join(top, "layers")
        os.makedirs(layers)
        # Upper layers on a tmpfs of their own: overlayfs refuses an upper
        # directory inside its lower "/".
        sh("mount", "-t", "tmpfs", "-o", "mode=0755,size=256m", "ctjc-layers", layers)
        try:
            default_path, default = fetch_docker_profile(top)
            narrow = subprocess.run(["python3", NARROW_SCRIPT, default_path], capture_output=True, text=True)
            assert narrow.returncode == 0, narrow.stderr
            base = os.path.join(layers, "base")
            build_image_layer(base)
            yield {"top": top, "layers": layers, "base": base, "default": default,
                   "narrow": json.loads(narrow.stdout),
                   "oci_default": docker_to_oci(default, DOCKER_CAPS),
                   "oci_narrow": docker_to_oci(json.loads(narrow.stdout), DOCKER_CAPS)}
        finally:
            sh("umount", "-l", layers, check=False)
            shutil.rmtree(top, ignore_errors=True)


def tenant_processes():
    return [p for uid in TENANTS.values() for p in pids(uid=uid, live=True)]


@contextlib.contextmanager
def container(world, config=CONFIG, **spec_args):
    """A running container (init: sleep) on a fresh upper layer over the
    image layer; killed, deleted and unmounted at the end, failure or not."""
    cid = "ctjc-" + uuid.uuid4().hex[:12]
    d = os.path.join(world["layers"], cid)
    upper, work, rootfs = (os.path.join(d, x) for x in ("upper", "work", "rootfs"))
    for x in (upper, work, rootfs):
        os.makedirs(x)
    if config != CONFIG:
        write(upper + TEST_CONFIG, config)
    sh("mount", "-t", "overlay", "overlay", "-o", f"lowerdir={world['base']}:/,upperdir={upper},workdir={work}",
       rootfs)
    spec = docker_spec(rootfs, **spec_args)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(spec, f)
    started = False
    try:
        # The container's init inherits runc's stdio: a file, not a pipe
        # that would stay open as long as the container runs.
        with tempfile.TemporaryFile() as err:
            r = subprocess.run([RUNC, "run", "--detach", "--bundle", d, cid], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=err, timeout=60)
            err.seek(0)
            assert r.returncode == 0, err.read().decode(errors="replace")
        started = True
        yield Container(cid, spec, d)
    finally:
        if started:
            subprocess.run([RUNC, "kill", cid, "KILL"], capture_output=True)
            subprocess.run([RUNC, "delete", "--force", cid], capture_output=True)
        gone = wait_until(lambda: not tenant_processes(), 10)
        deleted = subprocess.run([RUNC, "state", cid], capture_output=True).returncode != 0
        subprocess.run(["umount", rootfs], capture_output=True)
        if os.path.ismount(rootfs):
            subprocess.run(["umount", "-l", rootfs], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
    assert gone, f"tenant processes outlived container {cid}: {tenant_processes()}"
    assert deleted, f"runc still knows container {cid}"


def check_lines(r):
    return r.stdout.splitlines()


def fails(r):
    return [l for l in check_lines(r) if ": FAIL: " in l]


def stderr_line(r):
    lines = [l for l in r.stderr.splitlines() if l.startswith("clihost-jail: ")]
    assert len(lines) == 1, r
    return lines[0]


# --- the profiles themselves ----------------------------------------------------------

def test_dockers_profile_never_allows_pivot_root_and_the_narrow_one_adds_exactly_five_calls(world):
    """README: pivot_root is not in Docker's default profile, not even for a
    container with CAP_SYS_ADMIN; the shipped script adds clone, unshare,
    mount, umount2 and pivot_root unconditionally and nothing else."""
    assert not any("pivot_root" in (r.get("names") or [r.get("name")]) for r in world["default"]["syscalls"])
    with_admin = docker_to_oci(world["default"], DOCKER_CAPS + ["CAP_SYS_ADMIN"])
    assert {"mount", "umount2", "unshare"} <= unconditional_allows(with_admin)  # control: CAP_SYS_ADMIN counts
    assert "pivot_root" not in {n for r in with_admin["syscalls"] for n in r["names"]}
    default, narrow = world["oci_default"], world["oci_narrow"]
    assert unconditional_allows(narrow) - unconditional_allows(default) == USERNS_SYSCALLS
    assert unconditional_allows(default) & USERNS_SYSCALLS == set()
    # Every other rule is Docker's, unchanged and in order (clone3 stays
    # ENOSYS, keyctl stays denied).
    def others(p):
        return [dict(r, names=[n for n in r["names"] if n not in USERNS_SYSCALLS]) for r in p["syscalls"]
                if set(r["names"]) - USERNS_SYSCALLS]
    assert others(narrow) == others(default)
    assert "keyctl" not in unconditional_allows(narrow)
    assert narrow["defaultAction"] == default["defaultAction"] == "SCMP_ACT_ERRNO"


CORE_PATTERN_PROBE = ("import os\ntry:\n    os.close(os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY))\n"
                      "    print('writable')\nexcept OSError as e:\n    print(os.strerror(e.errno))\n")


# --- the matrix -------------------------------------------------------------------------

def assert_working(c):
    """check passes; a session jail starts under a pty with its tmux session,
    a jail sees only the tenant's home, kill ends the session and with it
    every process of the tenant."""
    r = c.check()
    assert r.returncode == 0 and not fails(r), r
    assert "user namespaces: yes" in check_lines(r) and "fresh procfs: yes" in check_lines(r), r
    assert "result: a jail can start" in check_lines(r), r
    # Control: the container's /home holds both tenants.
    assert c.exec(["/bin/ls", "-A", "/home"]).stdout == "".join(t + "\n" for t in sorted(TENANTS))
    ls = c.as_proxy(["run", "--user", ALICE, "--session", "ls", "--", "/bin/ls", "-A", "/home"])
    assert (ls.returncode, ls.stdout, ls.stderr) == (0, ALICE + "\n", ""), ls
    # systempaths=unconfined opens the host's sysctls to container root, not
    # to the jail: a tenant is never root.
    core = c.as_proxy(["run", "--user", ALICE, "--session", "core", "--", "/usr/bin/python3", "-c",
                       CORE_PATTERN_PROBE])
    assert (core.returncode, core.stdout) == (0, "Permission denied\n"), core
    session = "main"
    term = c.terminal(["run", "--user", ALICE, "--session", session])
    try:
        listed = lambda: c.as_proxy(["list", "--user", ALICE]).stdout
        # No cgroup file system in these containers: no usage to show.
        assert wait_until(lambda: f"sessions={session} memory=- tasks=-\n" in listed(), 20, step=0.2), \
            (listed(), term.output())
        term.write("echo IN_JAIL_$((6*7)) $(id -un)\r")
        assert term.wait_for(f"IN_JAIL_42 {ALICE}"), term.output()
        assert tenant_processes(), "the session jail runs as the tenant"
        k = c.as_proxy(["kill", "--user", ALICE, "--session", session])
        assert k.returncode == 0, k
        assert wait_until(lambda: not tenant_processes(), 15), tenant_processes()
        assert c.as_proxy(["list", "--user", ALICE]).stdout == ""
        term.wait(timeout=15)
    finally:
        term.close()


def test_docker_defaults_seccomp_blocks_user_namespaces(world):
    with container(world, seccomp=world["oci_default"]) as c:
        r = c.check()
        assert r.returncode == 3, r
        assert f"user namespaces: no ({SECCOMP_REASON})" in check_lines(r), r
        assert f"plan: FAIL: user namespaces are unavailable: {SECCOMP_REASON}" in check_lines(r), r
        assert f"/proc/sys: FAIL: {PROC_SYS_RO}" in check_lines(r), r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        assert run.returncode == 3, run
        # Docker's read-only /proc/sys is named first: every jail needs it writable.
        assert stderr_line(run) == f"clihost-jail: {PROC_SYS_RO}", run


def test_seccomp_unconfined_but_masked_paths_block_a_fresh_procfs(world):
    with container(world, seccomp=None) as c:
        r = c.check()
        assert r.returncode == 3, r
        assert "user namespaces: yes" in check_lines(r), r
        detail = over_proc(READONLY_IN_PROC + MASKED_IN_PROC)
        assert f"fresh procfs: no ({detail})" in check_lines(r), r
        assert f"/proc/sys: FAIL: {PROC_SYS_RO}" in check_lines(r), r
        assert (f"plan: FAIL: cannot mount a private /proc here ({detail}); refusing (proc = private)"
                in check_lines(r)), r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        assert (run.returncode, stderr_line(run)) == (3, f"clihost-jail: {PROC_SYS_RO}"), run


def keyctl_result(c):
    """keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) as container
    root: (return value, errno)."""
    r = c.exec(["/usr/bin/python3", "-c", "import ctypes;l=ctypes.CDLL(None,use_errno=True);"
                f"r=l.syscall({SYS_KEYCTL},0,-3,0);print(r,ctypes.get_errno())"])
    ret, err = r.stdout.split()
    return int(ret), int(err)


def test_seccomp_unconfined_and_systempaths_unconfined_run_a_real_jail(world):
    with container(world, seccomp=None, systempaths=False) as c:
        assert_working(c)
        # No filter at all: keyctl, which Docker's profile denies, works.
        assert keyctl_result(c)[0] > 0


def test_narrow_profile_and_systempaths_unconfined_run_a_real_jail(world):
    """The supported setting (install/clihost/README.md)."""
    with container(world, seccomp=world["oci_narrow"], systempaths=False) as c:
        assert_working(c)
        # Docker's filter is still there: the narrow profile is no unconfined.
        status = c.exec(["/bin/grep", "-E", "^(Seccomp|NoNewPrivs):", "/proc/self/status"])
        assert status.stdout.split() == ["NoNewPrivs:", "0", "Seccomp:", "2"], status
        assert keyctl_result(c) == (-1, 1)  # EPERM, as under Docker's own profile


def test_narrow_profile_with_masked_paths_kept_names_the_mounts(world):
    with container(world, seccomp=world["oci_narrow"]) as c:
        r = c.check()
        assert r.returncode == 3, r
        detail = over_proc(READONLY_IN_PROC + MASKED_IN_PROC)
        assert f"fresh procfs: no ({detail})" in check_lines(r), r
        assert f"/proc/sys: FAIL: {PROC_SYS_RO}" in check_lines(r), r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        assert (run.returncode, stderr_line(run)) == (3, f"clihost-jail: {PROC_SYS_RO}"), run


def test_only_masked_paths_block_a_fresh_procfs(world):
    """Docker's masked paths alone (no read-only /proc/sys): the fresh procfs
    is refused, and run says so from inside the jail child."""
    with container(world, seccomp=world["oci_narrow"], readonly=False) as c:
        r = c.check()
        assert r.returncode == 3, r
        assert f"fresh procfs: no ({over_proc(MASKED_IN_PROC)})" in check_lines(r), r
        assert not any(l.startswith("/proc/sys:") for l in check_lines(r)), r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        assert run.returncode == 3, run
        assert stderr_line(run) == (f"clihost-jail: cannot mount a private /proc here ({over_proc(MASKED_IN_PROC)}); "
                                    "refusing (proc = private)"), run


def test_only_read_only_proc_sys_is_named(world):
    with container(world, seccomp=world["oci_narrow"], masked=False) as c:
        r = c.check()
        assert r.returncode == 3, r
        assert f"/proc/sys: FAIL: {PROC_SYS_RO}" in check_lines(r), r
        assert f"fresh procfs: no ({over_proc(READONLY_IN_PROC)})" in check_lines(r), r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        assert (run.returncode, stderr_line(run)) == (3, f"clihost-jail: {PROC_SYS_RO}"), run


def test_hidepid_fallback_does_not_work_under_docker(world):
    """/proc hidepid=invisible with proc = private-or-hidepid and Docker's
    paths kept: bwrap --disable-userns would die on the read-only /proc/sys
    (bwrap's own message, after the tenant's namespaces exist); the helper
    refuses first, naming it."""
    conf = CONFIG.replace("[jail]\n", "[jail]\nproc = private-or-hidepid\n")
    with container(world, config=conf, seccomp=world["oci_narrow"], proc_options=["hidepid=invisible"]) as c:
        r = c.check()
        assert r.returncode == 3, r
        assert "host /proc hidepid=invisible: yes" in check_lines(r), r
        assert fails(r) == [f"/proc/sys: FAIL: {PROC_SYS_RO}"], r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        # Only the helper's line: bwrap never started.
        assert (run.returncode, run.stderr) == (3, f"clihost-jail: {PROC_SYS_RO}\n"), run
        # Control: what bwrap itself does there (before this refusal, the
        # helper started it and passed on this message).
        uid = TENANTS[ALICE]
        bwrap = c.exec(["/usr/bin/bwrap", "--unshare-user", "--unshare-pid", "--disable-userns", "--ro-bind", "/", "/",
                        "--", "/bin/true"], uid=uid, gid=uid)
        assert (bwrap.returncode, bwrap.stderr) == (
            1, "bwrap: cannot open /proc/sys/user/max_user_namespaces: Read-only file system\n"), bwrap


def test_no_new_privileges_makes_the_setuid_helper_powerless(world):
    """--security-opt no-new-privileges: the setuid bit is ignored; run names
    it (check is root's: the proxy's is refused for that reason). Control:
    the same container's root (no setuid needed) passes check."""
    with container(world, seccomp=world["oci_narrow"], systempaths=False, no_new_privs=True) as c:
        r = c.as_proxy(["check", "--user", ALICE])
        assert r.returncode == 1, r
        assert stderr_line(r).startswith("clihost-jail: check and print are not run by the setuid helper"), r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/true"])
        assert run.returncode == 3, run
        assert stderr_line(run) == f"clihost-jail: not running with root privileges ({NO_NEW_PRIVS})", run
        root = c.exec([HELPER, "check", "--user", ALICE])
        assert root.returncode == 0 and not fails(root), root


# --- [limits] in a container (SECURITY.md, "Per-tenant resources") ---------------------------

ALLOCATE = "b = bytearray(200 << 20); print(len(b))"  # 200 MiB, touched
# argv: CGROUP_PROCS. Enters that cgroup, forks 15 children (they sleep 2 s),
# prints how many forks worked.
ROOT_FORKS = """
import os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
kids = []
for _ in range(15):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print(len(kids), end="")
"""
V1_HOST = not os.path.exists("/sys/fs/cgroup/cgroup.controllers")
# The tenant's jails leaf as the container sees its cgroup file system.
ALICE_JAILS = "/sys/fs/cgroup/{controller}/clihost-jail/%d/jails" % TENANTS[ALICE]


def alice_jails(controller):
    return ALICE_JAILS.format(controller=controller if V1_HOST else "").replace("//", "/")


def forks(c, n):
    r = c.as_proxy(["run", "--user", ALICE, "--session", "forks", "--", "/usr/bin/python3", "-c", FORKS, str(n), "-"])
    assert r.returncode == 0, r
    return int(r.stdout)


def test_a_delegated_cgroup_enforces_tasks_max_and_memory_max(world):
    """A writable, namespaced cgroup file system (the container's own
    subtree): the tenant's cgroup is made there, a fork bomb stays within
    tasks_max, the cgroup's pids.max holds by itself (pids.events counts its
    refusals), memory_max OOM-kills an allocation past it in the tenant's
    cgroup."""
    conf = CONFIG + "[limits]\ntasks_max = 40\nmemory_max = 64M\n"
    with container(world, config=conf, seccomp=world["oci_narrow"], systempaths=False, cgroup="rw") as c:
        r = c.check()
        assert r.returncode == 0 and not fails(r), r
        cgroups = [l for l in check_lines(r) if l.startswith("cgroups: ")]
        assert cgroups and cgroups[0].endswith(", tenants' cgroups under clihost-jail"), r
        # 60 forks with tasks_max 40, the children kept while we look.
        bomb = subprocess.Popen(c._process_file([HELPER, "run", "--user", ALICE, "--session", "bomb", "--",
                                                 "/usr/bin/python3", "-c", FORKS, "60", "-", "wait"], PROXY_UID, PROXY_UID,
                                                ()), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)
        try:
            pids_dir = alice_jails("pids")
            assert wait_until(lambda: c.exec(["/bin/cat", pids_dir + "/pids.current"]).stdout.strip().isdigit() and
                              int(c.read(pids_dir + "/pids.current")) >= 30, 30, step=0.5)
            time.sleep(2)  # the bomb has made every fork it can
            assert c.read(pids_dir + "/pids.max").strip() == "40"
            current = int(c.read(pids_dir + "/pids.current"))
            assert 30 <= current <= 40, current
            # RLIMIT_NPROC (the same 40, per uid) stopped alice first: every
            # process in her leaf is hers. The cgroup's own limit, by effect:
            # container root (whom no RLIMIT_NPROC stops) joins her leaf and
            # cannot fork 15 children there; in its own cgroup it can.
            assert c.read(pids_dir + "/pids.events").split() == ["max", "0"]
            assert c.exec(["/usr/bin/python3", "-c", ROOT_FORKS, "/sys/fs/cgroup/pids/cgroup.procs"]).stdout == "15"
            probe = c.exec(["/usr/bin/python3", "-c", ROOT_FORKS, pids_dir + "/cgroup.procs"])
            assert probe.returncode == 0 and int(probe.stdout) < 15, probe
            events = c.read(pids_dir + "/pids.events").split()
            assert events[0] == "max" and int(events[1]) > 0, events
            out, err = bomb.communicate(timeout=60)
            assert bomb.returncode == 0 and 20 <= int(out) < 40, (out, err)
        finally:
            if bomb.poll() is None:
                bomb.kill()
                bomb.wait()
        mem = c.as_proxy(["run", "--user", ALICE, "--session", "mem", "--", "/usr/bin/python3", "-c", ALLOCATE])
        assert mem.returncode == 137, mem  # SIGKILL: the OOM killer, in the tenant's cgroup
        memory_dir = alice_jails("memory")
        if V1_HOST:
            assert c.read(memory_dir + "/memory.limit_in_bytes").strip() == str(64 << 20)
            assert "oom_kill 1" in c.read(memory_dir + "/memory.oom_control").splitlines()
        else:
            assert c.read(memory_dir + "/memory.max").strip() == str(64 << 20)
            assert "oom_kill 1" in c.read(memory_dir + "/memory.events").splitlines()
        # Control: 32 MiB fit in the same limit.
        small = c.as_proxy(["run", "--user", ALICE, "--session", "mem", "--", "/usr/bin/python3", "-c",
                            "b = bytearray(32 << 20); print(len(b))"])
        assert (small.returncode, small.stdout.strip()) == (0, str(32 << 20)), small


RO_WHY = "the cgroup file system is read-only"
RO_CREATE = ("cannot create /sys/fs/cgroup/memory/clihost-jail: Read-only file system" if V1_HOST else
             "cannot create /sys/fs/cgroup/clihost-jail: Read-only file system")


def test_dockers_read_only_cgroupfs_reports_the_defaults_and_refuses_an_explicit_limit(world):
    """Docker's defaults: the container's cgroups read-only. check says which
    limits are not enforced and why; the built-in defaults ride in the allow
    line and the jail runs; an explicit memory_max refuses (exit 3, one
    line); an allocation no default could bound succeeds (the container's own
    limits are what bounds the tenants there)."""
    with container(world, seccomp=world["oci_narrow"], systempaths=False, cgroup="ro") as c:
        probe = c.exec(["/bin/mkdir", "/sys/fs/cgroup/memory/ctjc-probe" if V1_HOST else "/sys/fs/cgroup/ctjc-probe"])
        assert probe.returncode != 0 and probe.stderr.endswith(": Read-only file system\n"), probe
        r = c.check()
        assert r.returncode == 0 and not fails(r), r
        assert (f"cgroups: {RO_WHY}; memory_max not enforced; tasks_max 4096 only as RLIMIT_NPROC (per uid)"
                in check_lines(r)), r
        since = time.time()
        ran = c.as_proxy(["run", "--user", ALICE, "--session", "mem", "--", "/usr/bin/python3", "-c", ALLOCATE])
        assert (ran.returncode, ran.stdout.strip(), ran.stderr) == (0, str(200 << 20), ""), ran
        lines = log_lines(lambda l: "allow" in l and f"tenant={ALICE}" in l and "warning: memory_max not enforced" in l,
                          timeout=10)
        lines = [l for l in lines if logged_at(l) >= since - 1]
        assert lines and f"warning: memory_max not enforced ({RO_CREATE})" in lines[-1], lines
        assert f"warning: tasks_max 4096 only as RLIMIT_NPROC (per uid) ({RO_CREATE})" in lines[-1], lines
        # A limit the operator wrote is enforced or the start refuses.
        c.write_config(CONFIG + "[limits]\nmemory_max = 256M\n")
        r = c.check()
        assert r.returncode == 3, r
        assert fails(r) == [f"cgroups: FAIL: memory_max is set in [limits] but cannot be enforced here ({RO_WHY})"], r
        run = c.as_proxy(["run", "--user", ALICE, "--session", "s", "--", "/bin/echo", "ran"])
        assert (run.returncode, run.stdout) == (3, ""), run
        assert run.stderr == ("clihost-jail: memory_max is set in [limits] but cannot be enforced here "
                              f"({RO_CREATE})\n"), run


def test_tasks_max_bounds_a_tenant_through_rlimit_nproc_on_a_read_only_cgroupfs(world):
    """No pids cgroup to use: tasks_max still bounds the tenant, as
    RLIMIT_NPROC of every jail (all of the tenant's processes on the host).
    Control: with tasks_max = max the same tenant forks them all."""
    with container(world, config=CONFIG + "[limits]\ntasks_max = 30\n", seccomp=world["oci_narrow"],
                   systempaths=False, cgroup="ro") as c:
        r = c.check()
        assert r.returncode == 0 and not fails(r), r
        assert f"cgroups: {RO_WHY}; memory_max not enforced; tasks_max 30 only as RLIMIT_NPROC (per uid)" \
            in check_lines(r), r
        limit = c.as_proxy(["run", "--user", ALICE, "--session", "l", "--", "/usr/bin/python3", "-c",
                            "import resource; print(*resource.getrlimit(resource.RLIMIT_NPROC))"])
        assert (limit.returncode, limit.stdout) == (0, "30 30\n"), limit
        assert 20 <= forks(c, 60) < 30
        c.write_config(CONFIG + "[limits]\ntasks_max = max\n")
        assert forks(c, 60) == 60


# --- what systempaths=unconfined gives container root (SECURITY.md) -----------------------

def test_systempaths_unconfined_lets_container_root_open_host_core_pattern(world):
    """Opened for writing, never written. With Docker's paths the open fails
    (read-only /proc/sys); with systempaths=unconfined container root gets
    it; a non-root proxy does not."""
    with container(world, seccomp=world["oci_narrow"]) as c:
        assert c.exec(["/usr/bin/python3", "-c", CORE_PATTERN_PROBE]).stdout == "Read-only file system\n"
    with container(world, seccomp=world["oci_narrow"], systempaths=False) as c:
        assert c.exec(["/usr/bin/python3", "-c", CORE_PATTERN_PROBE]).stdout == "writable\n"
        proxy = c.exec(["/usr/bin/python3", "-c", CORE_PATTERN_PROBE], uid=PROXY_UID, gid=PROXY_UID)
        assert proxy.stdout == "Permission denied\n", proxy


def test_audit_lines_reach_the_hosts_syslog_through_dev_log(world):
    """-v /dev/log:/dev/log: the helper's audit lines from inside the
    container land in the host's auth.log."""
    with container(world, seccomp=world["oci_narrow"], systempaths=False) as c:
        since = time.time()
        r = c.check()
        assert r.returncode == 0, r
        lines = log_lines(lambda l: "check passed" in l and f"tenant={ALICE}" in l and "caller=root" in l,
                          timeout=10)
        assert any(logged_at(l) >= since - 1 for l in lines), lines


# --- the example image ----------------------------------------------------------------------

def test_the_dockerfile_builds_what_the_test_rootfs_has():
    """install/clihost/Dockerfile cannot be built here (no registry); the
    rootfs above stands in for it. Keep the two the same where it matters:
    Debian bookworm-slim with bubblewrap and tmux, the helper from its .deb
    (setuid root, group clihost, the PAM service), a non-root proxy user
    clihost, no sshd, cron, at or MTA installed, /dev/log from the host."""
    with open(os.path.join(REPO, "install", "clihost", "Dockerfile")) as f:
        text = f.read()
    lines = [l.strip() for l in text.splitlines()]
    code = " ".join(l for l in lines if l and not l.startswith("#")).replace("\\", " ")
    assert "FROM debian:bookworm-slim" in lines
    installs = re.findall(r"apt-get install -y --no-install-recommends ([^&]+)", code)
    packages = {p for group in installs for p in group.split()}
    assert {"bubblewrap", "tmux", "/tmp/clihost-jail_*.deb"} <= packages, packages
    assert not packages & {"openssh-server", "cron", "at", "exim4", "postfix", "sudo"}, packages
    assert f"useradd --system --gid clihost --home-dir /nonexistent --shell /usr/sbin/nologin {PROXY}" in code
    assert lines.count(f"USER {PROXY}") == 1 and "USER root" not in lines
    assert "-v /dev/log:/dev/log" in text
    # The .deb puts the helper and the PAM service where the rootfs has them.
    with open(os.path.join(REPO, "install", "debian", "postinst")) as f:
        postinst = f.read()
    assert f"helper={HELPER}" in postinst and "dpkg-statoverride --update --add root clihost 4750" in postinst
