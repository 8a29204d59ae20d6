#!/usr/bin/env python3
"""Derive a Docker seccomp profile for a clihost container from Docker's default.

The supported seccomp setting for clihost in Docker (install/clihost/README.md,
"Docker / Dokku"); --security-opt seccomp=unconfined is the fallback.
tests/integration/test_containers.py runs its output, converted to OCI the way
Docker converts it, under runc with Docker's defaults (capabilities, masked and
read-only paths): with --security-opt systempaths=unconfined `clihost-jail
check` exits 0 and real sessions run; Docker's default profile alone refuses
namespace creation. The test starts from the default.json in Debian's
golang-github-docker-docker-dev (Docker 20.10's); for your Docker version,
`clihost-jail check --user TENANT` inside the container is the proof.

Why: Docker's default profile lets clone/unshare create namespaces, and lets
mount/umount2 run, only for containers with CAP_SYS_ADMIN, and never allows
pivot_root. bwrap (the jail) and the helper's probe need exactly those five
calls, inside a new user namespace. --security-opt seccomp=unconfined also works
but drops the whole filter (keyctl, bpf, perf_event_open, kexec, ...); this
keeps all of it and only lets these five calls through unconditionally.

What it costs: the container process still has no CAP_SYS_ADMIN, so the
kernel itself refuses mount/pivot_root/new namespaces outside a user
namespace. What it opens is the kernel surface reachable from inside an
unprivileged user namespace, which is the inherent price of bwrap.

Start from the default.json that matches your Docker version (moby:
profiles/seccomp/default.json at your version's tag):

    python3 seccomp_allow_userns.py default.json > clihost-seccomp.json
    docker run --security-opt seccomp=clihost-seccomp.json \\
               --security-opt systempaths=unconfined ...
"""
import json
import sys

# clone: the helper's probe (helper/proc/probe.cpp trial_clone: a raw
# clone(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID), whose child mounts a fresh
# procfs) and bwrap's own raw clone (CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|
# CLONE_NEWIPC). clone3 is left as the default has it (ENOSYS, so libc falls
# back to clone).
# unshare: bwrap, not the helper: --disable-userns makes it unshare a nested
# CLONE_NEWUSER (and try a second one, which must fail).
# mount, umount2, pivot_root: bwrap building the jail's root (mount: also the
# probe making / private and mounting its fresh procfs).
USERNS_SYSCALLS = ["clone", "mount", "pivot_root", "umount2", "unshare"]


def allow_userns(profile):
    """Return a copy of PROFILE where USERNS_SYSCALLS are allowed without conditions."""
    out = json.loads(json.dumps(profile))
    wanted = set(USERNS_SYSCALLS)
    kept = []
    for rule in out.get("syscalls", []):
        names = rule.get("names", [rule["name"]] if "name" in rule else [])
        if rule.get("action") == "SCMP_ACT_ALLOW" and wanted & set(names):
            # Conditional allows (args masks, CAP_SYS_ADMIN includes) for these
            # names are superseded by the unconditional rule added below;
            # removing them avoids duplicate rules for one syscall, which some
            # libseccomp versions reject.
            rest = [n for n in names if n not in wanted]
            if not rest:
                continue
            rule = dict(rule, names=rest)
            rule.pop("name", None)
        kept.append(rule)
    kept.append({
        "names": list(USERNS_SYSCALLS),
        "action": "SCMP_ACT_ALLOW",
        "comment": "clihost-jail: bwrap in an unprivileged user namespace",
    })
    out["syscalls"] = kept
    return out


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} DOCKER_DEFAULT_PROFILE.json > clihost-seccomp.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        profile = json.load(f)
    if profile.get("defaultAction") in (None, "SCMP_ACT_ALLOW"):
        print("refusing: not a default-deny profile, nothing to narrow", file=sys.stderr)
        return 1
    json.dump(allow_userns(profile), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
