# 11. dpkg -r keeps the conffiles (jail.conf, the PAM service) and removes
#     the rest, the sshd drop-in and the loaded rules too; dpkg -P removes the
#     conffiles, the statoverride and the unit's state. The groups stay, and
#     the tenants' /etc/cron.deny, /etc/at.deny entries (postrm). Nothing
#     else differs from before the install, once the test's own accounts and
#     files are gone.
#     A session jail running across dpkg -r: before, its probe of a host
#     address is refused by the rules; prerm stops it (and says so) before
#     the rules go, so after it no process of the tenant is left to reach
#     the host.
# A host address of the guest's own (the guest may have no network card):
# on a dummy link, a local address as any other (the rules' fib type local).
HOSTIP=198.51.100.71  # never 192.0.2.0/24: the build machine's own uplink
ip link add ctjprobe type dummy && ip addr add "$HOSTIP/32" dev ctjprobe && ip link set ctjprobe up
python3 -c 'import socket,sys,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], 8471)); s.listen(8); time.sleep(600)' "$HOSTIP" &
LISTENER=$!
connect rm "$T1" main
for _ in 1 2 3 4 5 6 7 8 9 10; do
  type_into rm 'echo RM_$((6*7))'
  wait_for 3 screen_has rm RM_42 && break
done
shows 1 rm RM_42 "a session jail runs before dpkg -r"
type_into rm "timeout 20 bash -c 'exec 3<>/dev/tcp/$HOSTIP/8471' 2>/dev/null && echo PROBE_OPEN_\$((6*7)) || echo PROBE_SHUT_\$((6*7))"
shows 30 rm PROBE_SHUT_42 "before dpkg -r the jail's probe of the host address $HOSTIP is refused"
check "the probe never connected" "! screen_has rm PROBE_OPEN_42"
check "control: the listener on $HOSTIP:8471 accepts a connection from outside the jail" \
  "timeout 5 bash -c 'exec 3<>/dev/tcp/$HOSTIP/8471'"
systemctl stop clihost-proxy.service 2>/dev/null
if dpkg -r clihost-jail >"$STATE/remove.log" 2>&1; then ok "dpkg -r"; else bad "dpkg -r" "$(tail -n 5 "$STATE/remove.log")"; fi
check "dpkg -r says it stops the session jail of $T1 before removal" \
  "grep -q 'stopping the session jail of $T1 before removal' '$STATE/remove.log'" "$(cat "$STATE/remove.log")"
check "after dpkg -r no process of $T1 is left (nothing reaches the host)" \
  "wait_for 10 sh -c '[ \$(pgrep -u $(uid_of "$T1") | wc -l) = 0 ]'" "$(pgrep -a -u "$(uid_of "$T1")")"
kill "$LISTENER" 2>/dev/null
ip link del ctjprobe 2>/dev/null
check "the helper is gone" "[ ! -e '$HELPER' ]"
check "jail.conf and the PAM service stay (conffiles)" "[ -f '$CONF' ] && [ -f /etc/pam.d/clihost-jail ]"
check "the sshd drop-in is gone" "[ ! -e /etc/ssh/sshd_config.d/clihost-jail.conf ]"
check "the host-address rules are unloaded" "! nft list table inet clihost_jail >/dev/null 2>&1"
equals "the rules' unit is masked" "$(systemctl is-enabled clihost-jail-nft.service 2>&1)" masked
if dpkg -P clihost-jail >"$STATE/purge.log" 2>&1; then ok "dpkg -P"; else bad "dpkg -P" "$(tail -n 5 "$STATE/purge.log")"; fi
check "/etc/clihost-jail and the PAM service are gone" "[ ! -e /etc/clihost-jail ] && [ ! -e /etc/pam.d/clihost-jail ]"
check "no statoverride is left" "! dpkg-statoverride --list | grep -q clihost-jail"
check "the unit is neither masked nor enabled" "[ ! -e /etc/systemd/system/clihost-jail-nft.service ] && ! ls /etc/systemd/system/*/clihost-jail-nft.service >/dev/null 2>&1"
check "the groups stay (files elsewhere may carry their gids)" \
  "getent group clihost && getent group clihost-tenants && getent group clihost-jail-net >/dev/null"
# The test's own: accounts, the proxy's unit and program.
for u in "$T1" "$T2" clihost; do userdel -r "$u" >/dev/null 2>&1; done
rm -rf /etc/systemd/system/clihost-proxy.service /opt/clihost /var/lib/clihost
snapshot >"$STATE/paths.after"
# What README says stays: the tenants' lines in cron.deny/at.deny (their
# files); useradd/userdel's backups of the account files are the test's.
left=$(diff "$STATE/paths.before" "$STATE/paths.after" | grep '^[<>]' \
  | grep -vE '^> f /etc/((cron|at)\.deny|(passwd|group|shadow|gshadow|subuid|subgid)-)$')
check "after dpkg -P nothing else differs from before the install" "[ -z \"\$left\" ]" "$(echo "$left" | head -n 10 | tr '\n' ' ')"
