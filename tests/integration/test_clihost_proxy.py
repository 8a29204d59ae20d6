"""The clihost proxy's exact calls (install/clihost/proxy_example.py), made
by the proxy user against the installed setuid helper, with the stand-in
ttyd (fake_ttyd.py) serving the terminal on its UNIX socket in the proxy's
0700 socket directory: the proxy connects over that socket (HTTP and the
websocket), a terminal opens as the tenant in the jail, the browser goes
away (the websocket closes) and the session lives on (`list`), ttyd is
restarted and a new connection reattaches to the same screen, and
delete_terminal stops ttyd, removes its socket and ends the session and with
it the session jail; stop then finds nothing left."""
import json
import os
import pwd
import shutil
import textwrap

from conftest import PROXY, REPO, new_session

DRIVER = textwrap.dedent("""
    import json, os, sys, time
    sys.dont_write_bytecode = True
    sys.path.insert(0, sys.argv[1])
    import proxy_example as px
    helper, ttyd, user, session, sockdir = sys.argv[2:7]
    result = {}
    first = px.launch_terminal(user, session, helper=helper, ttyd=ttyd, socket_dir=sockdir)
    result["socket"] = first.socket_path
    result["listening"] = px.wait_listening(first, first.socket_path)
    st = os.lstat(first.socket_path)
    result["socket_stat"] = [(st.st_mode & 0o170000) == 0o140000,
                             st.st_uid, st.st_gid, st.st_mode & 0o7777]
    result["http"] = px.http_get(first.socket_path, "/")[0]
    t = px.TerminalConnection(first.socket_path)
    result["prompt"] = t.wait_for(user + "@", 20)
    t.send_input("echo one-$((6*7))\\r")
    result["typed"] = t.wait_for("one-42", 10)
    # The browser tab closes: ttyd hangs up that connection's attach jail.
    t.close()
    result["listed"] = px.list_sessions(helper=helper, user=user)
    # The proxy restarts: its ttyd ends (and removes its socket), a new one
    # serves the same session.
    first.terminate()
    result["first_exit"] = first.wait(15)
    result["socket_after_ttyd_exit"] = os.path.lexists(first.socket_path)
    second = px.launch_terminal(user, session, helper=helper, ttyd=ttyd, socket_dir=sockdir)
    result["listening2"] = px.wait_listening(second, second.socket_path)
    t2 = px.TerminalConnection(second.socket_path)
    # tmux redraws the session's screen on reattach: the earlier output is there.
    result["reattached"] = t2.wait_for("one-42", 20)
    t2.send_input("echo two-$((6*7)) $(id -un)\\r")
    result["typed2"] = t2.wait_for("two-42 " + user, 10)
    result["shown"] = bytes(t2.output).decode(errors="replace")
    result["kill"] = px.delete_terminal(second, user, session, helper=helper, socket_dir=sockdir)
    result["second_exit"] = second.returncode
    result["socket_after_delete"] = os.path.lexists(second.socket_path)
    result["kill_again"] = px.kill_session(user, session, helper=helper)
    result["stop"] = px.stop_tenant(user, helper=helper)
    print(json.dumps(result))
""")


def test_proxy_example_drives_the_real_helper(host, alice):
    s = new_session()
    work = os.path.join(host.prefix, "proxy-" + s)
    os.makedirs(work)
    ttyd = os.path.join(work, "ttyd")
    shutil.copy(os.path.join(REPO, "tests", "integration", "fake_ttyd.py"), ttyd)
    os.chmod(ttyd, 0o755)
    os.chmod(work, 0o755)
    driver = os.path.join(work, "driver.py")
    with open(driver, "w") as f:
        f.write(DRIVER)
    # The socket directory as tmpfiles.d makes it (`d /run/clihost 0700
    # clihost clihost -`), under a name of the tests' own.
    sockdir = f"/run/ctj-clihost-{s}"
    proxy = pwd.getpwnam(PROXY)
    os.mkdir(sockdir, 0o700)
    os.chown(sockdir, proxy.pw_uid, proxy.pw_gid)
    try:
        env = {"PATH": "/usr/bin:/bin"}
        r = host.run_as(PROXY, ["/usr/bin/python3", driver, os.path.join(REPO, "install", "clihost"),
                                host.bin, ttyd, alice, s, sockdir], env=env, timeout=120)
        assert r.returncode == 0, r
        res = json.loads(r.stdout)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    assert res["socket"] == f"{sockdir}/{alice}@{s}.sock"
    assert res["listening"] and res["listening2"], res
    # ttyd's -U PROXY:GROUP: the socket is the proxy's, 0660.
    assert res["socket_stat"] == [True, proxy.pw_uid, proxy.pw_gid, 0o660], res
    assert res["http"] == 200
    assert res["prompt"] and res["typed"], res
    assert res["listed"] == {alice: [s]}, res
    assert res["first_exit"] == 0, r.stderr
    assert res["socket_after_ttyd_exit"] is False
    assert res["reattached"] and res["typed2"], res["shown"]
    assert res["kill"] == [True, "session ended"], res
    assert res["second_exit"] == 0, r.stderr
    assert res["socket_after_delete"] is False
    ok, message = res["kill_again"]
    assert not ok and message == f"refused by policy: clihost-jail: tenant {alice} has no session jail", message
    assert res["stop"] == [True, f"{alice}: no session jail was running"], res
    # The reattached terminal shows the tenant's prompt, inside tmux.
    assert f"{alice}@" in res["shown"]
    assert host.wait_gone(alice)
    killed = lambda l: f"caller={PROXY}" in l and "action=kill" in l and "decision=allow" in l
    lines = host.audit_lines(f"session={s}", want=4, until=killed)
    assert any(killed(l) for l in lines), lines


RECONNECT_DRIVER = textwrap.dedent("""
    import json, sys, time
    sys.dont_write_bytecode = True
    sys.path.insert(0, sys.argv[1])
    import proxy_example as px
    helper, ttyd, user, session, sockdir, seconds = sys.argv[2:8]
    p = px.launch_terminal(user, session, helper=helper, ttyd=ttyd, socket_dir=sockdir)
    assert px.wait_listening(p, p.socket_path)
    starts, codes, shown = [], [], ""
    t0 = time.monotonic()
    # ttyd's page: whenever the close code is not 1000 it reconnects at once.
    while time.monotonic() - t0 < float(seconds):
        starts.append(round(time.monotonic() - t0, 2))
        c = px.TerminalConnection(p.socket_path)
        codes.append(c.wait_closed(60))
        shown = bytes(c.output).decode(errors="replace")
        c.close()
        if codes[-1] == 1000:
            break
    px.stop_terminal(p)
    print(json.dumps({"starts": starts, "codes": codes, "shown": shown}))
""")


def reconnect_for(host, tenant, seconds, work, sockdir, s):
    driver = os.path.join(work, "reconnect.py")
    with open(driver, "w") as f:
        f.write(RECONNECT_DRIVER)
    ttyd = os.path.join(work, "ttyd")
    r = host.run_as(PROXY, ["/usr/bin/python3", driver, os.path.join(REPO, "install", "clihost"), host.bin, ttyd,
                            tenant, s, sockdir, str(seconds)], env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def test_a_refused_tenants_reconnecting_page_makes_only_a_handful_of_runs(host, bob, terms):
    """A tenant whose account expired, its tab open: ttyd's page reconnects
    at once after every refusal. With the refusal delay (1 s doubling, per
    tenant) 10 s of it make at most five setuid runs and as many audit
    lines; the control (the delay off) makes a storm."""
    import time
    from ptyutil import attach, shell_ready
    from conftest import BASE_CONFIG, RUNTIME_DIR, TEST_CONFIG, log_lines, sh
    s = new_session()
    work = os.path.join(host.prefix, "reconnect-" + s)
    os.makedirs(work)
    os.chmod(work, 0o755)
    shutil.copy(os.path.join(REPO, "tests", "integration", "fake_ttyd.py"), os.path.join(work, "ttyd"))
    os.chmod(os.path.join(work, "ttyd"), 0o755)
    sockdir = f"/run/ctj-clihost-{s}"
    proxy = pwd.getpwnam(PROXY)
    os.mkdir(sockdir, 0o700)
    os.chown(sockdir, proxy.pw_uid, proxy.pw_gid)
    record = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(bob).pw_uid}.refused")
    if os.path.exists(record):
        os.unlink(record)

    def denials(since):
        return log_lines(lambda l: f"session={s}" in l and "decision=deny" in l and l[:19] >= since,
                         want=0, timeout=1.0)

    sh("usermod", "-e", "1", bob)
    try:
        # Control: the delay off, 3 s of reconnects make a storm.
        since = time.strftime("%Y-%m-%dT%H:%M:%S")
        storm = reconnect_for(host, bob, 3, work, sockdir, s)
        assert len(storm["starts"]) >= 10, storm["starts"]
        assert "clihost-jail: " in storm["shown"] and "PAM" in storm["shown"], storm["shown"]
        # On (the default): 10 s of the same page.
        host._write(TEST_CONFIG, BASE_CONFIG.replace("refusal_delay_max = 0\n", ""))
        time.sleep(1.1)  # whole seconds: the log's timestamps
        since = time.strftime("%Y-%m-%dT%H:%M:%S")
        calm = reconnect_for(host, bob, 10, work, sockdir, s)
        runs = len(calm["starts"])
        assert 3 <= runs <= 5, calm["starts"]
        assert all(c != 1000 for c in calm["codes"]), calm
        # Each refused run waited: 1, 2, 4 ... s between the connections.
        gaps = [b - a for a, b in zip(calm["starts"], calm["starts"][1:])]
        assert all(g >= w * 0.9 for g, w in zip(gaps, [1, 2, 4, 8])), gaps
        assert len(denials(since)) == runs, denials(since)
        st = os.stat(record)
        assert (st.st_uid, st.st_mode & 0o7777) == (0, 0o600)
        # A success resets it: the account valid again, one attach, no record.
        sh("usermod", "-e", "", bob)
        t = attach(host, bob, s, terms)
        assert shell_ready(t), t.output()
        assert not os.path.exists(record)
    finally:
        sh("usermod", "-e", "", bob)
        host._write(TEST_CONFIG, BASE_CONFIG)
        host.stop_all()
        shutil.rmtree(sockdir, ignore_errors=True)
