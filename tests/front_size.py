#!/usr/bin/env python3
"""tests/front_size.py: the setuid front stays small enough to review line
by line. Counts the lines of the project's own code linked into the
clihost-jail target: every source of its CMake target and of the libraries
it links (the list CMake generates, front_sources.txt), and every header of
helper/ those sources include, transitively. Fails above LIMIT (README,
"Three programs"). The controls: the supervisor's session.cpp and PAM's
pam_session.cpp are not in the list (the linker enforces it: they are in
another library), and a made-up list of all of helper/ exceeds the limit.
Run by ctest (unit.front_size) with the list's path."""
import glob
import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HELPER = os.path.join(REPO, "helper")
LIMIT = 8400
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(sources):
    seen, todo = set(), [os.path.realpath(s) for s in sources]
    while todo:
        path = todo.pop()
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        for inc in INCLUDE.findall(open(path, encoding="utf-8").read()):
            cand = os.path.realpath(os.path.join(HELPER, inc))
            if os.path.exists(cand):
                todo.append(cand)
    return seen


def count(files):
    return sum(sum(1 for _ in open(f, encoding="utf-8")) for f in files)


def main():
    listed = [s for s in open(sys.argv[1], encoding="utf-8").read().split("\n") if s.strip()]
    files = closure(listed)
    names = {os.path.relpath(f, HELPER) for f in files}
    for forbidden in ("proc/session.cpp", "proc/owner.cpp", "priv/pam_session.cpp", "priv/pam_dl.cpp",
                      "host/systemd_scope.cpp", "host/cgroup.cpp", "host/placement.cpp", "proc/net.cpp",
                      "verbs/check.cpp", "host/routes.cpp", "decide/plan.cpp", "decide/jail_files.cpp",
                      "decide/net_plan.cpp"):
        if forbidden in names:
            print(f"front_size: FAIL: the setuid front links {forbidden}")
            return 1
    everything = glob.glob(os.path.join(HELPER, "*", "*.[ch]pp"))
    if count(everything) <= LIMIT:
        print("front_size: FAIL (the control: all of helper/ is within the limit)")
        return 1
    n = count(files)
    print(f"front_size: {n} lines in {len(files)} files linked into the setuid front (limit {LIMIT})")
    if n > LIMIT:
        for f in sorted(files, key=lambda f: -count([f]))[:15]:
            print(f"  {count([f]):5d} {os.path.relpath(f, REPO)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
