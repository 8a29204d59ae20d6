"""A bounded fork bomb for the tasks_max tests (test_limits.py, in a jail on
this host; test_containers.py, in a jail inside a container).

FORKS is a Python program passed with `python3 -c` (a jail sees /usr and
the tenant's home, not this directory). It has no single quote, so it can
sit inside '...' in a shell command line.

argv: N WHERE [wait]. Forks N children that sleep 20 s (a failed fork is
counted, not fatal and not retried, unlike dash's and bash's), writes how
many forks worked to WHERE (-: stdout), then, with "wait", keeps its
children while the test looks (they end after 20 s, or with the jail)."""

FORKS = """
import os, sys, time
kids = 0
for _ in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    kids += 1
if sys.argv[2] == "-":
    print(kids, end="", flush=True)
else:
    with open(sys.argv[2], "w") as f:
        f.write(str(kids))
if sys.argv[3:] == ["wait"]:
    time.sleep(20)
"""
assert "'" not in FORKS
