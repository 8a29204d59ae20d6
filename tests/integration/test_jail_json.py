"""A tenant can tell what its jail allows, and that it runs with earlier
settings (issue 41, item 2).

1. /run/clihost-jail/jail.json in the session jail says what the jail runs
   with (nested_sandbox, network, the limits, every setting as `list`
   names it, its start) and, when nested_sandbox is off, bwrap's message;
   the tenant cannot write it (refused, with the reason), while the same
   write to a file of its own succeeds (the control).
2. After the operator changes the config file while the session jail runs,
   the next attach shows one line naming the setting and what applies it,
   on the terminal as ttyd's pty gets it (tmux's status line, until a key
   is pressed: so it is waited for before the first key), and jail.json's
   `changed` names it. The control: an attach without a change shows no such line, and
   `changed` is empty.
Each attach is a real pseudo-terminal, as ttyd drives the helper.
"""
import json
import os
import pwd
import re

from conftest import RUNTIME_DIR, new_session
from ptyutil import shell_ready
from test_agent_needs import in_session_jail, list_line, root_attach

INFO = "/run/clihost-jail/jail.json"
ALT_SCREEN = "\x1b[?1049h"  # a tmux client has attached
NOTICE = "clihost-jail: settings changed (nested_sandbox); the operator's stop applies them"


def jail_json(host, tenant):
    return json.loads(in_session_jail(host, tenant, f"cat {INFO}"))


def recorded_settings(tenant):
    """The settings the supervisor recorded at its start (UID.settings)."""
    path = os.path.join(RUNTIME_DIR, f"{pwd.getpwnam(tenant).pw_uid}.settings")
    lines = open(path).read().splitlines()[1:]
    return dict(line.split(" ", 1) if " " in line else (line, "") for line in lines)


def set_in_place(host, conf, key, value):
    """The operator edits the file the session jail started from."""
    text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", open(conf).read())
    assert f"{key} = {value}\n" in text
    host._write(conf, text)


def test_jail_json_says_what_the_jail_runs_with_and_the_tenant_cannot_write_it(host, alice, terms):
    conf = host.config_variant(replace={"jail": {"nested_sandbox": "false"},
                                        "limits": {"tasks_max": "512", "memory_max": "2G"}})
    t = root_attach(host, alice, new_session(), conf, terms)
    assert shell_ready(t), t.output()
    info = jail_json(host, alice)
    assert info["format"] == 1
    assert info["nested_sandbox"] is False
    assert info["limits"]["tasks_max"] == "512" and info["limits"]["memory_max"] == "2G", info
    # Every setting is the one the jail started with, as `list` compares them.
    assert info["settings"] == recorded_settings(alice), info
    assert info["network"] == info["settings"]["network"]
    assert info["changed"] == []
    started = re.search(r" started=(\S+) ", list_line(host, alice, conf)).group(1)
    assert info["started"] == started
    assert any("nested_sandbox is false" in n and "No space left on device" in n for n in info["notes"]), info

    # Read-only for the tenant, with the reasons; the same writes to a file
    # and directory of its own succeed (the probe works).
    out = in_session_jail(host, alice, f"""
        echo forged >> {INFO} || echo APPEND-REFUSED
        rm -f {INFO} || echo RM-REFUSED
        touch /run/clihost-jail/other || echo TOUCH-REFUSED
        mkdir -p /tmp/ctj-own && echo x > /tmp/ctj-own/jail.json && echo y >> /tmp/ctj-own/jail.json &&
            rm /tmp/ctj-own/jail.json && echo CONTROL-WRITABLE""")
    assert f"{INFO}: Permission denied\nAPPEND-REFUSED\n" in out, out
    assert f"rm: cannot remove '{INFO}': Read-only file system\nRM-REFUSED\n" in out, out
    assert "touch: cannot touch '/run/clihost-jail/other': Read-only file system\nTOUCH-REFUSED\n" in out, out
    assert "CONTROL-WRITABLE" in out, out
    assert jail_json(host, alice) == info


def test_a_config_change_is_named_on_the_next_attach_and_in_jail_json(host, alice, terms):
    conf = host.config_variant(replace={"jail": {"nested_sandbox": "false"}})
    s1 = new_session()
    first = root_attach(host, alice, s1, conf, terms)
    assert shell_ready(first), first.output()
    assert "settings changed" not in first.output()
    set_in_place(host, conf, "nested_sandbox", "true")
    # A new attach, to a new session and to the one already open.
    for session in (new_session(), s1):
        t = root_attach(host, alice, session, conf, terms)
        # Before the first key: the line shows until a key is pressed.
        assert t.wait_for(NOTICE, 15), t.output()
        assert shell_ready(t), t.output()
    info = jail_json(host, alice)
    assert info["changed"] == ["nested_sandbox"], info
    assert info["nested_sandbox"] is False  # the jail still runs with its own
    assert " changed=nested_sandbox sessions=" in list_line(host, alice, conf)


def test_without_a_change_an_attach_says_nothing_of_settings(host, alice, terms):
    conf = host.config_variant(replace={"jail": {"nested_sandbox": "false"}})
    first = root_attach(host, alice, new_session(), conf, terms)
    assert shell_ready(first), first.output()
    second = root_attach(host, alice, new_session(), conf, terms)
    # Attached (tmux's alternate screen), then no line before the first key.
    assert second.wait_for(ALT_SCREEN, 15), second.output()
    assert not second.wait_for("settings changed", 3), second.output()
    assert shell_ready(second), second.output()
    assert jail_json(host, alice)["changed"] == []
