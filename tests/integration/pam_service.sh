#!/bin/bash
# Integration test of pam/clihost-jail (root only; creates and deletes users).
# Checks: account refusals the helper relies on (expired account, forced
# password change, root as tenant, nologin), that pam_authenticate always
# fails, that the helper's exact sequence (pam_sequence.py mirrors
# helper/priv/pam_session.cpp call for call) succeeds both as root and in the
# setuid state (real uid = proxy user, euid 0), loginuid is set to the tenant,
# and ~/.pam_environment is ignored. Uses a private copy of the service file
# (pam_start_confdir); pamtester uses a temporary service name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
service_file=$here/../../pam/clihost-jail
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }

need=()
command -v pamtester >/dev/null || need+=(pamtester)
command -v python3 >/dev/null || need+=(python3)
[ -e /lib/x86_64-linux-gnu/security/pam_unix.so ] || [ -e /usr/lib/x86_64-linux-gnu/security/pam_unix.so ] || need+=(libpam-modules)
if [ ${#need[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

tenant=cjpamt$$
caller=cjpamc$$
confdir=$(mktemp -d)
cleanup() {
    userdel -r "$tenant" >/dev/null 2>&1 || true
    userdel "$caller" >/dev/null 2>&1 || true
    rm -rf "$confdir"
}
trap cleanup EXIT
cp "$service_file" "$confdir/clihost-jail"
useradd -m -s /bin/bash "$tenant"
useradd -M -s /usr/sbin/nologin "$caller"
tenant_uid=$(id -u "$tenant")

pass=0 fail=0
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "ok   $1";
    else fail=$((fail + 1)); echo "FAIL $1: expected [$2], got [$3]"; fi
}
# run the helper's PAM sequence, print one field of the JSON result
seq_field() { # seq_field FIELD TENANT [--caller-uid N]
    local field=$1; shift
    python3 "$here/pam_sequence.py" "$confdir" clihost-jail "$@" |
        python3 -c 'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print("" if v is None else v)' "$field"
}

# No per-user service manager: pam_systemd would make logind start an
# unjailed user@UID.service for the tenant (SECURITY.md, "Routes around the
# jail"). Only comment lines of the shipped service may name it; the control
# shows the grep sees a module line when there is one.
active_systemd() { grep -Ev '^[[:space:]]*(#|$)' "$1" | grep -c 'pam_systemd' || true; }
check "no pam_systemd line in the shipped service" 0 "$(active_systemd "$service_file")"
printf -- '-session optional pam_systemd.so\n' | cat "$service_file" - >"$confdir/with-systemd"
check "control: a pam_systemd line would be seen" 1 "$(active_systemd "$confdir/with-systemd")"
rm -f "$confdir/with-systemd"

# pamtester (real uid 0) has no confdir option: install the file under a
# private service name, so a clihost-jail service that is installed (or being
# installed by another test) is never touched.
test_service=clihost-jail-test-$$
cp "$service_file" "/etc/pam.d/$test_service"
trap 'rm -f "/etc/pam.d/$test_service"; cleanup' EXIT
out=$(pamtester "$test_service" "$tenant" acct_mgmt setcred open_session close_session 2>&1) && rc=0 || rc=$?
check "pamtester acct_mgmt/setcred/open/close_session" 0 "$rc"
pamtester "$test_service" "$tenant" authenticate </dev/null >/dev/null 2>&1 && rc=0 || rc=$?
check "pamtester authenticate is refused" 1 "$rc"

# 6 = PAM_PERM_DENIED, 7 = PAM_AUTH_ERR, 12 = PAM_NEW_AUTHTOK_REQD, 13 = PAM_ACCT_EXPIRED
check "authenticate always fails (PAM_PERM_DENIED)" 6 "$(seq_field authenticate "$tenant")"
check "root sequence: open_session" 0 "$(seq_field open_session "$tenant")"
check "root sequence: delete_cred" 0 "$(seq_field delete_cred "$tenant")"
check "setuid state: close_session" 0 "$(seq_field close_session "$tenant" --caller-uid "$(id -u "$caller")")"
check "setuid state: real uid stays the caller" "$(id -u "$caller")" "$(seq_field ruid "$tenant" --caller-uid "$(id -u "$caller")")"
check "setuid state: PAM_RUSER is the caller's name" "$caller" "$(seq_field ruser "$tenant" --caller-uid "$(id -u "$caller")")"
check "setuid state: credentials deleted" 0 "$(seq_field delete_cred "$tenant" --caller-uid "$(id -u "$caller")")"
if [ -w /proc/self/loginuid ]; then
    check "loginuid is the tenant" "$tenant_uid" "$(seq_field loginuid "$tenant" --caller-uid "$(id -u "$caller")")"
fi
check "root is never a tenant" 7 "$(seq_field acct_mgmt root)"

# user_readenv=0: a tenant-controlled ~/.pam_environment must not reach the session.
printf 'LD_PRELOAD DEFAULT=/tmp/evil.so\nCJ_INJECT DEFAULT=1\n' > "/home/$tenant/.pam_environment"
has_inject() { grep -q CJ_INJECT <<<"$(seq_field env "$tenant")" && echo present || echo absent; }
check "~/.pam_environment ignored" absent "$(has_inject)"
# Control: the same stack with user_readenv=1 does see it, so the check above can fail.
sed -i 's/user_readenv=0/user_readenv=1/' "$confdir/clihost-jail"
check "control: user_readenv=1 would read it" present "$(has_inject)"
cp "$service_file" "$confdir/clihost-jail"

# Locked password ("!", passwd -l) is NOT refused by pam_unix account: documented behaviour.
usermod -L "$tenant"
check "locked password is not an account refusal (documented)" 0 "$(seq_field acct_mgmt "$tenant")"
usermod -U "$tenant" >/dev/null 2>&1 || true

chage -d 0 "$tenant"
check "forced password change refused (NEW_AUTHTOK_REQD)" 12 "$(seq_field acct_mgmt "$tenant")"
chage -d "$(date +%F)" "$tenant"

usermod -e 1 "$tenant"
check "expired account refused (ACCT_EXPIRED)" 13 "$(seq_field acct_mgmt "$tenant")"
usermod -e '' "$tenant"
check "account usable again after un-expiring" 0 "$(seq_field acct_mgmt "$tenant")"

# pam_nologin: pointed at a private file (file=) in the private copy, so the
# host's /etc/nologin is never created (it would block every login meanwhile).
echo "clihost-jail test" > "$confdir/nologin"
sed -i "s|pam_nologin.so|pam_nologin.so file=$confdir/nologin|" "$confdir/clihost-jail"
rc=$(seq_field acct_mgmt "$tenant")
check "nologin file refuses new sessions" refused "$([ "$rc" != 0 ] && echo refused || echo "allowed ($rc)")"
cp "$service_file" "$confdir/clihost-jail"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
