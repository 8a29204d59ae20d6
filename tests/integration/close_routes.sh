#!/usr/bin/env bash
# clihost-jail-close-routes (install/close-routes.sh) does what its man page
# (install/man/clihost-jail-close-routes.8) says: the tenant in cron.deny and
# at.deny once however often it runs, new deny files 0644 root:root and
# 0640 root:daemon, lingering off, an allow-file entry and a missing account
# reported with exit 1 (the other names still handled), a login shell
# reported, exit 2 without root or without a name. Root only; the host's
# deny/allow files and linger entries are put back as they were
# (install_guard.bash, compared at the end).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "close_routes: needs root" >&2; exit 1; }
# shellcheck source=install_guard.bash
. "$repo/tests/integration/install_guard.bash"
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

script=$repo/install/close-routes.sh
work=$(mktemp -d)
chmod 755 "$work"
t1=ctjcr$$ t2=ctjcs$$
GUARD_PATHS=(etc/cron.deny etc/at.deny etc/cron.allow etc/at.allow "var/lib/systemd/linger/$t1")
GUARD_NO_MANIFEST=1
guard_begin "$work"
cleaned=0
cleanup() {
  [ "$cleaned" = 0 ] || return 0
  cleaned=1
  userdel "$t1" >/dev/null 2>&1 || true
  userdel "$t2" >/dev/null 2>&1 || true
  guard_restore
}
trap 'cleanup; rm -rf "$work"' EXIT
rm -f /etc/cron.deny /etc/at.deny /etc/cron.allow /etc/at.allow
useradd -M -s /usr/sbin/nologin "$t1"
useradd -M -s /bin/bash "$t2"
run() { rc=0; "$@" >"$work/out" 2>&1 || rc=$?; }

run runuser -u nobody -- sh "$script" "$t1"
check "not root: exit 2, says so" "[ $rc = 2 ] && grep -qx 'clihost-jail-close-routes: run as root' '$work/out'"
run sh "$script"
check "no name: exit 2, usage" "[ $rc = 2 ] && grep -q '^usage: clihost-jail-close-routes TENANT' '$work/out'"

mkdir -p /var/lib/systemd/linger && touch "/var/lib/systemd/linger/$t1"
run sh "$script" "$t1"
check "a tenant: exit 0, nothing said" "[ $rc = 0 ] && [ ! -s '$work/out' ]"
check "new cron.deny: the tenant, 0644 root:root" \
  "[ \"\$(cat /etc/cron.deny)\" = '$t1' ] && [ \"\$(stat -c '%a %U:%G' /etc/cron.deny)\" = '644 root:root' ]"
check "new at.deny: the tenant, 0640 root:daemon" \
  "[ \"\$(cat /etc/at.deny)\" = '$t1' ] && [ \"\$(stat -c '%a %U:%G' /etc/at.deny)\" = '640 root:daemon' ]"
check "lingering disabled" "[ ! -e '/var/lib/systemd/linger/$t1' ]"
run sh "$script" "$t1"
check "again: exit 0, each file still names the tenant once" \
  "[ $rc = 0 ] && [ \"\$(cat /etc/cron.deny)\" = '$t1' ] && [ \"\$(cat /etc/at.deny)\" = '$t1' ]"

run sh "$script" nosuchuser$$ "$t2"
check "a missing account: exit 1, named, the other name still handled" \
  "[ $rc = 1 ] && grep -qx 'clihost-jail-close-routes: no such user: nosuchuser$$' '$work/out' && grep -qx '$t2' /etc/cron.deny"
check "a login shell is reported" "grep -q \"^clihost-jail-close-routes: $t2 has login shell '/bin/bash'\" '$work/out'"

printf '%s\n' "$t1" >/etc/cron.allow
run sh "$script" "$t1"
check "listed in cron.allow: exit 1, said, left there" \
  "[ $rc = 1 ] && grep -qx 'clihost-jail-close-routes: $t1 is listed in /etc/cron.allow: remove it there' '$work/out' && [ \"\$(cat /etc/cron.allow)\" = '$t1' ]"

cleanup
if guard_verify >"$work/guard.txt"; then ok "$(cat "$work/guard.txt")"; else bad "$(cat "$work/guard.txt")"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
