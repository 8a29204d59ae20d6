"""The clihost proxy's exact calls (install/clihost/proxy_example.py), made
by the proxy user against the installed setuid helper, with a stand-in ttyd
serving a real pseudo-terminal: a terminal opens as the tenant in the jail,
the browser goes away (ttyd closes the pty) and the session lives on
(`list`), a second terminal reattaches to it, kill_session ends it and with
it the session jail, and stop then finds nothing left."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

from conftest import PROXY, REPO, new_session

DRIVER = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, sys.argv[1])
    import proxy_example as px
    helper, ttyd, user, session = sys.argv[2:6]
    first = px.launch_terminal(user, session, 7681, helper=helper, ttyd=ttyd)
    second = None
    deadline = time.time() + 15
    result = {}
    import subprocess
    sock = sys.argv[6]
    def has_session():
        return subprocess.run(["tmux", "-S", sock, "has-session", "-t", "=" + session],
                              capture_output=True).returncode == 0
    # the proxy user cannot look into the tenant's socket: poll via the log
    log = sys.argv[7]
    while time.time() < deadline and b"$" not in open(log, "rb").read():
        time.sleep(0.1)
    # The browser tab closes: ttyd hangs the terminal up.
    first.terminate()
    result["first_exit"] = first.wait(15)
    result["listed"] = px.list_sessions(helper=helper, user=user)
    open(log, "wb").close()
    second = px.launch_terminal(user, session, 7682, helper=helper, ttyd=ttyd)
    deadline = time.time() + 15
    while time.time() < deadline and b"$" not in open(log, "rb").read():
        time.sleep(0.1)
    time.sleep(0.5)
    result["kill"] = px.kill_session(user, session, helper=helper)
    result["second_exit"] = second.wait(15)
    result["kill_again"] = px.kill_session(user, session, helper=helper)
    result["stop"] = px.stop_tenant(user, helper=helper)
    print(json.dumps(result))
""")


def test_proxy_example_drives_the_real_helper(host, alice, tmp_path):
    s = new_session()
    work = os.path.join(host.prefix, "proxy-" + s)
    os.makedirs(work)
    ttyd = os.path.join(work, "ttyd")
    shutil.copy(os.path.join(REPO, "tests", "integration", "fake_ttyd.py"), ttyd)
    os.chmod(ttyd, 0o755)
    log = os.path.join(work, "terminal.log")
    open(log, "w").close()
    os.chmod(work, 0o777)
    os.chmod(log, 0o666)
    driver = os.path.join(work, "driver.py")
    with open(driver, "w") as f:
        f.write(DRIVER)
    sock = host.tmux_sock(alice)
    env = {"PATH": "/usr/bin:/bin"}
    r = host.run_as(PROXY, ["/usr/bin/python3", driver, os.path.join(REPO, "install", "clihost"),
                            host.bin, ttyd, alice, s, sock, log], env=env, timeout=90)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    shown = open(log, "rb").read().decode(errors="replace")
    assert res["first_exit"] is not None
    assert res["listed"] == {alice: [s]}, res
    assert res["kill"] == [True, "session ended"], shown
    assert res["second_exit"] == 0
    ok, message = res["kill_again"]
    assert not ok and message == f"refused by policy: clihost-jail: tenant {alice} has no session jail", message
    assert res["stop"] == [True, f"{alice}: no session jail was running"], res
    shown = open(log, "rb").read().decode(errors="replace")
    # The reattached terminal shows the tenant's prompt, inside tmux.
    assert f"{alice}@" in shown
    assert host.wait_gone(alice)
    lines = host.audit_lines(f"session={s}", want=4)
    assert any(f"caller={PROXY}" in l and "action=kill" in l and "decision=allow" in l for l in lines), lines
