#!/usr/bin/env bash
# README's first command, run for real: install/quickstart.sh builds, installs
# the helper system-wide and shows a jailed tmux session. Its output must show
# what the README promises from inside the jail (the other tenant's home does
# not exist, /etc is read-only, ps sees only the jail, TTYD_SANDBOX=true).
# Root only; afterwards removes the demo tenants and groups if it was the one
# to create them, and puts back an install already on the host as it was
# (install_guard.bash; the last check compares every path).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "quickstart_demo: needs root" >&2; exit 1; }
# shellcheck source=install_guard.bash
. "$repo/tests/integration/install_guard.bash"
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

work=$(mktemp -d)
guard_begin "$work"
sshd_dir_was_there=0
[ ! -e /run/sshd ] || sshd_dir_was_there=1
new_users=() new_groups=()
for u in clihost-demo1 clihost-demo2; do id "$u" >/dev/null 2>&1 || new_users+=("$u"); done
for g in clihost clihost-tenants; do getent group "$g" >/dev/null || new_groups+=("$g"); done
cleaned=0
cleanup() {
  [ "$cleaned" = 0 ] || return 0
  cleaned=1
  pkill -KILL -u clihost-demo1 >/dev/null 2>&1 || true
  for u in "${new_users[@]}"; do userdel -r -f "$u" >/dev/null 2>&1 || true; done
  for g in "${new_groups[@]}"; do groupdel "$g" >/dev/null 2>&1 || true; done
  guard_restore
  [ "$sshd_dir_was_there" = 1 ] || rmdir /run/sshd 2>/dev/null || true
}
trap 'cleanup; rm -rf "$work"' EXIT
# The demo installs the repo's example policy only where none exists: start
# from none, as on a fresh machine (the backup above brings any back).
rm -rf /etc/clihost-jail

rc=0
"$repo/install/quickstart.sh" >"$work/out.txt" 2>&1 || rc=$?
out=$work/out.txt
check "quickstart.sh exits 0" "[ $rc = 0 ]"
helper=/usr/libexec/clihost-jail/clihost-jail
check "the helper is installed 4750 root:clihost" "[ \"\$(stat -c '%a %U:%G' $helper)\" = '4750 root:clihost' ]"
check "check says a jail can start" "grep -q '^result: a jail can start' '$out'"
# No route around the jail for a quickstart tenant (SECURITY.md).
check "check says every route is closed" "grep -qx 'routes around the jail: all closed' '$out'"
for r in sshd 'login shell' cron at linger pam_systemd forward; do
  check "route $r is ok" "grep -q '^route $r (clihost-demo1): ok' '$out'"
done
check "demo tenants have nologin as login shell" \
  "[ \"\$(getent passwd clihost-demo1 | cut -d: -f7)\" = /usr/sbin/nologin ] && [ \"\$(getent passwd clihost-demo2 | cut -d: -f7)\" = /usr/sbin/nologin ]"
check "the policy's [jail] shell is on" "grep -qx 'shell = /usr/bin/bash' /etc/clihost-jail/jail.conf"
check "inside: the shell is bash, not the login shell" "grep -q '^TTYD_SANDBOX=true SHELL=/usr/bin/bash' '$out'"
check "inside: TTYD_SANDBOX=true" "grep -q '^TTYD_SANDBOX=true' '$out'"
check "inside: the other tenant's home does not exist" \
  "grep -q \"cannot access '/home/clihost-demo2': No such file or directory\" '$out'"
check "inside: /etc is read-only" "grep -q \"cannot touch '/etc/demo': Read-only file system\" '$out'"
check "inside: ls /home shows only the tenant's own" \
  "grep -qx 'clihost-demo1' '$out' && ! grep -q 'clihost-demo2\$' <(grep -v cannot '$out')"
# ps ax inside: the jail's pid 1 (bwrap), tmux and the shell, nothing of the host.
# (Only ps's own lines: check's report above names sshd and cron too.)
grep -E '^ +[0-9]+ +(pts/[0-9]+|\?) ' "$out" >"$work/ps.txt" || true
check "inside: ps sees only the jail" \
  "grep -Eq '^ +1 .*bwrap' '$work/ps.txt' && ! grep -Eq 'rsyslogd|sshd|cron|/sbin/init' '$work/ps.txt'"
check "inside: runs as the tenant" "grep -q 'uid=[0-9]*(clihost-demo1)' '$out'"
check "/etc/demo was not created on the host" "[ ! -e /etc/demo ]"
check "the demo session was killed" \
  "! runuser -u clihost-demo1 -- tmux -S /home/clihost-demo1/.cache/tmux/clihost.sock has-session -t =demo 2>/dev/null"
[ "$fail" = 0 ] || { echo "--- quickstart output"; cat "$out"; }

cleanup
if guard_verify >"$work/guard.txt"; then ok "$(cat "$work/guard.txt")"; else bad "$(cat "$work/guard.txt")"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
