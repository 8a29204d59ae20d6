#!/usr/bin/env python3
"""tests/architecture_refs.py: every `file.cpp:name` (or `file.hpp:name`,
`file.cpp:Class::name`) that docs/ARCHITECTURE.md names exists: the file
in one of helper/'s group folders, and `name(` in it. So the document's
process table, privileged sequences and enforcement table cannot name a
function the code no longer has. The control: a made-up reference is
reported. Exits 1 with one line per missing reference. Run by ctest
(unit.architecture_refs)."""
import glob
import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REF = re.compile(r"\b(\w+\.(?:cpp|hpp)):(\w+(?:::\w+)*)")
PLACEHOLDERS = {("file.cpp", "function"), ("file.cpp", "name")}  # the document's own notation


def missing(text):
    out = []
    for name, func in sorted(set(REF.findall(text))):
        if (name, func) in PLACEHOLDERS:
            continue
        files = glob.glob(os.path.join(REPO, "helper", "*", name))
        if not files:
            out.append(f"{name}:{func}: no helper/*/{name}")
            continue
        last = func.split("::")[-1]
        if not any(re.search(rf"\b{re.escape(last)}\(", open(f, encoding="utf-8").read()) for f in files):
            out.append(f"{name}:{func}: no {last}( in {', '.join(os.path.relpath(f, REPO) for f in files)}")
    return out


def main():
    text = open(os.path.join(REPO, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    if not missing("`launch.cpp:no_such_function_here`"):
        print("architecture_refs: FAIL (the control: a made-up reference was not reported)")
        return 1
    problems = missing(text)
    for p in problems:
        print(f"architecture_refs: {p}")
    count = len(set(REF.findall(text)))
    print(f"architecture_refs: {'FAIL' if problems else 'ok'} ({count} references, {len(problems)} missing)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
