#!/usr/bin/env python3
"""tests/architecture_refs.py: docs/ARCHITECTURE.md and SECURITY.md's
guarantee table stay true to the tree. Four checks, each with a control
(a made-up mistake is reported):
  - every `file.cpp:name` (or `file.hpp:name`, `file.cpp:Class::name`) that
    docs/ARCHITECTURE.md or SECURITY.md's guarantee table ("enforced by")
    names exists: the file in one of helper/'s group folders, and `name(`
    in it;
  - every guarantee row of SECURITY.md's table names what enforces it (a
    function; for the build and the example proxy, a file or a symbol):
    the one table from guarantee to function (ARCHITECTURE.md has none);
  - ARCHITECTURE.md's table of libraries lists exactly the .cpp files of
    helper/, each in the library CMakeLists.txt puts it in;
  - every test file cited in helper/, docs/, install/, README.md and
    SECURITY.md (`test_*.py`, `*_test.cpp`) exists under tests/, and a
    `file.py::test_name` names a function of that file.
Exits 1 with one line per problem. Run by ctest (unit.architecture_refs);
the size of ARCHITECTURE.md is tests/architecture_size.py's."""
import glob
import os
import re
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REF = re.compile(r"\b(\w+\.(?:cpp|hpp)):(\w+(?:::\w+)*)")
PLACEHOLDERS = {("file.cpp", "function"), ("file.cpp", "name")}  # the documents' own notation
TABLE_HEAD = "| # | guarantee | enforced by | tests |"
LIBRARY_HEAD = "| library | linked into | its files (`.cpp`) |"
CITED = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*(?:test_\w+\.py|\w+_test\.cpp))(?:::(\w+))?")


def read(*path):
    return open(os.path.join(REPO, *path), encoding="utf-8").read()


def missing_refs(text):
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


def table_rows(text, head):
    """The rows of the markdown table under `head` (None: no such table)."""
    if head not in text:
        return None
    rows = []
    for line in text.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return rows


def guarantee_problems(security):
    rows = table_rows(security, TABLE_HEAD)
    if rows is None:
        return [f"SECURITY.md: no guarantee table headed {TABLE_HEAD}"], ""
    # A function, or (the build, the example proxy) a named file or symbol.
    out = [f"SECURITY.md row {r[0]}: names no function that enforces it" for r in rows
           if len(r) < 4 or not (REF.search(r[2]) or re.search(r"`[\w./-]+`", r[2]))]
    return out, "\n".join(r[2] for r in rows if len(r) >= 4)


def cmake_libraries(cmake):
    """{group/name: library} from CMakeLists.txt's source lists; the
    supervisor's library is every other file of the layers."""
    lib = {}
    for var, name in (("COMMON", "common"), ("FRONT", "front")):
        m = re.search(rf"set\(CLIHOST_JAIL_{var}_SOURCES\)\s*foreach\(f ([^)]*)\)", cmake)
        for f in (m.group(1).split() if m else []):
            lib[f] = name
    m = re.search(r"set\(CLIHOST_JAIL_ADMIN_SOURCES ([^)]*)\)", cmake)
    for f in re.findall(r"helper/(\w+/\w+)\.cpp", m.group(1) if m else ""):
        lib[f] = "admin"
    mains = re.search(r"set\(CLIHOST_JAIL_MAINS ([^)]*)\)", cmake)
    owner = {"main": "front", "supervisor_main": "supervisor", "admin_main": "admin"}
    for m in (mains.group(1).split() if mains else []):
        lib[f"verbs/{m}"] = owner.get(m, "?")
    for path in glob.glob(os.path.join(REPO, "helper", "*", "*.cpp")):
        rel = os.path.relpath(path, os.path.join(REPO, "helper"))[:-4]
        if rel.startswith("stub/"):
            lib[rel] = "none"
        lib.setdefault(rel, "supervisor")
    return lib


def documented_libraries(arch):
    rows = table_rows(arch, LIBRARY_HEAD)
    if rows is None:
        return None
    doc = {}
    for r in rows:
        for part in r[2].split(";"):
            group, _, names = part.strip().partition("/")
            for n in names.split(","):
                if n.strip():
                    # The stub's row also names the base files built into it.
                    if r[0] == "none" and group != "stub":
                        continue
                    doc[f"{group}/{n.strip()}"] = r[0]
    return doc


def layout_problems(arch, cmake):
    doc = documented_libraries(arch)
    if doc is None:
        return [f"docs/ARCHITECTURE.md: no table headed {LIBRARY_HEAD}"]
    want = cmake_libraries(cmake)
    out = []
    for f in sorted(set(want) | set(doc)):
        if f not in doc:
            out.append(f"helper/{f}.cpp: not in ARCHITECTURE.md's table of libraries (CMake: {want[f]})")
        elif f not in want:
            out.append(f"helper/{f}.cpp: named in ARCHITECTURE.md's table of libraries, not in the tree")
        elif doc[f] != want[f]:
            out.append(f"helper/{f}.cpp: ARCHITECTURE.md says library {doc[f]}, CMake {want[f]}")
    return out


def cited_test_problems(texts):
    tests = [os.path.relpath(p, os.path.join(REPO, "tests"))
             for p in glob.glob(os.path.join(REPO, "tests", "**", "*"), recursive=True)]
    out = []
    for where, text in texts:
        for m in CITED.finditer(text):
            cited, func = m.group(1), m.group(2)
            cited = cited[len("tests/"):] if cited.startswith("tests/") else cited
            found = [t for t in tests if t == cited or t.endswith("/" + cited)]
            if not found:
                out.append(f"{where}: cites {cited}, which is not under tests/")
            elif func and not any(re.search(rf"\bdef {func}\(|\b{func}\b", read("tests", t)) for t in found):
                out.append(f"{where}: cites {cited}::{func}, which is not in it")
    return out


def cited_texts():
    paths = ["README.md", "SECURITY.md"]
    for top in ("helper", "docs", "install"):
        for p in glob.glob(os.path.join(REPO, top, "**", "*"), recursive=True):
            if os.path.isfile(p) and not p.endswith((".gz", ".png")):
                paths.append(os.path.relpath(p, REPO))
    out = []
    for p in sorted(paths):
        try:
            out.append((p, read(p)))
        except UnicodeDecodeError:
            continue
    return out


def controls():
    """Each check reports a made-up mistake."""
    bad = []
    if not missing_refs("`launch.cpp:no_such_function_here`"):
        bad.append("a made-up function reference was not reported")
    if not guarantee_problems(f"{TABLE_HEAD}\n| --- | --- | --- | --- |\n| 1 | g | nothing | t |\n")[0]:
        bad.append("a guarantee row naming no function was not reported")
    fake = f"{LIBRARY_HEAD}\n| --- | --- | --- |\n| front | clihost-jail | proc/ front |\n"
    if not layout_problems(fake, read("CMakeLists.txt")):
        bad.append("a table of libraries missing files was not reported")
    if not cited_test_problems([("control", "see integration/test_no_such_suite.py")]):
        bad.append("a cited test file that does not exist was not reported")
    if not cited_test_problems([("control", "integration/test_owner.py::test_no_such_case")]):
        bad.append("a cited test that does not exist was not reported")
    return bad


def main():
    bad = controls()
    for b in bad:
        print(f"architecture_refs: FAIL (the control: {b})")
    if bad:
        return 1
    arch, security = read("docs", "ARCHITECTURE.md"), read("SECURITY.md")
    rows, enforced = guarantee_problems(security)
    problems = missing_refs(arch + "\n" + enforced) + rows + layout_problems(arch, read("CMakeLists.txt")) + \
        cited_test_problems(cited_texts())
    for p in problems:
        print(f"architecture_refs: {p}")
    count = len(set(REF.findall(arch + "\n" + enforced)))
    print(f"architecture_refs: {'FAIL' if problems else 'ok'} ({count} references, {len(problems)} problems)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
