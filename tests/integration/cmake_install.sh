#!/usr/bin/env bash
# `cmake --install` as an operator runs it (into a DESTDIR here, so the host
# stays untouched): the helper lands in libexec as root:clihost mode 4750, the
# PAM service and man pages where man and PAM look, the example policy is
# installed once and an operator's edited policy survives a re-install.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "cmake_install: needs root" >&2; exit 1; }
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

work=$(mktemp -d)
made_group=0
cleanup() {
  rm -rf "$work"
  if [ "$made_group" = 1 ]; then groupdel clihost >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
# The install rule chowns to the proxy group; on a fresh host the package's
# postinst or quickstart creates it, here the test does (and removes it).
if ! getent group clihost >/dev/null; then groupadd --system clihost; made_group=1; fi

# The build quickstart.sh makes, in its directory and with its options: the
# quickstart's test (quickstart_demo, after this one) then builds nothing.
build=$repo/build/release
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DCLIHOST_JAIL_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
root=$work/root
DESTDIR=$root cmake --install "$build" >"$work/install1.log"

bin=$root/usr/libexec/clihost-jail/clihost-jail
check "helper installed in libexec" "[ -x '$bin' ]"
check "helper is root:clihost" "[ \"\$(stat -c %U:%G '$bin')\" = root:clihost ]"
check "helper is mode 4750 (setuid, only the proxy group may exec)" "[ \"\$(stat -c %a '$bin')\" = 4750 ]"
check "installed helper runs" "'$bin' --version | grep '^clihost-jail ' >/dev/null"
stub=$root/usr/libexec/clihost-jail/clihost-jail-attach
check "the attach stub is root's 0755, no setuid bit, where the helper looks for it" \
  "[ \"\$(stat -c '%U:%G %a' '$stub')\" = 'root:root 755' ] && grep -q /usr/libexec/clihost-jail/clihost-jail-attach '$bin'"
sup=$root/usr/libexec/clihost-jail/clihost-jail-supervisor
check "the supervisor program is root's 0700, no setuid bit, where the helper execs it" \
  "[ \"\$(stat -c '%U:%G %a' '$sup')\" = 'root:root 700' ] && grep -q /usr/libexec/clihost-jail/clihost-jail-supervisor '$bin'"
admin=$root/usr/libexec/clihost-jail/clihost-jail-admin
check "the admin program (check, print) is root's 0755, no setuid bit, where the helper execs it" \
  "[ \"\$(stat -c '%U:%G %a' '$admin')\" = 'root:root 755' ] && grep -q /usr/libexec/clihost-jail/clihost-jail-admin '$bin'"
check "PAM service is the repo's, mode 644" \
  "cmp -s '$root/etc/pam.d/clihost-jail' '$repo/pam/clihost-jail' && [ \"\$(stat -c %a '$root/etc/pam.d/clihost-jail')\" = 644 ]"
check "example policy installed, mode 644" \
  "cmp -s '$root/etc/clihost-jail/jail.conf' '$repo/install/jail.conf' && [ \"\$(stat -c %a '$root/etc/clihost-jail/jail.conf')\" = 644 ]"
# Man pages gzip -9n, as Debian policy 12.1 wants them (the .deb is made
# from this install).
check "clihost-jail(8) installed" "[ -f '$root/usr/share/man/man8/clihost-jail.8.gz' ]"
check "clihost-jail.conf(5) installed" "[ -f '$root/usr/share/man/man5/clihost-jail.conf.5.gz' ]"
check "clihost-jail-close-routes(8) installed" "[ -f '$root/usr/share/man/man8/clihost-jail-close-routes.8.gz' ]"
check "no uncompressed page installed" "[ -z \"\$(find '$root/usr/share/man' -type f ! -name '*.gz')\" ]"
# Each installed page is titled (.TH) and named (NAME) as its file, so that
# `man clihost-jail.conf` and whatis find what the page says it is.
man=$root/usr/share/man
for page in man8/clihost-jail.8 man5/clihost-jail.conf.5 man8/clihost-jail-close-routes.8; do
  base=${page#*/} f=$man/$page.gz
  name=${base%.*} sect=${base##*.}
  th=$(zcat "$f" 2>/dev/null | sed -nE 's/^\.TH +([^ ]+) +([^ ]+).*/\1 \2/p' | sed 's/\\-/-/g')
  nm=$(zcat "$f" 2>/dev/null | sed -n '/^\.SH NAME/{n;p;q}' | sed -E 's/\\-/-/g; s/\\%//g; s/ +- .*//')
  check "$base: .TH is $name $sect (got: $th)" "[ '$th' = '${name^^} $sect' ]"
  check "$base: NAME is $name (got: $nm)" "[ '$nm' = '$name' ]"
done
# Every cross reference to a page of this package (.BR name (N), any name
# containing "jail") names a page that is installed: no jail.conf(5).
refs=$(zcat "$man"/man8/*.8.gz "$man"/man5/*.5.gz 2>/dev/null \
  | sed -nE 's/^\.BR +(\\%)?([a-z\\.-]*jail[a-z\\.-]*) +\(([0-9])\).*/\2 \3/p' | sed 's/\\-/-/g' | sort -u)
dangling=""
while read -r name sect; do
  if [ -n "$name" ] && [ ! -f "$man/man$sect/$name.$sect.gz" ]; then dangling+=" $name($sect)"; fi
done <<<"$refs"
check "cross references resolve to installed pages ($(tr '\n' ' ' <<<"$refs"| sed 's/ $//'); dangling:${dangling:- none})" \
  "[ -n \"\$refs\" ] && [ -z '$dangling' ]"
# Routes around the jail: the sshd drop-in where sshd includes it (and a
# pristine copy for the .deb's postinst), the per-tenant closer on PATH.
check "sshd drop-in installed, mode 644, denies the tenant group" \
  "cmp -s '$root/etc/ssh/sshd_config.d/clihost-jail.conf' '$repo/install/sshd_config.d/clihost-jail.conf' && [ \"\$(stat -c %a '$root/etc/ssh/sshd_config.d/clihost-jail.conf')\" = 644 ] && grep -qx 'DenyGroups clihost-tenants' '$root/etc/ssh/sshd_config.d/clihost-jail.conf'"
check "pristine sshd drop-in in /usr/share/clihost-jail" \
  "cmp -s '$root/usr/share/clihost-jail/sshd_config.d/clihost-jail.conf' '$repo/install/sshd_config.d/clihost-jail.conf'"
check "clihost-jail-close-routes installed executable" "[ -x '$root/usr/sbin/clihost-jail-close-routes' ]"
# network = isolated: the host-address rules (the path the helper's messages
# name) and the unit that loads them at boot.
check "host-address rules in /usr/share/clihost-jail" \
  "cmp -s '$root/usr/share/clihost-jail/clihost-jail.nft' '$repo/install/nftables/clihost-jail.nft'"
check "the rules parse (nft -c)" "nft -c -f '$root/usr/share/clihost-jail/clihost-jail.nft'"
check "their unit loads exactly that file" \
  "grep -qx 'ExecStart=/usr/sbin/nft -f /usr/share/clihost-jail/clihost-jail.nft' '$root/usr/lib/systemd/system/clihost-jail-nft.service'"
check "the tenants' slice unit installed (systemd's transient scopes go in it)" \
  "cmp -s '$root/usr/lib/systemd/system/clihost-jail.slice' '$repo/install/systemd/clihost-jail.slice'"
check "the installed PAM service loads no pam_systemd" "! grep -Ev '^[[:space:]]*(#|\$)' '$root/etc/pam.d/clihost-jail' | grep pam_systemd >/dev/null"
check "sudoers drop-in shipped as an example" "[ -f '$root/usr/share/doc/clihost-jail/examples/sudoers.d/clihost-jail' ]"
# install/clihost/README.md ("Docker / Dokku") points operators there.
check "the Docker seccomp script and Dockerfile shipped as examples" \
  "cmp -s '$root/usr/share/doc/clihost-jail/examples/clihost/seccomp_allow_userns.py' '$repo/install/clihost/seccomp_allow_userns.py' && cmp -s '$root/usr/share/doc/clihost-jail/examples/clihost/Dockerfile' '$repo/install/clihost/Dockerfile'"

check "Debian's copyright, changelog.Debian.gz and lintian overrides installed" \
  "cmp -s '$root/usr/share/doc/clihost-jail/copyright' '$repo/install/debian/copyright' && zcat '$root/usr/share/doc/clihost-jail/changelog.Debian.gz' | cmp -s - '$repo/install/debian/changelog' && cmp -s '$root/usr/share/lintian/overrides/clihost-jail' '$repo/install/debian/lintian-overrides'"
# The packaging tests keep an existing install aside and put it back
# (install_guard.bash): every installed file must lie under a path they guard.
# shellcheck source=install_guard.bash
. "$repo/tests/integration/install_guard.bash"
unguarded=""
while IFS= read -r f; do
  rel=${f#"$root"/} covered=0
  for g in "${GUARD_PATHS[@]}"; do
    if [ "$rel" = "$g" ] || [[ "$rel" == "$g"/* ]]; then covered=1; break; fi
  done
  [ "$covered" = 1 ] || unguarded+=" /$rel"
done < <(find "$root" ! -type d)
check "every installed file is under a path install_guard.bash keeps (not:${unguarded:- none})" "[ -z '$unguarded' ]"
# An older install's uncompressed page does not stay beside the new one.
echo old >"$root/usr/share/man/man8/clihost-jail.8"

# The operator edits the policy; a re-install (upgrade) must keep it.
printf '[jail]\nproc = private-or-hidepid\n' >"$root/etc/clihost-jail/jail.conf"
DESTDIR=$root cmake --install "$build" >"$work/install2.log"
check "an edited policy survives a re-install" "grep -q 'private-or-hidepid' '$root/etc/clihost-jail/jail.conf'"
check "the re-install says it kept the policy" "grep -q 'Keeping existing' '$work/install2.log'"
check "the re-install removes an older install's uncompressed page" "[ ! -e '$root/usr/share/man/man8/clihost-jail.8' ]"
check "the helper is still 4750 after a re-install" "[ \"\$(stat -c %a '$bin')\" = 4750 ]"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
