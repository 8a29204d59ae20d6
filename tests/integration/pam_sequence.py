#!/usr/bin/env python3
"""Drive a PAM service exactly the way clihost-jail does, and print what happened.

The calls, items, flags and conversation are those of helper/priv/pam_session.cpp
(PamSession::open, environment, close), in its order:

  pam_start(SERVICE, TENANT, quiet conversation)
  pam_set_item(PAM_RUSER, the caller's name)      (PAM_TTY only with a terminal: none here)
  pam_acct_mgmt(PAM_SILENT)
  pam_setcred(PAM_ESTABLISH_CRED | PAM_SILENT)
  pam_open_session(PAM_SILENT)
  pam_getenvlist
  pam_close_session(PAM_SILENT)
  pam_setcred(PAM_DELETE_CRED | PAM_SILENT)
  pam_end(last return code)

with the helper's process state: an empty environment (sanitize_process
clears it before PAM runs) and, with --caller-uid, the setuid state (real uid
and groups the caller's, effective uid 0). The one deliberate difference is
pam_start_confdir, so a private copy of pam/clihost-jail is tested without
installing it into /etc/pam.d. Why not pamtester: it cannot set PAM_RUSER or
PAM_SILENT, call pam_setcred(PAM_DELETE_CRED) or read pam_getenvlist, and
cannot run in the setuid state.

"authenticate" is not part of the helper's sequence (the helper never calls
pam_authenticate); it is asked on a separate handle because the service must
refuse it to any other program that uses the service name.

usage: pam_sequence.py CONFDIR SERVICE TENANT [--caller-uid UID]
prints one JSON object: the return code of each step, the PAM environment and
/proc/self/loginuid after pam_open_session.
"""
import ctypes
import json
import os
import pwd
import sys
from ctypes import POINTER, c_char_p, c_int, c_void_p

PAM_SILENT = 0x8000
PAM_ESTABLISH_CRED = 0x0002
PAM_DELETE_CRED = 0x0004
PAM_RUSER = 8
PAM_SUCCESS = 0
PAM_BUF_ERR = 5
PAM_CONV_ERR = 19
PAM_MAX_NUM_MSG = 32
PAM_ERROR_MSG = 3
PAM_TEXT_INFO = 4


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", c_int), ("msg", c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", c_char_p), ("resp_retcode", c_int)]


class PamConv(ctypes.Structure):
    pass


CONV = ctypes.CFUNCTYPE(c_int, c_int, POINTER(POINTER(PamMessage)), POINTER(POINTER(PamResponse)), c_void_p)
PamConv._fields_ = [("conv", CONV), ("appdata_ptr", c_void_p)]
LIBC = ctypes.CDLL("libc.so.6")
LIBC.calloc.restype = c_void_p
LIBC.calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]


@CONV
def quiet_conversation(n, msgs, resp, _data):
    """The helper's quiet_conversation: messages go to stderr, any prompt is
    a conversation error, and an (empty) response array is still owed."""
    if n <= 0 or n > PAM_MAX_NUM_MSG:
        return PAM_CONV_ERR
    for i in range(n):
        m = msgs[i].contents
        if m.msg_style in (PAM_ERROR_MSG, PAM_TEXT_INFO):
            if m.msg:
                print(f"clihost-jail: pam: {m.msg.decode(errors='replace')}", file=sys.stderr)
            continue
        return PAM_CONV_ERR
    array = LIBC.calloc(n, ctypes.sizeof(PamResponse))
    if not array:
        return PAM_BUF_ERR
    resp[0] = ctypes.cast(array, POINTER(PamResponse))
    return PAM_SUCCESS


def enter_helper_state(caller_uid):
    """The process state in which the helper calls PAM."""
    os.environ.clear()  # unsetenv for each: the C environment is empty too, as after clearenv()
    if caller_uid is not None:
        # The setuid state: real ids and groups are the caller's, effective uid 0.
        pw = pwd.getpwuid(caller_uid)
        os.setgroups(os.getgrouplist(pw.pw_name, pw.pw_gid))
        os.setresgid(pw.pw_gid, pw.pw_gid, pw.pw_gid)
        os.setresuid(caller_uid, 0, 0)
    return pwd.getpwuid(os.getuid()).pw_name  # PAM_RUSER: the caller's name (root for root)


def main():
    confdir, service, tenant = sys.argv[1:4]
    caller_uid = None
    if len(sys.argv) == 6 and sys.argv[4] == "--caller-uid":
        caller_uid = int(sys.argv[5])
    ruser = enter_helper_state(caller_uid)

    pam = ctypes.CDLL("libpam.so.0")
    pam.pam_start_confdir.argtypes = [c_char_p, c_char_p, POINTER(PamConv), c_char_p, POINTER(c_void_p)]
    pam.pam_set_item.argtypes = [c_void_p, c_int, c_void_p]
    pam.pam_getenvlist.restype = POINTER(c_char_p)
    pam.pam_getenvlist.argtypes = [c_void_p]
    for name in ("pam_acct_mgmt", "pam_setcred", "pam_open_session", "pam_close_session", "pam_authenticate"):
        getattr(pam, name).argtypes = [c_void_p, c_int]
    pam.pam_end.argtypes = [c_void_p, c_int]

    conv = PamConv(quiet_conversation, None)
    out = {"ruid": os.getuid(), "euid": os.geteuid(), "ruser": ruser}

    # Not the helper's: pam_authenticate on a separate handle (see above).
    h2 = c_void_p()
    if pam.pam_start_confdir(service.encode(), tenant.encode(), ctypes.byref(conv), confdir.encode(),
                             ctypes.byref(h2)) == PAM_SUCCESS:
        out["authenticate"] = pam.pam_authenticate(h2, PAM_SILENT)
        pam.pam_end(h2, out["authenticate"])

    # The helper's sequence (pam_session.cpp).
    handle = c_void_p()
    out["start"] = rc = pam.pam_start_confdir(service.encode(), tenant.encode(), ctypes.byref(conv),
                                              confdir.encode(), ctypes.byref(handle))
    if rc != PAM_SUCCESS:
        print(json.dumps(out))
        return
    out["set_ruser"] = rc = pam.pam_set_item(handle, PAM_RUSER, c_char_p(ruser.encode()))
    if rc != PAM_SUCCESS:  # start_handle: pam_end with the failing code
        pam.pam_end(handle, rc)
        print(json.dumps(out))
        return
    out["acct_mgmt"] = rc = pam.pam_acct_mgmt(handle, PAM_SILENT)
    session_open = cred_established = False
    if rc == PAM_SUCCESS:
        out["setcred"] = rc = pam.pam_setcred(handle, PAM_ESTABLISH_CRED | PAM_SILENT)
        cred_established = rc == PAM_SUCCESS
    if rc == PAM_SUCCESS:
        out["open_session"] = rc = pam.pam_open_session(handle, PAM_SILENT)
        session_open = rc == PAM_SUCCESS
    if session_open:
        env = pam.pam_getenvlist(handle)
        out["env"] = []
        i = 0
        while env and env[i]:
            out["env"].append(env[i].decode())
            i += 1
        with open("/proc/self/loginuid") as f:
            out["loginuid"] = f.read().strip()
    # PamSession::close, which also runs (from the destructor) after a failed
    # step: close what is open, delete what was established, pam_end with the
    # first failure of these two.
    end_rc = PAM_SUCCESS
    if session_open:
        out["close_session"] = end_rc = pam.pam_close_session(handle, PAM_SILENT)
    if cred_established:
        out["delete_cred"] = rc2 = pam.pam_setcred(handle, PAM_DELETE_CRED | PAM_SILENT)
        if end_rc == PAM_SUCCESS:
            end_rc = rc2
    pam.pam_end(handle, end_rc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
