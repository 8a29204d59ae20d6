#!/usr/bin/env python3
"""tests/architecture_size.py: docs/ARCHITECTURE.md stays short enough to
read whole: at most LIMIT lines (issue 39). The process table, each
program's privileged sequence and why it is built so belong there; the
command line and the configuration are README's and the man pages', each
guarantee's functions and tests SECURITY.md's. The control: a document one
line over the limit is reported. Run by ctest (unit.architecture_size)."""
import os
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIMIT = 250


def too_long(text):
    n = len(text.splitlines())
    return f"{n} lines, more than {LIMIT}" if n > LIMIT else None


def main():
    if not too_long("x\n" * (LIMIT + 1)):
        print("architecture_size: FAIL (the control: a document over the limit was not reported)")
        return 1
    text = open(os.path.join(REPO, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    why = too_long(text)
    print(f"architecture_size: {'FAIL: docs/ARCHITECTURE.md has ' + why if why else 'ok'} "
          f"({len(text.splitlines())} of {LIMIT} lines)")
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
