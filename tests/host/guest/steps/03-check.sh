# 3. check: exit 0 as root (the setuid helper execs the admin program, and
#    the program itself); the proxy is refused it with the reason (lib.sh's
#    CHECK_AS_PROXY=1 for a build whose proxy could run it); every tenant's
#    routes closed.
out=$("$HELPER" check 2>&1); rc=$?
equals "check as root exits 0" "$rc" 0
[ $rc = 0 ] || echo "$out" | grep -E 'FAIL|fail' | head -n 8 | sed 's/^/   /'
echo "$out" | grep -E '^(cgroups|network|host-address)' | head -n 4 | sed 's/^/   /'
check "check names systemd's services (pure v2)" "echo \"\$out\" | grep -q \"^cgroups: .*systemd: each tenant's supervisor a transient service\"" "$(echo "$out" | grep '^cgroups')"
out=$("$HELPER" check --user "$T1" 2>&1); rc=$?
equals "check --user $T1 as root exits 0" "$rc" 0
[ $rc = 0 ] || echo "$out" | grep -E 'FAIL' | head -n 5 | sed 's/^/   /'
out=$(as_proxy "$HELPER" check 2>&1); rc=$?
if [ "$CHECK_AS_PROXY" = 1 ]; then
  equals "check as the proxy exits 0" "$rc" 0
else
  reason="clihost-jail: check and print are not run by the setuid helper: run them as root ($ADMIN); the proxy keeps run, kill, stop and list"
  check "check as the proxy is refused (root only), with its reason" \
    "[ $rc = 1 ] && echo \"\$out\" | grep -qF \"\$reason\"" "exit $rc: $out"
  out=$("$ADMIN" check --user "$T1" 2>&1); rc=$?
  equals "the admin program's check --user $T1 as root exits 0" "$rc" 0
fi
