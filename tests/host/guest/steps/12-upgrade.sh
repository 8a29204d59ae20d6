# 10. Upgrade to a rebuilt package (this tree, the version bumped) while a
#     session jail runs: the jail keeps running, of this record version, so
#     `list` does not mark it (earlier_version false), and a new connection
#     reaches the same screen.
SUP=$(cat "$STATE/sup-up")
old=$(dpkg-query -W -f '${Version}' clihost-jail)
new=$(ls "$RUN"/deb/new/clihost-jail_*.deb)
if dpkg -i "$new" >"$STATE/upgrade.log" 2>&1; then ok "dpkg -i $(basename "$new") (from $old)"; else bad "the upgrade" "$(tail -n 5 "$STATE/upgrade.log")"; fi
check "the version is the new one ($(dpkg-query -W -f '${Version}' clihost-jail))" "[ \"\$(dpkg-query -W -f '\${Version}' clihost-jail)\" != '$old' ]"
check "postinst names no session jail of another version" "! grep -q 'of another version' '$STATE/upgrade.log'" "$(cat "$STATE/upgrade.log")"
equals "the helper is still 4750 root:clihost (statoverride)" "$(stat -c '%a %U:%G' "$HELPER")" "4750 root:clihost"
check "the session jail's supervisor lives through the upgrade" "alive $SUP"
equals "list --json: the same supervisor" "$(supervisor_of "$T1")" "$SUP"
equals "list --json: not marked as of an earlier build (same record version)" "$(list_field "$T1" earlier_version)" false
check "the host-address rules are still loaded" "nft list table inet clihost_jail >/dev/null 2>&1"
connect up2 "$T1" main
shows 30 up2 UP_42 "a connection after the upgrade reaches the same screen"
out=$(as_proxy "$HELPER" stop --user "$T1" 2>&1)
check "stop after the upgrade ($out)" "wait_for 10 sh -c '[ \$(pgrep -u $(uid_of "$T1") | wc -l) = 0 ]'"
