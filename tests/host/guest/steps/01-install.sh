# 1. Install, as README says for a packaged install: dpkg -i of the .deb
#    built from this tree (its dependencies are in the image: the guest has
#    no network). Before it, a listing of the file system, which the removal
#    step compares with what is left after dpkg -P.
snapshot >"$STATE/paths.before"
deb=$(ls "$RUN"/deb/old/clihost-jail_*.deb)
if dpkg -i "$deb" >"$STATE/install.log" 2>&1; then ok "dpkg -i $(basename "$deb")"; else bad "dpkg -i" "$(tail -n 5 "$STATE/install.log")"; fi
equals "the helper is 4750 root:clihost (postinst's statoverride)" "$(stat -c '%a %U:%G' "$HELPER")" "4750 root:clihost"
equals "the supervisor program is 700 root:root, not setuid" "$(stat -c '%a %U:%G' "$SUPERVISOR")" "700 root:root"
equals "the admin program (check, print) is 755 root:root, not setuid" "$(stat -c '%a %U:%G' "$ADMIN")" "755 root:root"
check "postinst created the groups clihost, clihost-tenants, clihost-jail-net" \
  "getent group clihost && getent group clihost-tenants && getent group clihost-jail-net >/dev/null"
check "postinst created no user (the operator creates the proxy user)" "! getent passwd clihost >/dev/null"
equals "clihost-jail-nft.service is enabled" "$(systemctl is-enabled clihost-jail-nft.service)" enabled
equals "clihost-jail-nft.service is active" "$(systemctl is-active clihost-jail-nft.service)" active
check "the host-address rules are loaded" "nft list table inet clihost_jail >/dev/null 2>&1"
check "the slice is installed" "systemctl cat clihost-jail.slice >/dev/null 2>&1"
