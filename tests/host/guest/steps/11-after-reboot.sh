# 9b. After the reboot: clihost-jail-nft.service loaded the host-address
#     rules before multi-user.target (which the proxy's unit is wanted by),
#     so before a proxy can start a jail; nothing started a jail by itself;
#     a jail starts now (network = isolated needs the rules).
check "this is a new boot" "[ \"\$(cat /proc/sys/kernel/random/boot_id)\" != \"\$(cat $STATE/boot_id)\" ]"
equals "clihost-jail-nft.service is active after the boot" "$(systemctl is-active clihost-jail-nft.service)" active
check "the host-address rules are loaded" "nft list table inet clihost_jail >/dev/null 2>&1"
check "multi-user.target is ordered after clihost-jail-nft.service" \
  "systemctl show -P After multi-user.target | tr ' ' '\n' | grep -qx clihost-jail-nft.service"
nft_at=$(systemctl show -P ActiveEnterTimestampMonotonic clihost-jail-nft.service)
mu_at=$(systemctl show -P ActiveEnterTimestampMonotonic multi-user.target)
check "the rules were loaded before multi-user.target was reached ($nft_at <= $mu_at us)" "[ '$nft_at' -gt 0 ] && [ '$nft_at' -le '$mu_at' ]"
equals "no session jail was started by the boot (list)" "$("$HELPER" list 2>&1)" ""
equals "no clihost-jail unit after the boot" "$(systemctl list-units --all --no-legend 'clihost-jail-[0-9]*' 'clihost-jail-hold-*' | wc -l)" 0
equals "no process of a tenant after the boot" "$(($(tenant_procs "$T1") + $(tenant_procs "$T2")))" 0
connect up "$T1" main
if wait_for 60 has_session "$T1" main; then ok "a session jail (network = isolated) starts after the reboot"
else bad "a session jail starts after the reboot" "$(printable "$W/conn-up.log")"; fi
wait_for 20 screen_has up "$T1@"
type_into up 'echo UP_$((6*7))'
shows 20 up UP_42 "typed into the session after the reboot"
supervisor_of "$T1" >"$STATE/sup-up"
