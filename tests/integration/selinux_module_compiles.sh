#!/bin/bash
# Builds selinux/clihost_jail.{te,if,fc} with the reference-policy devel
# Makefile in a temporary copy and checks:
#  1. clihost_jail.pp is produced;
#  2. the compiled rules (decompiled to CIL with pp2cil, which must be
#     present: without it no rule would be checked) contain the decisions the
#     module exists for (domain transition into the tenant domain on bin_t,
#     nnp_transition because the helper sets no_new_privs, no
#     sys_admin/dac_override capability, the watcher's ~/.cache/tmux
#     directories, the memfd seccomp program handed to bwrap, signals and
#     SIGCHLD between the helper's processes);
#  3. if a policy store is installed (selinux-policy-default), the module
#     links against the distribution policy, using a private copy of the
#     store (semodule -p), so the host's store is not modified. This package
#     is not installed here on purpose: it also writes /etc/selinux/config.
# SELinux need not be enabled: nothing is loaded into the kernel.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../selinux
makefile=/usr/share/selinux/devel/Makefile
# The reference-policy build files, and pp2cil (the .pp to CIL converter,
# /usr/libexec/selinux/hll/pp), which Debian ships in policycoreutils.
pp2cil=/usr/libexec/selinux/hll/pp

if [ ! -f "$makefile" ] || [ ! -x "$pp2cil" ]; then
    [ "$(id -u)" = 0 ] || { echo "FAIL: $makefile or $pp2cil missing and not root"; exit 1; }
    "$here/../../install/ensure-packages.sh" selinux-policy-dev policycoreutils
fi
[ -f "$makefile" ] || { echo "FAIL: $makefile missing after installing selinux-policy-dev"; exit 1; }
[ -x "$pp2cil" ] || { echo "FAIL: $pp2cil missing after installing policycoreutils: the rules cannot be checked"; exit 1; }

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

# The rule checks run on the decompiled module; a build or conversion
# failure is a failure here, never a reason to skip them.
cil_ok=no
if [ -s "$tmp/clihost_jail.pp" ] && "$pp2cil" "$tmp/clihost_jail.pp" "$tmp/module.cil" 2>"$tmp/pp2cil.log" \
    && [ -s "$tmp/module.cil" ]; then
    cil_ok=yes
else
    cat "$tmp/pp2cil.log" 2>/dev/null || true
    : > "$tmp/module.cil"
fi
check "pp2cil decompiles the module" yes "$cil_ok"

has() { grep -qF -- "$1" "$tmp/module.cil" && echo yes || echo no; }
# allows SOURCE TARGET CLASS PERM...: prints the PERMs that no allow rule
# (in any block, optional or not) grants, or "none".
allows() {
    local src=$1 tgt=$2 cls=$3 perms missing=""
    shift 3
    perms=" $({ grep -F -- "(allow $src $tgt ($cls (" "$tmp/module.cil" || true; } \
        | sed -E 's/.*\('"$cls"' \(([^)]*)\)\)\).*/\1/' | tr '\n' ' ') "
    for p in "$@"; do [[ $perms == *" $p "* ]] || missing+="$p "; done
    echo "${missing:-none}"
}
# grants SOURCE TARGET CLASS PERM...: the PERMs among those that are granted.
grants() {
    local src=$1 tgt=$2 cls=$3 perms found=""
    shift 3
    perms=" $({ grep -F -- "(allow $src $tgt ($cls (" "$tmp/module.cil" || true; } \
        | sed -E 's/.*\('"$cls"' \(([^)]*)\)\)\).*/\1/' | tr '\n' ' ') "
    for p in "$@"; do [[ $perms == *" $p "* ]] && found+="$p "; done
    echo "${found:-none}"
}

check "exec type entry: caller -> clihost_jail_t" yes "$(has '(typetransition unconfined_t clihost_jail_exec_t process clihost_jail_t)')"
check "jail runs in the tenant domain" yes "$(has '(typetransition clihost_jail_t bin_t process unconfined_t)')"
check "transition allowed under no_new_privs" yes "$(has '(allow clihost_jail_t unconfined_t (process2 (nnp_transition)))')"
check "setuid/setgid/setpcap granted" yes "$(has '(allow clihost_jail_t self (capability (kill setgid setuid setpcap sys_resource)))')"
caps=$(grep -F '(allow clihost_jail_t self (capability ' "$tmp/module.cil" | tr -d '\n')
bad=$(grep -oE 'sys_admin|dac_override|dac_read_search' <<<"$caps" | sort -u | tr '\n' ' ' || true)
check "no sys_admin, dac_override, dac_read_search capability" none "${bad:-none}"
check "config has its own type" yes "$(has 'clihost_jail_conf_t')"

# The helper's own processes (root parent, watcher, bwrap child): fork,
# SIGCHLD, relayed signals, parent-death SIGHUP, SIGKILL of remnants.
check "helper processes fork, signal and reap each other" none \
    "$(allows clihost_jail_t self process fork sigchld signal sigkill signull)"
check "bwrap (tenant domain) may SIGCHLD the watcher" none "$(allows unconfined_t clihost_jail_t process sigchld)"
check "bwrap (tenant domain) may use the fds it inherits" none "$(allows unconfined_t clihost_jail_t fd use)"
check "the helper signals and kills the jail" none "$(allows clihost_jail_t unconfined_t process signal sigkill signull)"

# The watcher, as the tenant, makes ~/.cache and ~/.cache/tmux (mkdirat,
# openat O_DIRECTORY, fstat, fchmod).
check "home directory opened and searched" none "$(allows clihost_jail_t user_home_dir_t dir open read search getattr)"
check "new ~/.cache labeled xdg_cache_t" yes "$(has '(typetransition clihost_jail_t user_home_dir_t dir ".cache" xdg_cache_t)')"
for t in xdg_cache_t user_home_t; do
    check "$t dirs: create, open, add tmux, fchmod" none \
        "$(allows clihost_jail_t $t dir create getattr open read search add_name write setattr)"
    check "$t dirs: nothing removed or renamed" none \
        "$(grants clihost_jail_t $t dir remove_name rmdir rename reparent unlink)"
    check "$t: no file, socket or link access" no \
        "$(grep -qE "\(allow clihost_jail_t $t \((file|sock_file|lnk_file|fifo_file) " "$tmp/module.cil" && echo yes || echo no)"
done

# The seccomp program: a memfd (labeled through tmpfs_t) passed as fd 3.
check "memfd gets its own type" yes "$(has '(typetransition clihost_jail_t tmpfs_t file clihost_jail_tmpfs_t)')"
check "the helper writes its memfd" none "$(allows clihost_jail_t clihost_jail_tmpfs_t file write)"
check "no write access to tmpfs_t directories (/dev/shm)" none "$(grants clihost_jail_t tmpfs_t dir write add_name)"
check "the tenant domain inherits and reads the memfd (exec-time check of an O_RDWR fd)" none \
    "$(allows unconfined_t clihost_jail_tmpfs_t file read write)"

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
