# The systemd suite (tests/systemd/inside.sh, the runc suite's checks) on
# this host kind: limits read back and enforced, the service's start by PID 1 and a
# name taken, the lock holder's scope, the caller's frozen cgroup (v2's
# cgroup.freeze). With its own policy, tenants and stand-in proxy, as in
# run_in_runc.sh; the e2e policy is put back afterwards.
S=$RUN/systemd
cp -p "$CONF" "$STATE/jail.conf.e2e"
install -m 0644 "$S/suite.conf" "$CONF"
install -m 0644 "$S/ctj-proxy.service" /etc/systemd/system/ctj-proxy.service
install -d /usr/local/lib/ctj-sd
install -m 0755 "$L/ptydrive" "$L/forkloop" "$L/memhog" "$S/inside.sh" /usr/local/lib/ctj-sd/
useradd -m -u 1500 -G clihost-tenants -s /bin/bash ctj-sdt && useradd -m -u 1501 -G clihost-tenants -s /bin/bash ctj-sdu
systemctl daemon-reload
CTJ_SLOW=4 /usr/local/lib/ctj-sd/inside.sh; rc=$?   # its waits 4 times longer: TCG
equals "the systemd suite's checks (inside.sh) pass" "$rc" 0
systemctl stop ctj-proxy.service 2>/dev/null
"$HELPER" stop --user ctj-sdt >/dev/null 2>&1
userdel -r ctj-sdt >/dev/null 2>&1; userdel -r ctj-sdu >/dev/null 2>&1
rm -rf /usr/local/lib/ctj-sd /etc/systemd/system/ctj-proxy.service /run/ctj-sd
systemctl daemon-reload
install -m 0644 "$STATE/jail.conf.e2e" "$CONF"
