#!/usr/bin/env bash
# The .deb's maintainer scripts (install/debian/{prerm,postinst,postrm}) as
# dpkg runs them on a systemd host, each command they call a stub that
# records it, in a mount namespace of the test's own (a tmpfs over /run with
# /run/systemd/system, over /etc/ssh, over /usr/libexec): nothing of the host
# is touched, and a host without systemd tests the systemd branch too.
# - prerm remove stops every running session jail (`clihost-jail stop --user
#   TENANT` for each record), saying so; prerm upgrade stops none;
# - postinst reloads the host-address rules (one nft transaction), never
#   restarts them (a restart's stop deletes the table, which ends every
#   running isolated jail);
# - postinst and postrm are quiet on a host without sshd: no "Failed to
#   reload-or-try-restart ssh.service" (systemctl is-active decides first).
# Root only (unshare -m).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" != 0 ]; then echo "maintainer_scripts: needs root (unshare -m)" >&2; exit 1; fi
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
cp "$top"/install/debian/{prerm,postinst,postrm} "$work/"
mkdir "$work/bin"
log=$work/calls.log
for cmd in deb-systemd-invoke deb-systemd-helper systemctl getent groupadd dpkg-statoverride nft install mkdir; do
  cat >"$work/bin/$cmd" <<EOF
#!/bin/sh
echo "$cmd \$*" >>"$log"
case "$cmd \$*" in
  # A host without sshd: systemd knows no ssh.service.
  "systemctl --quiet is-active ssh.service") exit 4 ;;
  "deb-systemd-invoke "*ssh.service*) echo "Failed to \$1 ssh.service: Unit ssh.service not found." >&2; exit 1 ;;
  "dpkg-statoverride --list"*) exit 0 ;;
esac
exit 0
EOF
  chmod 0755 "$work/bin/$cmd"
done

fails=0
check() {
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1" >&2; fails=$((fails + 1)); fi
}

# Everything below runs in the private mount namespace.
unshare -m --propagation private bash -euo pipefail -c '
work=$1
mount -t tmpfs tmpfs /run
mkdir -p /run/systemd/system /run/clihost-jail
mount -t tmpfs tmpfs /etc/ssh
mkdir -p /etc/ssh/sshd_config.d
touch /etc/ssh/sshd_config.d/clihost-jail.conf
mount -t tmpfs tmpfs /usr/libexec
mkdir -p /usr/libexec/clihost-jail
printf "#!/bin/sh\necho \"helper \$*\" >>%s\n" "$work/calls.log" >/usr/libexec/clihost-jail/clihost-jail
chmod 0755 /usr/libexec/clihost-jail/clihost-jail
# A running session jail of ctj-alice, and one of ctj-bob (their records).
echo "v3 ctj-alice 1001 4242 77 boot 0 1001.sock" >/run/clihost-jail/1001.state
echo "v3 ctj-bob 1002 4343 78 boot 0 1002.sock" >/run/clihost-jail/1002.state
export PATH=$work/bin:/usr/bin:/bin
: >"$work/calls.log"
sh "$work/prerm" upgrade 2.0 >"$work/prerm-upgrade.out" 2>"$work/prerm-upgrade.err"
cp "$work/calls.log" "$work/calls-upgrade.log"; : >"$work/calls.log"
sh "$work/prerm" remove >"$work/prerm.out" 2>"$work/prerm.err"
cp "$work/calls.log" "$work/calls-prerm.log"; : >"$work/calls.log"
sh "$work/postinst" configure 1.0 >"$work/postinst.out" 2>"$work/postinst.err"
cp "$work/calls.log" "$work/calls-postinst.log"; : >"$work/calls.log"
sh "$work/postrm" remove >"$work/postrm.out" 2>"$work/postrm.err"
' _ "$work"

check "prerm upgrade stops no session jail and says nothing" \
  "! grep -q '^helper' '$work/calls-upgrade.log' && [ ! -s '$work/prerm-upgrade.err' ]"
check "prerm remove stops each running session jail by its tenant" \
  "grep -qx 'helper stop --user ctj-alice' '$work/calls-prerm.log' && grep -qx 'helper stop --user ctj-bob' '$work/calls-prerm.log'"
check "prerm remove says which session jails it stops" \
  "grep -qx 'clihost-jail: stopping the session jail of ctj-alice before removal' '$work/prerm.err'"
check "prerm stops the jails before the rules' unit" \
  "[ \"\$(grep -n 'helper stop' '$work/calls-prerm.log' | tail -n 1 | cut -d: -f1)\" -lt \"\$(grep -n 'deb-systemd-invoke stop clihost-jail-nft.service' '$work/calls-prerm.log' | cut -d: -f1)\" ]"
check "postinst reloads the rules' unit (never a restart, which deletes the table first)" \
  "grep -qx 'deb-systemd-invoke reload-or-restart clihost-jail-nft.service' '$work/calls-postinst.log' && ! grep -q 'deb-systemd-invoke restart' '$work/calls-postinst.log'"
check "postinst is quiet on a host without sshd" "! grep -q ssh.service '$work/postinst.err'"
check "postrm is quiet on a host without sshd" "! grep -q ssh.service '$work/postrm.err'"
# Positive control: the stub does print systemd's message when asked to
# reload a unit that does not exist (what the scripts once did).
check "control: the stub prints systemd's failure for ssh.service" \
  "said=\$(PATH='$work/bin' deb-systemd-invoke try-reload-or-restart ssh.service 2>&1 >/dev/null || true); [ \"\$said\" = 'Failed to try-reload-or-restart ssh.service: Unit ssh.service not found.' ]"
for f in "$work"/*.err; do [ -s "$f" ] && { echo "--- $f"; cat "$f"; }; done
[ "$fails" = 0 ]
