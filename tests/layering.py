#!/usr/bin/env python3
"""tests/layering.py: helper/ is grouped by what each part may do, and each
group includes only from itself and the groups before it:

  base    the vocabulary every part uses (Result, descriptors, logging, bounded reads)
  decide  pure decisions: no system calls (cli, config, identity rules, the plan)
  host    facts and state on the host (trusted paths, accounts, probes' reads, records)
  priv    privilege transitions (sanitise, drop, PAM, seccomp)
  proc    the process model (trials, the jail starter, supervisor, network)
  verbs   what main dispatches to (commands, check, main)

and one program of its own, outside the core:

  stub    the attach stub (clihost-jail-attach), run in the jail as the
          tenant: it includes no file of any group but base's fd_pass,
          unique_fd and handed (libc only; the stub is built with fd_pass.cpp
          and handed.cpp)

Checked here, so that the layout stays the architecture:
  - every `#include "group/file.hpp"` names an existing file of the same or a lower group;
  - a file of decide/ includes no system header but the few that only
    declare types and constants (it makes no system call);
  - no file is longer than 400 lines unless a `// Size:` line near its top
    says why.
Exits 1 with one line per violation. Run by ctest (analysis.layering)."""
import os
import re
import sys

LAYERS = ["base", "decide", "host", "priv", "proc", "verbs"]
# Groups that are programs of their own: they include no group's file.
APART = ["stub"]
APART_MAY_INCLUDE = {"base/fd_pass.hpp", "base/unique_fd.hpp", "base/handed.hpp"}
# Headers of types and constants only: decide/ may name uid_t or a mode bit.
DECIDE_SYSTEM_HEADERS = {"sys/types.h", "sys/stat.h", "linux/filter.h", "getopt.h"}  # getopt: a libc parser
MAX_LINES = 400
GENERATED = {"version.hpp": "base"}  # configured into the build directory


def main():
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helper")
    problems = []
    stray = [f for f in os.listdir(top) if os.path.isfile(os.path.join(top, f))]
    for f in stray:
        problems.append(f"helper/{f}: not in a group folder ({', '.join(LAYERS)})")
    for d in sorted(os.listdir(top)):
        if os.path.isdir(os.path.join(top, d)) and d not in LAYERS + APART:
            problems.append(f"helper/{d}/: unknown group (known: {', '.join(LAYERS)})")
    for rank, layer in enumerate(LAYERS + APART):
        folder = os.path.join(top, layer)
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if not re.search(r"\.(cpp|hpp)$", name):
                continue
            rel = f"helper/{layer}/{name}"
            lines = open(os.path.join(folder, name), encoding="utf-8").read().splitlines()
            for no, line in enumerate(lines, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if m:
                    inc = m.group(1)
                    group = GENERATED.get(inc) or (inc.split("/", 1)[0] if "/" in inc else None)
                    if layer in APART and inc in APART_MAY_INCLUDE:
                        continue
                    if layer in APART:
                        problems.append(f"{rel}:{no}: {layer}/ is a program of its own, but includes \"{inc}\"")
                    elif group not in LAYERS:
                        problems.append(f"{rel}:{no}: includes \"{inc}\", which is in no group")
                    elif LAYERS.index(group) > rank:
                        problems.append(f"{rel}:{no}: {layer} includes \"{inc}\" from {group}, a group above it")
                    elif inc not in GENERATED and not os.path.isfile(os.path.join(top, inc)):
                        problems.append(f"{rel}:{no}: includes \"{inc}\", which does not exist")
                    continue
                m = re.match(r"\s*#\s*include\s+<([^>]+)>", line)
                if m and layer == "decide" and m.group(1).endswith(".h") and m.group(1) not in DECIDE_SYSTEM_HEADERS:
                    problems.append(f"{rel}:{no}: decide/ is pure, but includes the system header <{m.group(1)}>")
            if len(lines) > MAX_LINES and not any(l.startswith("// Size:") for l in lines[:30]):
                problems.append(f"{rel}: {len(lines)} lines, over {MAX_LINES}, and no '// Size:' line at its top says why")
    for p in problems:
        print(f"layering: {p}")
    print(f"layering: {'FAIL' if problems else 'ok'} ({len(problems)} problems)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
