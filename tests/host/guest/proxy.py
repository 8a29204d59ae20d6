#!/usr/bin/python3
"""The VM test's stand-in for the clihost proxy, run by the operator guide's
unit (install/clihost/README.md: User=clihost, systemd's KillMode): one
connection to the tenant and session named in /run/ctj-vm/proxy.target, as
ttyd makes it (the helper on a new pseudo-terminal, through ptydrive), and,
as the restart's positive control, a process of the proxy's own."""
import os
import subprocess

W = "/run/ctj-vm"
HELPER = "/usr/libexec/clihost-jail/clihost-jail"
tenant, session = open(f"{W}/proxy.target").read().split()
control = subprocess.Popen(["/bin/sleep", "100000"], start_new_session=True)
with open(f"{W}/control.pid", "w") as f:
    f.write(str(control.pid))
os.environ["TERM"] = "xterm-256color"
os.execv("/usr/local/lib/ctj-vm/ptydrive", ["ptydrive", f"{W}/conn-proxy.log", f"{W}/type-proxy",
                                            HELPER, "run", "--user", tenant, "--session", session])
