#!/bin/bash
# Builds selinux/clihost_jail.{te,if,fc} with the reference-policy devel
# Makefile in a temporary copy and checks:
#  1. clihost_jail.pp is produced;
#  2. the compiled rules contain the decisions the module exists for (domain
#     transition into the tenant domain on bin_t, nnp_transition because the
#     helper sets no_new_privs, no sys_admin/dac_override capability);
#  3. if a policy store is installed (selinux-policy-default), the module
#     links against the distribution policy, using a private copy of the
#     store (semodule -p), so the host's store is not modified. This package
#     is not installed here on purpose: it also writes /etc/selinux/config.
# SELinux need not be enabled: nothing is loaded into the kernel.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../selinux
makefile=/usr/share/selinux/devel/Makefile

if [ ! -f "$makefile" ]; then
    [ "$(id -u)" = 0 ] || { echo "FAIL: $makefile missing and not root"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq selinux-policy-dev >/dev/null
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src"/clihost_jail.te "$src"/clihost_jail.if "$src"/clihost_jail.fc "$tmp/"

pass=0 fail=0
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "ok   $1";
    else fail=$((fail + 1)); echo "FAIL $1: expected [$2], got [$3]"; fi
}

(cd "$tmp" && make -f "$makefile" clihost_jail.pp) > "$tmp/build.log" 2>&1 && rc=0 || rc=$?
[ "$rc" = 0 ] || cat "$tmp/build.log"
check "make clihost_jail.pp" 0 "$rc"
check "clihost_jail.pp produced" yes "$([ -s "$tmp/clihost_jail.pp" ] && echo yes || echo no)"

pp2cil=/usr/libexec/selinux/hll/pp   # from policycoreutils, a dependency of selinux-policy-dev
if [ -s "$tmp/clihost_jail.pp" ] && [ -x "$pp2cil" ]; then
    "$pp2cil" "$tmp/clihost_jail.pp" "$tmp/module.cil" 2>/dev/null
    has() { grep -qF -- "$1" "$tmp/module.cil" && echo yes || echo no; }
    check "exec type entry: caller -> clihost_jail_t" yes "$(has '(typetransition unconfined_t clihost_jail_exec_t process clihost_jail_t)')"
    check "jail runs in the tenant domain" yes "$(has '(typetransition clihost_jail_t bin_t process unconfined_t)')"
    check "transition allowed under no_new_privs" yes "$(has '(allow clihost_jail_t unconfined_t (process2 (nnp_transition)))')"
    check "setuid/setgid/setpcap granted" yes "$(has '(allow clihost_jail_t self (capability (kill setgid setuid setpcap sys_resource)))')"
    caps=$(grep -F '(allow clihost_jail_t self (capability ' "$tmp/module.cil" | tr -d '\n')
    bad=$(grep -oE 'sys_admin|dac_override|dac_read_search' <<<"$caps" | sort -u | tr '\n' ' ' || true)
    check "no sys_admin, dac_override, dac_read_search capability" none "${bad:-none}"
    check "config has its own type" yes "$(has 'clihost_jail_conf_t')"
fi

if [ -d /var/lib/selinux/default ] && command -v semodule >/dev/null && [ "$(id -u)" = 0 ]; then
    root=$tmp/root
    mkdir -p "$root/var/lib/selinux" "$root/etc"
    cp -a /var/lib/selinux/default "$root/var/lib/selinux/"
    cp -a /etc/selinux "$root/etc/"
    semodule -p "$root" -n -i "$tmp/clihost_jail.pp" > "$tmp/link.log" 2>&1 && rc=0 || rc=$?
    [ "$rc" = 0 ] || cat "$tmp/link.log"
    check "links against the installed distribution policy" 0 "$rc"
else
    echo "skip link check: no SELinux policy store (apt-get install selinux-policy-default)"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
