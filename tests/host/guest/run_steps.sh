#!/bin/bash
# tests/host/guest/run_steps.sh: the VM test's script in the guest (root,
# systemd as PID 1). Runs each step of $RUN/steps (NN-name.sh, in order; the
# host copies tests/host/guest/steps there, less those it leaves out), each
# in a bash of its own with lib.sh sourced. A step that asks for a reboot
# (it calls request_reboot) ends this boot: the runner reboots the guest and
# runs this script again, which resumes at the next step ($STATE/next).
# Exits 1 if any check of any step failed.
. /run/vm/lib.sh
next=$(cat "$STATE/next" 2>/dev/null || echo 0)
echo "== boot $(($(cat "$STATE/boots" 2>/dev/null || echo 0) + 1)): $(uname -r), $(systemctl --version | head -n 1), uptime $(cut -d' ' -f1 /proc/uptime) s"
echo $(($(cat "$STATE/boots" 2>/dev/null || echo 0) + 1)) >"$STATE/boots"
install -d "$L" && install -m 0755 "$RUN"/bin/* "$L/"   # ptydrive, forkloop, memhog (built on the host)
mapfile -t steps < <(ls "$RUN/steps" | grep -E '^[0-9]+-[a-z0-9-]+\.sh$' | sort)
for ((i = next; i < ${#steps[@]}; i++)); do
  s=${steps[$i]}
  t=$(date +%s.%N)
  echo "== step ${s%.sh}"
  STEP=${s%.sh} bash -c '. /run/vm/lib.sh; request_reboot() { touch /run/vm/reboot; }; . "$1"' step "$RUN/steps/$s" 2>&1
  rc=$?
  [ $rc = 0 ] || echo "${s%.sh}: exit $rc" >>"$STATE/failed"
  echo "== step ${s%.sh}: $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }')$([ $rc = 0 ] || echo " (exit $rc)")"
  echo $((i + 1)) >"$STATE/next"
  if [ -e "$RUN/reboot" ]; then echo "== rebooting"; exit 0; fi
done
if [ -s "$STATE/failed" ]; then
  echo "== failed:"; sed 's/^/   /' "$STATE/failed"; exit 1
fi
echo "== every step passed"
exit 0
