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
    lines = host.audit_lines(f"session={s}", want=4)
    assert any(f"caller={PROXY}" in l and "action=kill" in l and "decision=allow" in l for l in lines), lines
