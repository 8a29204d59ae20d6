#!/usr/bin/env bash
# The Debian package, installed for real: cpack -G DEB from a Release build,
# dpkg -i creates the groups and the 4750 root:clihost helper (statoverride),
# the sshd drop-in that refuses tenants is installed, `clihost-jail check`
# passes for a tenant created as the README says (nologin, close-routes),
# dpkg -r keeps the conffiles but removes the sshd drop-in (and a re-install
# brings it back), dpkg -P removes them and the statoverride. Root only;
# restores what a manual install had put at the same paths, and the host
# files the tenant's closing touched.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "deb_package: needs root" >&2; exit 1; }
command -v dpkg-deb >/dev/null
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

work=$(mktemp -d)
tenant=ctjdeb$$
# Keep whatever a manual install (quickstart) had at the package's paths.
saved=() absent=()
for f in usr/libexec/clihost-jail etc/clihost-jail etc/pam.d/clihost-jail etc/ssh/sshd_config.d/clihost-jail.conf \
         etc/cron.deny etc/at.deny run/sshd; do
  if [ -e "/$f" ]; then saved+=("$f"); else absent+=("$f"); fi
done
[ ${#saved[@]} -eq 0 ] || tar -C / -cpf "$work/backup.tar" "${saved[@]}"
# The host-address rules (tests/run.sh loads them): taken away before the
# install so that only postinst can have loaded them, put back afterwards.
rules_were_loaded=0
if nft list table inet clihost_jail >/dev/null 2>&1; then rules_were_loaded=1; fi
was_installed=$(dpkg-query -W -f='${Status}' clihost-jail 2>/dev/null | grep -c "install ok installed" || true)
cleanup() {
  dpkg -P clihost-jail >/dev/null 2>&1 || true
  userdel -r "$tenant" >/dev/null 2>&1 || true
  for f in "${absent[@]}"; do rm -rf "/${f:?}"; done
  [ -f "$work/backup.tar" ] && tar -C / -xpf "$work/backup.tar"
  if [ "$rules_were_loaded" = 1 ]; then
    nft -f "$repo/install/nftables/clihost-jail.nft" || echo "deb_package: could not reload the host-address rules" >&2
  else
    nft delete table inet clihost_jail >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
[ "$was_installed" = 0 ] || dpkg -r clihost-jail >/dev/null

# A packager's build: Release, warnings not fatal (the default); cpack refuses
# any other build type (install/debian/cpack_release_only.cmake).
cmake -S "$repo" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DCLIHOST_JAIL_TESTS=OFF >/dev/null
cmake --build "$work/build" -j"$(nproc)" >/dev/null
(cd "$work/build" && cpack -G DEB >/dev/null)
deb=$(ls "$work"/build/clihost-jail_*.deb)
check "package builds" "[ -f '$deb' ]"
# Packaging reads the build type before it builds or installs anything.
cmake -S "$repo" -B "$work/rwd" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLIHOST_JAIL_TESTS=OFF >/dev/null
check "cpack refuses a build that is not Release" \
  "! (cd '$work/rwd' && cpack -G DEB >'$work/rwd.log' 2>&1) && grep -q 'the package is made from a Release build' '$work/rwd.log' && ! ls '$work'/rwd/*.deb >/dev/null 2>&1"
check "conffiles list jail.conf, the PAM service and the sshd drop-in" \
  "dpkg-deb -I '$deb' conffiles | grep -x /etc/clihost-jail/jail.conf >/dev/null && dpkg-deb -I '$deb' conffiles | grep -x /etc/pam.d/clihost-jail >/dev/null && dpkg-deb -I '$deb' conffiles | grep -x /etc/ssh/sshd_config.d/clihost-jail.conf >/dev/null"
check "helper ships 4750 root:root (only root may run it before postinst)" \
  "dpkg-deb -c '$deb' | grep -E '^-rwsr-x--- root/root .* ./usr/libexec/clihost-jail/clihost-jail$' >/dev/null"

nft delete table inet clihost_jail >/dev/null 2>&1 || true
check "no host-address rules before the install" "! nft list table inet clihost_jail >/dev/null 2>&1"
rm -rf /usr/libexec/clihost-jail /etc/clihost-jail /etc/pam.d/clihost-jail /etc/ssh/sshd_config.d/clihost-jail.conf
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >/dev/null 2>&1 || dpkg -i "$deb" >/dev/null
helper=/usr/libexec/clihost-jail/clihost-jail
check "groups clihost and clihost-tenants exist" "getent group clihost >/dev/null && getent group clihost-tenants >/dev/null"
check "helper is root:clihost 4750" "[ \"\$(stat -c '%U:%G %a' $helper)\" = 'root:clihost 4750' ]"
check "mode is a dpkg statoverride" "dpkg-statoverride --list $helper | grep 'root clihost 4750' >/dev/null"
check "man pages installed" "[ -f /usr/share/man/man8/clihost-jail.8 ] && [ -f /usr/share/man/man5/clihost-jail.conf.5 ]"
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
dpkg -i "$deb" >/dev/null
check "a re-install brings the sshd drop-in back" "grep -qx 'DenyGroups clihost-tenants' $dropin"
dpkg -r clihost-jail >/dev/null
dpkg -P clihost-jail >/dev/null
check "purge deletes the config" "[ ! -e /etc/clihost-jail/jail.conf ]"
check "purge deletes the PAM service" "[ ! -e /etc/pam.d/clihost-jail ]"
check "purge leaves no sshd drop-in" "[ ! -e $dropin ]"
check "purge drops the statoverride" "! dpkg-statoverride --list $helper >/dev/null 2>&1"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
