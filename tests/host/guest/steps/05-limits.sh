# 5. The tenant's unit and leaves carry [limits] and enforce them: the service
#    gets the limits plus the net leaf's share and the supervisor's 64 MiB /
#    64 tasks, the jails leaf
#    memory.max / pids.max; an allocation past memory_max is OOM-killed inside
#    jails while the session lives (the same tmux server; the terminal shows
#    the supervisor's OOM notice); a fork loop stops at tasks_max.
S=$(unit_of "$T1") CG=$(cg_of "$T1")
equals "the service is active, delegated, in clihost-jail.slice" \
  "$(for p in ActiveState Delegate Slice; do systemctl show -P $p "$S"; done | tr '\n' ' ')" "active yes clihost-jail.slice "
# The net leaf's share: an eighth of memory_max, at least 32M.
NET_MIB=$((MEM_MAX_MIB / 8 > 32 ? MEM_MAX_MIB / 8 : 32))
equals "the service's MemoryMax (memory_max + the net leaf's ${NET_MIB}M + 64M)" "$(systemctl show -P MemoryMax "$S")" $(((MEM_MAX_MIB + NET_MIB + 64) << 20))
equals "net/memory.max (slirp4netns's share)" "$(cat "$CG/net/memory.max")" $((NET_MIB << 20))
check "slirp4netns runs in the net leaf" "grep -q '/net\$' /proc/\$(pgrep -u $T1 -x slirp4netns | head -n 1)/cgroup"
equals "the service's TasksMax (tasks_max + 64)" "$(systemctl show -P TasksMax "$S")" $((TASKS_MAX + 64))
equals "jails/memory.max" "$(cat "$CG/jails/memory.max")" $((MEM_MAX_MIB << 20))
equals "jails/pids.max" "$(cat "$CG/jails/pids.max")" "$TASKS_MAX"
check "the service hands memory and pids down to its leaves" \
  "grep -qw memory '$CG/cgroup.subtree_control' && grep -qw pids '$CG/cgroup.subtree_control'" "$(cat "$CG/cgroup.subtree_control")"
equals "the service itself holds no process (v2: no internal processes)" "$(wc -l <"$CG/cgroup.procs")" 0
SUP=$(cat "$STATE/sup1")
oom_before=$(sed -n 's/^oom_kill //p' "$CG/jails/memory.events")
TMUXS=$(pgrep -u "$(uid_of "$T1")" -x 'tmux: server')
type_into proxy "$L/memhog $((MEM_MAX_MIB * 3)); echo MEMHOG_EXIT_\$?"
shows 60 proxy "MEMHOG_EXIT_137" "memhog of $((MEM_MAX_MIB * 3)) MiB is killed (SIGKILL) in the session's shell"
check "memhog did not get its memory" "! screen_has proxy 'memhog: survived'"
oom=$(sed -n 's/^oom_kill //p' "$CG/jails/memory.events")
check "the OOM kill is the jails leaf's (jails/memory.events oom_kill $oom_before -> $oom)" "[ '${oom:-0}' -gt '${oom_before:-0}' ]"
check "the supervisor lives after the OOM kill" "alive $SUP && [ \"\$(supervisor_of $T1)\" = $SUP ]"
# The session outlives it (SECURITY.md row 50): the same tmux server, and
# the supervisor's one line on the terminal.
check "the tmux server survives the OOM kill (pid $TMUXS)" \
  "[ -n '$TMUXS' ] && [ \"\$(pgrep -u $(uid_of "$T1") -x 'tmux: server')\" = '$TMUXS' ]"
shows 20 proxy "clihost-jail: the OOM killer ended" "the terminal shows the supervisor's OOM notice"
type_into proxy 'echo AFTER_OOM_$((6*7))'
shows 20 proxy AFTER_OOM_42 "the session's shell lives after the OOM kill"
# The loop holds its children (120 s) until the count is taken, then ends.
type_into proxy "$L/forkloop 400 120"
shows 60 proxy "forkloop: refused after" "a fork loop in the session is refused a fork"
# RLIMIT_NPROC (also tasks_max, per uid) counts the tenant's processes in
# the supervisor's leaf (the watchers) as well: jails + those make
# tasks_max at the refusal. Counted after it: a task of the tenant's that
# has ended since (a jail's setup, slow under TCG) leaves fewer, never more.
watchers=0
for p in $(cat "$CG/supervisor/cgroup.procs"); do
  [ "$(stat -c %u "/proc/$p" 2>/dev/null)" = "$(uid_of "$T1")" ] && watchers=$((watchers + 1))
done
n=$(($(cat "$CG/jails/pids.current") + watchers))
check "the fork loop holds the jails and the $watchers watchers at most at tasks_max ($n of $TASKS_MAX)" \
  "[ $n -le $TASKS_MAX ] && [ $n -ge $((TASKS_MAX - 10)) ]"
echo "   $(tr -cd '[:print:]\n' <"$W/conn-proxy.log" | grep -o 'forkloop: refused after [^\r]*' | tail -n 1)"
pkill -KILL -u "$(uid_of "$T1")" -x forkloop
check "the fork loop's children are gone after it" "wait_for 20 sh -c '! pgrep -u $(uid_of "$T1") -x forkloop >/dev/null'"
