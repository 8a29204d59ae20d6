# 7. systemctl restart of the proxy's service (systemd's KillMode): its
#    connection ends, the tenant's work lives on; the control (a process the
#    proxy started itself) dies; the restarted proxy reattaches.
SUP=$(cat "$STATE/sup1")
CONTROL=$(cat "$W/control.pid") FRONT=$(systemctl show -P MainPID clihost-proxy.service)
check "control: the proxy's own process runs" "alive $CONTROL"
type_into proxy 'sleep 100000 & echo JOB_$((6*7)) $!'
wait_for 20 screen_has proxy JOB_42
JOB=$(tr -cd '[:print:]\n' <"$W/conn-proxy.log" | sed -n 's/.*JOB_42 \([0-9][0-9]*\).*/\1/p' | tail -n 1)
check "a job of the tenant runs (pid ${JOB:-none})" "[ -n '$JOB' ] && pgrep -u $(uid_of "$T1") -x sleep >/dev/null"
mv "$W/conn-proxy.log" "$W/conn-proxy.before"   # the old connection writes on there
systemctl restart clihost-proxy.service
check "control: the proxy's own process died on restart" "wait_for 10 dead $CONTROL" "pid $CONTROL alive"
check "the old connection's front ended" "dead $FRONT"
check "the supervisor survived the restart" "alive $SUP"
check "the tenant's job survived the restart" "pgrep -u $(uid_of "$T1") -x sleep >/dev/null"
shows 30 proxy BEFORE_42 "the restarted proxy reattached to the same screen"
