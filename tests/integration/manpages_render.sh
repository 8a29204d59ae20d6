#!/bin/bash
# Checks that install/man/*.8 and jail.conf.5 render without any
# warning from groff (-ww: all warnings, -z: no output) and from man-db
# (man --warnings -l), that each page's .TH title and NAME are the name
# CMakeLists.txt installs it under (jail.conf.5 is installed as
# clihost-jail.conf.5: a page called jail.conf(5) would collide with other
# packages'), that the cross references use those names, and that each page
# documents what the contract fixes: every command, every exit code, every
# config key.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mandir=$here/../../install/man

need=()
command -v groff >/dev/null || need+=(groff-base)
command -v man >/dev/null || need+=(man-db)
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "FAIL: missing ${need[*]} and not root"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
export LC_ALL=C.UTF-8 MANWIDTH=80

pass=0 fail=0
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "ok   $1";
    else fail=$((fail + 1)); echo "FAIL $1: expected [$2], got [$3]"; fi
}
for page in clihost-jail.8 jail.conf.5 clihost-jail-close-routes.8; do
    f=$mandir/$page
    check "$page: groff -man -ww -z is silent" "" "$(groff -man -ww -z "$f" 2>&1)"
    check "$page: man --warnings -l is silent" "" "$(man --warnings -l "$f" 2>&1 >/dev/null)"
    check "$page: renders to text" yes "$(man -l "$f" 2>/dev/null | grep '^NAME' >/dev/null && echo yes || echo no)"
done

# Page names. The installed name comes from CMakeLists.txt
# (clihost_jail_man(SOURCE SECTION NAME), installed as manSECTION/NAME.SECTION.gz),
# since that is what `man NAME`, whatis and cross references go by.
installed=$(sed -nE 's#^clihost_jail_man\(install/man/([^ ]+) ([0-9]) ([^ )]+)\).*#\1 \2 \3.\2#p' \
    "$here/../../CMakeLists.txt")
check "CMakeLists.txt installs every page" "clihost-jail-close-routes.8 clihost-jail.8 jail.conf.5" \
    "$(cut -d' ' -f1 <<<"$installed" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
check "every page in install/man is installed" "$(cd "$mandir" && ls | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')" \
    "$(cut -d' ' -f1 <<<"$installed" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
while read -r src sect inst; do
    name=${inst%.*}
    f=$mandir/$src
    check "$src: installed as $inst in man$sect" "$sect" "${inst##*.}"
    check "$src: .TH title is the installed name" "${name^^} $sect" \
        "$(sed -nE 's/^\.TH +([^ ]+) +([^ ]+).*/\1 \2/p' "$f" | sed 's/\\-/-/g')"
    check "$src: NAME is the installed name" "$name" "$(lexgrog "$f" 2>/dev/null | sed -E 's/^[^"]*"([^ ]+) - .*/\1/')"
done <<<"$installed"
check "jail.conf.5: NAME names the file it documents" yes \
    "$(lexgrog "$mandir/jail.conf.5" 2>/dev/null | grep -F /etc/clihost-jail/jail.conf >/dev/null && echo yes || echo no)"
# Cross references (name(section) in the rendered text) to this package's pages.
refs() { man -l "$1" 2>/dev/null | grep -oE '[a-z.-]*jail[a-z.-]*\([0-9]\)' | sort -u | tr '\n' ' ' | sed 's/ $//'; }
check "clihost-jail.8 refers to clihost-jail.conf(5), not jail.conf(5)" "clihost-jail-close-routes(8) clihost-jail.conf(5)" "$(refs "$mandir/clihost-jail.8")"
check "clihost-jail-close-routes.8 refers to clihost-jail(8) and clihost-jail.conf(5)" "clihost-jail(8) clihost-jail.conf(5)" \
    "$(refs "$mandir/clihost-jail-close-routes.8")"
check "jail.conf.5 refers to clihost-jail(8)" "clihost-jail(8)" "$(refs "$mandir/jail.conf.5")"

# Contract coverage, looked for in the rendered text.
text8=$(man -l "$mandir/clihost-jail.8" 2>/dev/null)
missing=""
for w in run kill check print --version --help --user --session CLIHOST_JAIL_CONFIG TTYD_SANDBOX=true \
         extra_env setuid sudo /etc/clihost-jail/jail.conf /etc/pam.d/clihost-jail; do
    grep -qF -- "$w" <<<"$text8" || missing+=" $w"
done
for code in 0 1 2 3 4; do
    grep -qE "^ +$code +[A-Z]" <<<"$text8" || missing+=" exit-$code"
done
check "clihost-jail.8 documents commands, modes, environment, exit codes" "" "$missing"

text5=$(man -l "$mandir/jail.conf.5" 2>/dev/null)
missing=""
for w in '[callers]' users groups '[tenants]' group min_uid max_uid '[jail]' bwrap proc ro_bind tmpfs \
         allow_caller_command nested_sandbox extra_env '[pam]' service session private-or-hidepid inherit; do
    grep -qF -- "$w" <<<"$text5" || missing+=" $w"
done
check "jail.conf.5 documents every key" "" "$missing"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
