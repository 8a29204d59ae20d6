#!/usr/bin/env python3
"""A stand-in for ttyd (no Debian package): accepts ttyd's options as the
proxy passes them, then does what ttyd does with its command: runs it as the
session leader of a new pseudo-terminal and serves the master side. Here the
"browser" is a file: everything the terminal prints is appended to
terminal.log beside this script (the proxy gives ttyd a fixed environment). Exits when the command exits; SIGTERM closes the master (the
browser went away), which hangs the terminal up."""
import os
import pty
import signal
import sys

args = sys.argv[1:]
while args and args[0].startswith("-"):
    opt = args.pop(0)
    if opt in ("--port", "-p", "--interface", "-i"):
        args.pop(0)
if not args:
    sys.exit("fake_ttyd: no command")
log = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "terminal.log"), "ab", buffering=0)
pid, master = pty.fork()
if pid == 0:
    # ttyd's default terminal type (its -T option) for the command it runs
    os.execve(args[0], args, {**os.environ, "TERM": "xterm-256color"})
signal.signal(signal.SIGTERM, lambda *_: os.close(master))
while True:
    try:
        data = os.read(master, 4096)
    except OSError:
        break
    if not data:
        break
    log.write(data)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
