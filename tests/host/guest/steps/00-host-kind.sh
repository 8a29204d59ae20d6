# The guest is the host kind under test: systemd as PID 1 on one unified
# cgroup v2 hierarchy with the controllers the limits need.
equals "PID 1 is systemd" "$(cat /proc/1/comm)" systemd
equals "/sys/fs/cgroup is cgroup2fs (pure v2, no hybrid)" "$(stat -fc %T /sys/fs/cgroup)" cgroup2fs
check "no cgroup v1 hierarchy is mounted" "! awk '\$3 == \"cgroup\" { found = 1 } END { exit !found }' /proc/mounts" \
  "$(awk '$3 == "cgroup"' /proc/mounts | head -n 2)"
check "memory and pids are v2 controllers" \
  "grep -qw memory /sys/fs/cgroup/cgroup.controllers && grep -qw pids /sys/fs/cgroup/cgroup.controllers" \
  "$(cat /sys/fs/cgroup/cgroup.controllers)"
state=$(systemctl is-system-running)
check "systemd is running (is-system-running: $state)" "[ '$state' = running ] || [ '$state' = degraded ]"
[ "$state" = degraded ] && systemctl --failed --no-legend --plain | sed 's/^/   failed unit: /'
echo "   $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r), $(systemctl --version | head -n 1)"
echo "   boot: $(systemd-analyze 2>/dev/null | head -n 1)"
