#!/usr/bin/env bash
# The Debian package, installed for real: cpack -G DEB from a Release build
# with prefix /usr (cpack refuses any other), lintian (Debian 12's) finds no
# error and no warning but the overrides, each with its reason; dpkg -i
# creates the groups and the 4750 root:clihost helper (statoverride), the
# sshd drop-in that refuses tenants is installed, `clihost-jail check` passes
# for a tenant created as the README says (nologin, close-routes), dpkg -r
# keeps the conffiles but removes the sshd drop-in (and a re-install brings
# it back), dpkg -P removes them, the statoverride and the unit's state.
# Root only. An install already on the host (the quickstart's: README's order
# is quickstart, then tests) is as it was afterwards, byte for byte with its
# modes and owners: install_guard.bash keeps it aside and puts it back, and
# the last check compares every path with its state before the test.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "deb_package: needs root" >&2; exit 1; }
command -v dpkg-deb >/dev/null
# shellcheck source=install_guard.bash
. "$repo/tests/integration/install_guard.bash"
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# An installed package (or its conffiles) would be removed and purged by this
# test, and its .deb is not here to bring it back: refuse, touching nothing.
if dpkg-query -W -f='${db:Status-Abbrev}' clihost-jail 2>/dev/null | grep -q '^[^u]'; then
  echo "deb_package: the clihost-jail package is installed on this host (or its conffiles are: dpkg -l clihost-jail); this test installs, removes and purges its own build: refusing" >&2
  exit 1
fi
# lintian: Debian 12's, as a packager runs it (set-up, like the other packages).
command -v lintian >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lintian >/dev/null

work=$(mktemp -d)
tenant=ctjdeb$$
guard_begin "$work"
sshd_dir_was_there=0
[ ! -e /run/sshd ] || sshd_dir_was_there=1
# The host-address rules (tests/run.sh loads them): taken away before the
# install so that only postinst can have loaded them, put back afterwards.
rules_were_loaded=0
if nft list table inet clihost_jail >/dev/null 2>&1; then rules_were_loaded=1; fi
cleaned=0
cleanup() {
  [ "$cleaned" = 0 ] || return 0
  cleaned=1
  dpkg -P clihost-jail >/dev/null 2>&1 || true
  userdel -r "$tenant" >/dev/null 2>&1 || true
  guard_restore
  [ "$sshd_dir_was_there" = 1 ] || rmdir /run/sshd 2>/dev/null || true
  if [ "$rules_were_loaded" = 1 ]; then
    nft -f "$repo/install/nftables/clihost-jail.nft" || echo "deb_package: could not reload the host-address rules" >&2
  else
    nft delete table inet clihost_jail >/dev/null 2>&1 || true
  fi
}
trap 'cleanup; rm -rf "$work"' EXIT

# The guard's positive control: on a scratch tree, a changed byte, mode,
# owner, link target, a file gone and a file added are each named.
ctl=$work/ctl
mkdir -p "$ctl/d/sub" && echo a >"$ctl/d/f" && echo b >"$ctl/d/sub/g" && echo c >"$ctl/d/h" && ln -s f "$ctl/d/l"
echo x >"$ctl/e"
guard_snapshot "$ctl" d e gone >"$work/ctl.before"
echo A >"$ctl/d/f"; chmod 600 "$ctl/d/sub/g"; chown 1:1 "$ctl/d/h"; ln -sfn g "$ctl/d/l"; rm "$ctl/e"; echo n >"$ctl/gone"
guard_snapshot "$ctl" d e gone >"$work/ctl.after"
check "the guard names every changed path (control: d/f d/h d/l d/sub/g e gone)" \
  "[ \"\$(guard_diff '$work/ctl.before' '$work/ctl.after' | cut -f1 | tr '\n' ' ')\" = 'd/f d/h d/l d/sub/g e gone ' ]"
check "the guard finds an unchanged tree unchanged" \
  "[ -z \"\$(guard_diff '$work/ctl.after' <(guard_snapshot '$ctl' d e gone))\" ]"

# A packager's build: Release, warnings not fatal (the default); cpack refuses
# any other build type (install/debian/cpack_release_only.cmake). DEB_BUILD_DIR
# names a build directory of this repository to configure, build and package
# in (a developer's re-run) instead of a fresh one.
bdir=${DEB_BUILD_DIR:-$work/build}
deb=$("$repo/tests/tools/build_deb.sh" "$bdir")
check "package builds" "[ -f '$deb' ]"
# Packaging reads the build type and the prefix before it builds or installs anything.
cmake -S "$repo" -B "$work/rwd" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLIHOST_JAIL_TESTS=OFF >/dev/null
check "cpack refuses a build that is not Release" \
  "! (cd '$work/rwd' && cpack -G DEB >'$work/rwd.log' 2>&1) && grep -q 'the package is made from a Release build' '$work/rwd.log' && ! ls '$work'/rwd/*.deb >/dev/null 2>&1"
cmake -S "$repo" -B "$work/local" -DCMAKE_BUILD_TYPE=Release -DCLIHOST_JAIL_TESTS=OFF >/dev/null
check "cpack refuses a build without -DCMAKE_INSTALL_PREFIX=/usr (PAM and sshd would not read PREFIX/etc)" \
  "! (cd '$work/local' && cpack -G DEB >'$work/local.log' 2>&1) && [ \"\$(tr -s '\\n ' '  ' <'$work/local.log' | grep -o \"the package is made with Debian's paths ([^)]*)\")\" = \"the package is made with Debian's paths (this build's prefix is '/usr/local', its sysconfdir '/usr/local/etc')\" ] && ! ls '$work'/local/*.deb >/dev/null 2>&1"

# Debian's own judge, once (about 15 s). With --show-overrides, lintian's exit
# status counts the overridden tags too: the verdict is read from its tags.
# It warns when run as root; that line is not about the package.
lintian --show-overrides "$deb" >"$work/lintian.out" 2>&1 || true
grep -v '^running with root privileges is not recommended!$' "$work/lintian.out" >"$work/lintian.txt" || true
check "lintian: no error, no warning (overrides aside)" "! grep -E '^[EW]: ' '$work/lintian.txt' >/dev/null"
grep -E '^[EW]: ' "$work/lintian.txt" || true
# Each override states its reason: a comment opens the block it belongs to.
overrides=$repo/install/debian/lintian-overrides
check "every lintian override has a comment giving its reason" \
  "awk '/^#/ { why = 1; next } /^[[:space:]]*\$/ { why = 0; next } !why { print; bad = 1 } END { exit bad }' '$overrides'"
check "lintian ran and used each override (it still finds what each overrides)" \
  "[ \"\$(grep -Ev '^[[:space:]]*(#|\$)' '$overrides' | LC_ALL=C sort)\" = \"\$(sed -n 's/^O: //p' '$work/lintian.txt' | LC_ALL=C sort)\" ]"
# (Read whole: a grep -q that quits early kills dpkg-deb with SIGPIPE.)
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/contents.txt"
check "man pages, copyright and changelog.Debian are shipped, compressed as Debian wants" \
  "[ \"\$(grep -Ecx './usr/share/(man/man8/clihost-jail.8|man/man8/clihost-jail-close-routes.8|man/man5/clihost-jail.conf.5|doc/clihost-jail/changelog.Debian).gz' '$work/contents.txt')\" = 4 ] && grep -qx './usr/share/doc/clihost-jail/copyright' '$work/contents.txt' && ! grep -E '^./usr/share/man/.*[0-9]\$' '$work/contents.txt'"
dpkg-deb -x "$deb" "$work/x"
check "the changelog's version is the package's" \
  "[ \"\$(zcat '$work/x/usr/share/doc/clihost-jail/changelog.Debian.gz' | sed -nE '1s/^clihost-jail \(([^)]+)\).*/\1/p')\" = \"\$(dpkg-deb -f '$deb' Version)\" ]"
# gzip's header: no flags (no file name), mtime 0, extra flags 2 (-9).
check "man pages and changelog are gzip -9n (no name, no timestamp)" \
  "(for f in '$work'/x/usr/share/man/man*/*.gz '$work/x/usr/share/doc/clihost-jail/changelog.Debian.gz'; do [ \"\$(od -An -tx1 -j3 -N6 \"\$f\" | tr -d ' ')\" = 000000000002 ] || exit 1; done)"
check "the rules file is data for nft -f, not a script" "[ \"\$(head -c2 '$work/x/usr/share/clihost-jail/clihost-jail.nft')\" != '#!' ]"
check "conffiles list jail.conf, the PAM service and the sshd drop-in" \
  "dpkg-deb -I '$deb' conffiles | grep -x /etc/clihost-jail/jail.conf >/dev/null && dpkg-deb -I '$deb' conffiles | grep -x /etc/pam.d/clihost-jail >/dev/null && dpkg-deb -I '$deb' conffiles | grep -x /etc/ssh/sshd_config.d/clihost-jail.conf >/dev/null"
check "helper ships 4750 root:root (only root may run it before postinst)" \
  "dpkg-deb -c '$deb' | grep -E '^-rwsr-x--- root/root .* ./usr/libexec/clihost-jail/clihost-jail$' >/dev/null"
check "the attach stub ships 0755 root:root" \
  "dpkg-deb -c '$deb' | grep -E '^-rwxr-xr-x root/root .* ./usr/libexec/clihost-jail/clihost-jail-attach$' >/dev/null"
check "the tmux server's OOM fork handler is shipped root's 0644 beside the stub" \
  "dpkg-deb -c '$deb' | grep -E '^-rw-r--r-- root/root .* ./usr/libexec/clihost-jail/clihost-jail-oom.so$' >/dev/null"
check "the supervisor program ships 0700 root:root (not setuid, root's only)" \
  "dpkg-deb -c '$deb' | grep -E '^-rwx------ root/root .* ./usr/libexec/clihost-jail/clihost-jail-supervisor$' >/dev/null"
check "the admin program ships 0755 root:root (not setuid)" \
  "dpkg-deb -c '$deb' | grep -E '^-rwxr-xr-x root/root .* ./usr/libexec/clihost-jail/clihost-jail-admin$' >/dev/null"

nft delete table inet clihost_jail >/dev/null 2>&1 || true
check "no host-address rules before the install" "! nft list table inet clihost_jail >/dev/null 2>&1"
# A fresh host's paths: the existing install is in the guard's tar.
for p in "${guard_paths[@]}"; do rm -rf "/${p:?}"; done
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$work/install.log" 2>&1 || dpkg -i "$deb" >>"$work/install.log" 2>&1
helper=/usr/libexec/clihost-jail/clihost-jail
check "groups clihost and clihost-tenants exist" "getent group clihost >/dev/null && getent group clihost-tenants >/dev/null"
check "helper is root:clihost 4750" "[ \"\$(stat -c '%U:%G %a' $helper)\" = 'root:clihost 4750' ]"
check "mode is a dpkg statoverride" "dpkg-statoverride --list $helper | grep 'root clihost 4750' >/dev/null"
# While the package is installed, this test refuses to start, touching nothing.
rc=0; DEB_BUILD_DIR=/nonexistent bash "$0" >"$work/again.log" 2>&1 || rc=$?
check "a run while the package is installed refuses (exit 1), and leaves it installed" \
  "[ $rc = 1 ] && grep -q '^deb_package: the clihost-jail package is installed on this host' '$work/again.log' && dpkg-query -W -f='\${db:Status-Abbrev}' clihost-jail | grep -q '^ii' && [ \"\$(stat -c '%U:%G %a' $helper)\" = 'root:clihost 4750' ]"
check "man pages installed" "[ -f /usr/share/man/man8/clihost-jail.8.gz ] && [ -f /usr/share/man/man5/clihost-jail.conf.5.gz ] && [ -f /usr/share/man/man8/clihost-jail-close-routes.8.gz ]"
# deb-systemd-helper enables it also on a host without systemd (its state and
# the symlinks), as for every package's units.
enabled=$(readlink /etc/systemd/system/multi-user.target.wants/clihost-jail-nft.service || true)
check "postinst enabled the rules' unit" \
  "[ '$enabled' = /lib/systemd/system/clihost-jail-nft.service ] || [ '$enabled' = /usr/lib/systemd/system/clihost-jail-nft.service ]"
if [ "$enabled" != /lib/systemd/system/clihost-jail-nft.service ] && [ "$enabled" != /usr/lib/systemd/system/clihost-jail-nft.service ]; then
  # What deb-systemd-helper saw and did, for the record of a failed run.
  echo "  the link: '$enabled'; the unit: $(ls -l /usr/lib/systemd/system/clihost-jail-nft.service 2>&1)"
  find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked -name '*clihost*' \
    -printf '  state: %p\n' 2>/dev/null
  sed 's/^/  install: /' "$work/install.log" | tail -n 15
fi
# network = isolated: postinst creates the group and loads the rules (at boot:
# the unit); without systemd here, postinst loads them itself.
check "group clihost-jail-net exists" "getent group clihost-jail-net >/dev/null"
check "the host-address rules and their unit are shipped" \
  "cmp -s /usr/share/clihost-jail/clihost-jail.nft '$repo/install/nftables/clihost-jail.nft' && [ -f /usr/lib/systemd/system/clihost-jail-nft.service ]"
# nft writes its listing in many small writes: read it whole (a grep -q that
# quits early made nft die of SIGPIPE, and pipefail failed the check).
nft list table inet clihost_jail >"$work/rules.txt" 2>&1 || true
# nft lists the group by its number.
netgid=$(getent group clihost-jail-net | cut -d: -f3)
check "postinst loaded the host-address rules" \
  "[ -n '$netgid' ] && grep -Fx \"\$(printf '\t\tmeta skgid %s fib daddr type local reject' '$netgid')\" '$work/rules.txt' >/dev/null"
check "the package depends on slirp4netns and nftables" \
  "dpkg-deb -f '$deb' Depends | grep 'slirp4netns' >/dev/null && dpkg-deb -f '$deb' Depends | grep 'nftables' >/dev/null"
dropin=/etc/ssh/sshd_config.d/clihost-jail.conf
check "the sshd drop-in is installed and denies the tenant group" "grep -qx 'DenyGroups clihost-tenants' $dropin"
# A tenant as the README creates one: nologin, cron/at/linger closed, and
# the policy's [jail] shell on.
useradd -m -s /usr/sbin/nologin -G clihost-tenants "$tenant"
chmod 750 "/home/$tenant"
check "clihost-jail-close-routes closes cron and at" \
  "/usr/sbin/clihost-jail-close-routes $tenant && grep -qx $tenant /etc/cron.deny && grep -qx $tenant /etc/at.deny"
sed -i -E 's|^# (shell = /usr/bin/bash)|\1|' /etc/clihost-jail/jail.conf
# sshd -T (run by check) needs sshd's privilege separation directory.
[ ! -x /usr/sbin/sshd ] || install -d -m 0755 /run/sshd
check "clihost-jail check --user passes" "$helper check --user $tenant >$work/check.out 2>&1"
grep -q "result: a jail can start" "$work/check.out" || cat "$work/check.out"
# A jailed tmux session started by the packaged helper (tmux stands in for ttyd's pty).
tmux -L "ctjdeb$$" new-session -d -s host "$helper run --user $tenant --session debtest"
sock=/home/$tenant/.cache/tmux/clihost.sock
for _ in $(seq 50); do runuser -u "$tenant" -- tmux -S "$sock" has-session -t =debtest 2>/dev/null && break; sleep 0.1; done
check "the packaged helper starts a jailed tmux session" "runuser -u $tenant -- tmux -S $sock has-session -t =debtest"
check "the packaged helper kills it" "$helper kill --user $tenant --session debtest"
tmux -L "ctjdeb$$" kill-server 2>/dev/null || true

echo "# local edit" >> /etc/clihost-jail/jail.conf
dpkg -r clihost-jail >/dev/null
check "remove deletes the helper" "[ ! -e $helper ]"
check "remove keeps the edited config" "grep -q '# local edit' /etc/clihost-jail/jail.conf"
check "remove keeps the PAM service" "[ -f /etc/pam.d/clihost-jail ]"
check "remove deletes the sshd drop-in" "[ ! -e $dropin ]"
# dpkg does not bring back a conffile deleted while the package was removed;
# postinst does.
# Session jails of another build still running at an upgrade are counted
# by postinst (issue 22, item 6): a live supervisor with a v2 record (a
# sleep stands in for it: the recorded pid and start time), a v2 record
# whose pid is gone, a record of this build's version, and a live one of
# the build before the split by privilege (v3: served, not counted).
made_run_dir=
if [ ! -d /run/clihost-jail ]; then install -d -m 0700 /run/clihost-jail; made_run_dir=1; fi
sleep 300 &
stand_in=$!
stand_in_ticks=$(awk '{ print $22 }' "/proc/$stand_in/stat")
echo "v2 ctjdeb-old 64001 $stand_in $stand_in_ticks 0-0 1 64001.sock" >/run/clihost-jail/64001.state
echo "v2 ctjdeb-gone 64002 999999 5 0-0 1 64002.sock" >/run/clihost-jail/64002.state
echo "v$(sed -nE 's/^inline constexpr int kRecordVersion = ([0-9]+);/\1/p' "$repo/helper/host/runtime_state.hpp") ctjdeb-new 64003 $stand_in $stand_in_ticks 0-0 1 64003.sock" \
  >/run/clihost-jail/64003.state
echo "v3 ctjdeb-split 64004 $stand_in $stand_in_ticks 0-0 1 64004.sock" >/run/clihost-jail/64004.state
dpkg -i "$deb" >/dev/null 2>"$work/reinstall.err"
kill "$stand_in" 2>/dev/null || true
rm -f /run/clihost-jail/6400[1234].state
[ -z "$made_run_dir" ] || rmdir /run/clihost-jail
check "postinst counts the live session jails of another version (1) and names clihost-jail stop" \
  "grep -qx 'clihost-jail: 1 session jail(s) of another version still run; end each with clihost-jail stop --user TENANT' '$work/reinstall.err'"
check "postinst serves the build before the split's records (kFirstServedRecord)" \
  "grep -qx \"    served=v\$(sed -nE 's/^inline constexpr int kFirstServedRecord = ([0-9]+);/\\1/p' '$repo/helper/host/runtime_state.hpp')\" '$repo/install/debian/postinst'"
check "postinst's current record version is the helper's (kRecordVersion)" \
  "grep -qx \"    current=v\$(sed -nE 's/^inline constexpr int kRecordVersion = ([0-9]+);/\\1/p' '$repo/helper/host/runtime_state.hpp')\" '$repo/install/debian/postinst'"
check "a re-install brings the sshd drop-in back" "grep -qx 'DenyGroups clihost-tenants' $dropin"
dpkg -r clihost-jail >/dev/null
dpkg -P clihost-jail >/dev/null
check "purge deletes the config" "[ ! -e /etc/clihost-jail/jail.conf ]"
check "purge deletes the PAM service" "[ ! -e /etc/pam.d/clihost-jail ]"
check "purge leaves no sshd drop-in" "[ ! -e $dropin ]"
check "purge drops the statoverride" "! dpkg-statoverride --list $helper >/dev/null 2>&1"
check "purge leaves no unit state (deb-systemd-helper)" \
  "[ -z \"\$(find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked -name 'clihost-jail-nft.service*' 2>/dev/null)\" ]"

cleanup
if guard_verify >"$work/guard.txt"; then ok "$(cat "$work/guard.txt")"; else bad "$(cat "$work/guard.txt")"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
