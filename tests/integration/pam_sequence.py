#!/usr/bin/env python3
"""Drive a PAM service exactly the way clihost-jail does, and print what happened.

Why not only pamtester: it cannot call pam_setcred(PAM_DELETE_CRED), cannot
read pam_getenvlist, and runs with real uid 0, whereas the setuid helper runs
with real uid = the proxy user and effective uid 0. This script uses libpam via
ctypes and pam_start_confdir, so it tests a copy of pam/clihost-jail without
installing it into /etc/pam.d.

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

PAM_ESTABLISH_CRED = 0x0002
PAM_DELETE_CRED = 0x0004
PAM_CONV_ERR = 19


class PamConv(ctypes.Structure):
    pass


# The helper is non-interactive: any prompt is answered with a conversation error.
CONV = ctypes.CFUNCTYPE(c_int, c_int, c_void_p, c_void_p, c_void_p)
PamConv._fields_ = [("conv", CONV), ("appdata_ptr", c_void_p)]


@CONV
def refuse_conversation(_n, _msg, _resp, _data):
    return PAM_CONV_ERR


def main():
    confdir, service, tenant = sys.argv[1:4]
    caller_uid = None
    if len(sys.argv) == 6 and sys.argv[4] == "--caller-uid":
        caller_uid = int(sys.argv[5])
    if caller_uid is not None:
        # The setuid-root state: real ids are the caller's, effective uid 0.
        gid = pwd.getpwuid(caller_uid).pw_gid
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(caller_uid, 0, 0)

    pam = ctypes.CDLL("libpam.so.0")
    pam.pam_start_confdir.argtypes = [c_char_p, c_char_p, POINTER(PamConv), c_char_p, POINTER(c_void_p)]
    pam.pam_getenvlist.restype = POINTER(c_char_p)
    pam.pam_getenvlist.argtypes = [c_void_p]
    for name in ("pam_acct_mgmt", "pam_setcred", "pam_open_session", "pam_close_session", "pam_authenticate"):
        getattr(pam, name).argtypes = [c_void_p, c_int]
    pam.pam_end.argtypes = [c_void_p, c_int]

    conv = PamConv(refuse_conversation, None)
    handle = c_void_p()
    out = {"ruid": os.getuid(), "euid": os.geteuid()}
    out["start"] = pam.pam_start_confdir(service.encode(), tenant.encode(), ctypes.byref(conv),
                                         confdir.encode(), ctypes.byref(handle))
    if out["start"] != 0:
        print(json.dumps(out))
        return
    # pam_authenticate on a separate handle: the helper never calls it, and the
    # service must make it fail for everybody.
    h2 = c_void_p()
    pam.pam_start_confdir(service.encode(), tenant.encode(), ctypes.byref(conv), confdir.encode(), ctypes.byref(h2))
    out["authenticate"] = pam.pam_authenticate(h2, 0)
    pam.pam_end(h2, 0)

    # The helper's order (as util-linux su): acct_mgmt, setcred, open_session.
    out["acct_mgmt"] = rc = pam.pam_acct_mgmt(handle, 0)
    if rc == 0:
        out["setcred"] = rc = pam.pam_setcred(handle, PAM_ESTABLISH_CRED)
    if rc == 0:
        out["open_session"] = rc = pam.pam_open_session(handle, 0)
    if rc == 0:
        env = pam.pam_getenvlist(handle)
        out["env"] = []
        i = 0
        while env and env[i]:
            out["env"].append(env[i].decode())
            i += 1
        with open("/proc/self/loginuid") as f:
            out["loginuid"] = f.read().strip()
        out["close_session"] = pam.pam_close_session(handle, 0)
        out["delete_cred"] = pam.pam_setcred(handle, PAM_DELETE_CRED)
    pam.pam_end(handle, rc)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
