# 4. Attach through a real pty: the proxy's service (the operator guide's
#    unit, its stand-in proxy) connects to the first tenant, a direct
#    connection of the proxy to the second; what is typed runs in the
#    tenant's shell on a pseudo-terminal, in the tenant's service.
install -d -o root -g root -m 0755 /opt/clihost
install -m 0755 "$RUN/proxy.py" /opt/clihost/proxy.py
sed -n '/^\[Unit\]$/,/^WantedBy=/p' "$RUN/proxy-unit.txt" >/etc/systemd/system/clihost-proxy.service
check "the proxy's unit is the guide's (User=clihost, systemd's KillMode)" \
  "grep -qx 'User=clihost' /etc/systemd/system/clihost-proxy.service && ! grep -q KillMode /etc/systemd/system/clihost-proxy.service"
echo "$T1 main" >"$W/proxy.target"
systemctl daemon-reload
systemctl start clihost-proxy.service
if wait_for 60 has_session "$T1" main; then ok "the proxy's connection started $T1's session jail"
else bad "the proxy's connection started $T1's session jail" "$(printable "$W/conn-proxy.log"); $(journalctl -q -b -t clihost-jail | tail -n 3)"; fi
wait_for 20 screen_has proxy "$T1@" || bad "the tenant's prompt" "$(printable "$W/conn-proxy.log")"
type_into proxy 'echo BEFORE_$((6*7)) $(id -un) $(tty)'
shows 20 proxy "BEFORE_42 $T1 /dev/pts/" "typed into $T1's shell, on a pseudo-terminal, as $T1"
supervisor_of "$T1" >"$STATE/sup1"
equals "$T1's supervisor runs the supervisor program, not the setuid helper" \
  "$(readlink "/proc/$(cat "$STATE/sup1")/exe")" "$SUPERVISOR"
equals "$T1's supervisor was started by PID 1 (its parent)" \
  "$(awk '$1 == "PPid:" { print $2 }' "/proc/$(cat "$STATE/sup1")/status")" 1
equals "$T1's supervisor is its service's main process" \
  "$(systemctl show -P MainPID "$(unit_of "$T1")")" "$(cat "$STATE/sup1")"
equals "$T1's supervisor is in its service's own leaf" \
  "$(sed -n 's/^0:://p' "/proc/$(cat "$STATE/sup1")/cgroup")" "/clihost.slice/clihost-jail.slice/$(unit_of "$T1")/supervisor"
connect t2 "$T2" main
wait_for 60 has_session "$T2" main && ok "$T2's session jail started (a second tenant)" \
  || bad "$T2's session jail started" "$(printable "$W/conn-t2.log")"
wait_for 20 screen_has t2 "$T2@"
type_into t2 'echo T2_$((6*7)) $(id -un)'
shows 20 t2 "T2_42 $T2" "typed into $T2's shell"
