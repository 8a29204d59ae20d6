#!/bin/bash
# Checks install/sudoers.d/clihost-jail:
#  1. `visudo -cf` accepts it, and accepts the commented regex variant too;
#  2. (root, if mount namespaces work) behaviour, in a private mount namespace
#     so the host's /etc and /usr/libexec are untouched: a stand-in `clihost` user and a fake
#     helper that prints its ids and environment are bind-mounted in, then
#     - `sudo -l -U` allows run/kill/check and refuses print/--version/other
#       programs and other users;
#     - `sudo -n` really runs it as root without a password, drops
#       CLIHOST_JAIL_CONFIG, keeps TERM, and refuses `sudo VAR=...`.
# Exits non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
drop_in=$here/../../install/sudoers.d/clihost-jail
helper=/usr/libexec/clihost-jail/clihost-jail

if ! command -v visudo >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "visudo missing and not root"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sudo >/dev/null
fi

pass=0 fail=0
check() { # check NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "ok   $1";
    else fail=$((fail + 1)); echo "FAIL $1: expected [$2], got [$3]"; fi
}

out=$(visudo -cf "$drop_in" 2>&1) && rc=0 || rc=$?
check "visudo -cf drop-in ($out)" 0 "$rc"

# The regex alternative: swap the commented alias in for the active one.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^Cmnd_Alias CLIHOST_JAIL/ {skip=1} skip && !/\\$/ {skip=0; next} skip {next}
     /^#Cmnd_Alias CLIHOST_JAIL/ {alt=1} alt && /^#/ {sub(/^#/, ""); print; next} {alt=0; print}' \
    "$drop_in" > "$tmp/regex-variant"
grep -q '\^run --user' "$tmp/regex-variant" || { echo "FAIL could not extract regex variant"; exit 1; }
out=$(visudo -cf "$tmp/regex-variant" 2>&1) && rc=0 || rc=$?
check "visudo -cf regex variant ($out)" 0 "$rc"

if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
    echo "skip behaviour checks: need root and mount namespaces"
else
    # Everything below runs inside a private mount namespace.
    cat > "$tmp/inner.sh" <<'INNER'
set -euo pipefail
tmp=$1 drop_in=$2 helper=$3 variant=$4
check() { if [ "$2" = "$3" ]; then echo "ok   [$variant] $1"; else echo "FAIL [$variant] $1: expected [$2], got [$3]"; fi; }
if ! getent passwd clihost >/dev/null; then
    # A stand-in proxy user, visible only in this namespace.
    cp /etc/passwd /etc/group /etc/shadow "$tmp/"
    echo 'clihost:x:64999:64999::/nonexistent:/usr/sbin/nologin' >> "$tmp/passwd"
    echo 'clihost:x:64999:' >> "$tmp/group"
    echo 'clihost:!:19000:0:99999:7:::' >> "$tmp/shadow"
    for f in passwd group shadow; do mount --bind "$tmp/$f" "/etc/$f"; done
fi
mkdir -m 0755 "$tmp/sudoers.d" "$tmp/libexec" "$tmp/libexec/clihost-jail"
install -m 0440 "$drop_in" "$tmp/sudoers.d/clihost-jail"
mount --bind "$tmp/sudoers.d" /etc/sudoers.d
printf '#!/bin/sh\necho "uid=$(id -u)"\nenv\n' > "$tmp/libexec/clihost-jail/clihost-jail"
chmod 0755 "$tmp/libexec/clihost-jail/clihost-jail"
# Read-only overlay: the fake helper on top, the real /usr/libexec (sudo's own
# libraries live there) underneath.
mount -t overlay overlay -o "lowerdir=$tmp/libexec:/usr/libexec" /usr/libexec
allowed() { sudo -l -U "$1" "${@:2}" >/dev/null 2>&1 && echo allowed || echo refused; }
check "clihost may run"            allowed "$(allowed clihost "$helper" run --user alice --session s1)"
check "clihost may kill"           allowed "$(allowed clihost "$helper" kill --user alice --session s1)"
check "clihost may check"          allowed "$(allowed clihost "$helper" check)"
check "clihost may check --user"   allowed "$(allowed clihost "$helper" check --user alice)"
check "clihost may not print"      refused "$(allowed clihost "$helper" print --user alice --session s1)"
check "clihost may not --version"  refused "$(allowed clihost "$helper" --version)"
check "clihost may not run a shell" refused "$(allowed clihost /bin/sh -c id)"
check "nobody may not run"         refused "$(allowed nobody "$helper" run --user alice --session s1)"
# The wildcard lets any argument through to the helper (which refuses it); the regex variant stops it in sudo.
wild=$([ "$variant" = wildcard ] && echo allowed || echo refused)
check "-- COMMAND reaches the helper only with *" "$wild" "$(allowed clihost "$helper" run --user alice --session s1 -- /bin/sh)"
check "bad session reaches the helper only with *" "$wild" "$(allowed clihost "$helper" kill --user alice --session -x)"
out=$(CLIHOST_JAIL_CONFIG=/tmp/evil.conf TERM=xterm-256color CJ_EVIL=1 \
      runuser -u clihost -- sudo -n "$helper" run --user alice --session s1 </dev/null 2>&1) || true
check "runs as root, no password"  uid=0 "$(grep '^uid=' <<<"$out" || echo "$out")"
check "CLIHOST_JAIL_CONFIG dropped" absent "$(grep -q '^CLIHOST_JAIL_CONFIG=' <<<"$out" && echo present || echo absent)"
check "other caller env dropped"   absent "$(grep -q '^CJ_EVIL=' <<<"$out" && echo present || echo absent)"
check "TERM kept"                  TERM=xterm-256color "$(grep '^TERM=' <<<"$out" || true)"
runuser -u clihost -- sudo -n CLIHOST_JAIL_CONFIG=/tmp/evil.conf "$helper" run --user alice --session s1 \
    </dev/null >/dev/null 2>&1 && rc=0 || rc=$?
check "sudo VAR=value refused"     refused "$([ "$rc" != 0 ] && echo refused || echo allowed)"
INNER
    # Each variant must run the inner script to its end (it is set -e: a
    # failed setup step stops it early) and report every one of its checks;
    # otherwise the behaviour checks would silently vanish and only the
    # visudo checks above would count.
    expected=$(grep -c '^check "' "$tmp/inner.sh")
    for variant in wildcard regex; do
        file=$drop_in; [ "$variant" = regex ] && file=$tmp/regex-variant
        rm -rf "$tmp/sudoers.d" "$tmp/libexec" "$tmp/passwd" "$tmp/group" "$tmp/shadow"
        log=$tmp/inner-$variant.log
        unshare -m --propagation private bash "$tmp/inner.sh" "$tmp" "$file" "$helper" "$variant" >"$log" 2>&1 \
            && rc=0 || rc=$?
        oks=0 fails=0
        while IFS= read -r line; do
            echo "$line"
            case $line in ok*) oks=$((oks + 1)) ;; FAIL*) fails=$((fails + 1)) ;; esac
        done <"$log"
        pass=$((pass + oks)) fail=$((fail + fails))
        check "[$variant] behaviour script ran to its end" 0 "$rc"
        check "[$variant] all $expected behaviour checks reported" "$expected" "$((oks + fails))"
    done
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
