# 8. stop (as the proxy) leaves no process, no unit and no cgroup of either tenant.
systemctl stop clihost-proxy.service
for t in "$T1" "$T2"; do
  out=$(as_proxy "$HELPER" stop --user "$t" 2>&1); rc=$?
  equals "stop --user $t exits 0 ($out)" "$rc" 0
  gone() { [ "$(tenant_procs "$1")" = 0 ] && ! systemctl is-active -q "$(unit_of "$1")" && [ ! -e "$(cg_of "$1")" ]; }
  check "nothing of $t is left: process, unit, cgroup" "wait_for 10 gone $t" \
    "processes: $(pgrep -u "$(uid_of "$t")" -a | head -n 3 | tr '\n' ' '); unit: $(systemctl show -P ActiveState "$(unit_of "$t")"); cgroup: $(ls -d "$(cg_of "$t")" 2>&1)"
done
equals "no tenant's unit is loaded (clihost-jail-UID.*, clihost-jail-hold-*)" "$(systemctl list-units --all --no-legend 'clihost-jail-[0-9]*' 'clihost-jail-hold-*' | wc -l)" 0
equals "list is empty" "$("$HELPER" list 2>&1)" ""
