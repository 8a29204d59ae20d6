#!/usr/bin/env bash
# README's first command, run for real: install/quickstart.sh builds, installs
# the helper system-wide and shows a jailed tmux session. Its output must show
# what the README promises from inside the jail (the other tenant's home does
# not exist, /etc is read-only, ps sees only the jail, TTYD_SANDBOX=true).
# It runs with no syslog daemon, as on a container image or a minimal VM:
# the quickstart must start one and say so, or check fails and no demo runs.
# Root only; afterwards removes the demo tenants and groups if it was the one
# to create them, puts back whether rsyslogd ran, and puts back an install
# already on the host as it was (install_guard.bash; the last check compares
# every path).
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
# Whether a syslog daemon ran before (tests/run.sh starts rsyslogd).
syslog_before=$(pgrep -x rsyslogd || true)
stop_rsyslogd() {
  local p
  for p in $(pgrep -x rsyslogd); do kill "$p"; done
  for _ in $(seq 50); do pgrep -x rsyslogd >/dev/null || return 0; sleep 0.1; done
  echo "quickstart_demo: rsyslogd did not stop" >&2; return 1
}
cleaned=0
cleanup() {
  [ "$cleaned" = 0 ] || return 0
  cleaned=1
  if [ -n "$syslog_before" ]; then
    pgrep -x rsyslogd >/dev/null || rsyslogd
  elif [ ! -d /run/systemd/system ]; then
    stop_rsyslogd || true
  fi
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

# No syslog daemon (where no systemd manages /dev/log): stopped for the run.
no_syslog=
if [ ! -d /run/systemd/system ]; then stop_rsyslogd; no_syslog=1; fi

log_size=$(stat -c %s /var/log/auth.log 2>/dev/null || echo 0)
rc=0
"$repo/install/quickstart.sh" >"$work/out.txt" 2>&1 || rc=$?
out=$work/out.txt
check "quickstart.sh exits 0" "[ $rc = 0 ]"
if [ -n "$no_syslog" ]; then
  check "with no syslog daemon, the quickstart says it started rsyslogd" \
    "grep -Eq '^started rsyslogd \(pid [0-9]+\): audit lines go to /var/log/auth.log' '$out'"
  check "rsyslogd runs after the quickstart" "pgrep -x rsyslogd >/dev/null"
else
  echo "note: systemd manages /dev/log here; the no-syslog case is not run"
fi
check "check finds the audit log's sink" "grep -q '^audit log: ok (syslog at /dev/log' '$out'"
check "the demo's launch is in the audit log" \
  "tail -c +\$((log_size + 1)) /var/log/auth.log | grep -q 'tenant=clihost-demo1 session=demo decision=allow'"
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
