#!/usr/bin/env python3
"""Every Python file under tests/ names only what exists: pyflakes' findings
that fail at run time (an undefined name, a name used before it is bound,
an import that cannot be star-resolved) fail this check. A suite that moved
a helper to another module once lost a constant with it, and the NameError
showed only in the one test that used it, in CI (ctest unit.python_names).
Style findings (unused imports, f-strings without placeholders) are not
its business."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FATAL = ("undefined name", "referenced before assignment", "may be undefined, or defined from star imports",
         "syntax error", "invalid syntax", "unexpected indent")


def fatal_findings(paths):
    r = subprocess.run([sys.executable, "-m", "pyflakes", *paths], capture_output=True, text=True)
    if "No module named pyflakes" in r.stderr:
        raise SystemExit("python_names: pyflakes is missing (Debian: python3-pyflakes, which tests/run.sh installs)")
    return [l for l in (r.stdout + r.stderr).splitlines() if any(f in l for f in FATAL)]


def main():
    # Control: the check finds the NameError it exists for.
    with tempfile.NamedTemporaryFile("w", suffix=".py") as probe:
        probe.write("import os\n\n\ndef f():\n    return os.sep * ROUNDS\n")
        probe.flush()
        if not any("undefined name 'ROUNDS'" in l for l in fatal_findings([probe.name])):
            print("python_names: the control (an undefined name) was not found; the check sees nothing")
            return 1
    files = []
    for root, _dirs, names in os.walk(HERE):
        files += [os.path.join(root, n) for n in names if n.endswith(".py")]
    found = fatal_findings(sorted(files))
    for line in found:
        print(line)
    print(f"python_names: {len(files)} files, {len(found)} names that fail at run time")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
