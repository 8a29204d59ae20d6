# tests/host/guest/lib.sh: sourced by every step of the VM test (run as root
# in the guest by run_steps.sh). A step prints "ok - WHAT" or "FAIL - WHAT:
# WHY" per check; a failure is recorded in $STATE/failed, so the run fails
# at its end whatever the later steps do. State a later step needs (across a
# reboot too) goes to files under $STATE (the run's 9p directory).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8
RUN=/run/vm                 # the run's directory, shared with the host
STATE=$RUN/state
L=/usr/local/lib/ctj-vm     # the test's tools in the guest (ptydrive, forkloop, memhog)
W=/run/ctj-vm               # the connections' screens and what is typed: the proxy user's
HELPER=/usr/libexec/clihost-jail/clihost-jail
CONF=/etc/clihost-jail/jail.conf
PROXY=clihost               # the proxy user (install/clihost/README.md, "The proxy user")
T1=ctjalice T2=ctjbob       # the two tenants
MEM_MAX_MIB=128 TASKS_MAX=48
# `check` as the proxy: 1 while the proxy could run it (exit 0). `check` is
# root's now (the admin program, clihost-jail-admin): step 03 asserts that
# the setuid helper refuses the proxy, with its reason.
CHECK_AS_PROXY=${CHECK_AS_PROXY:-0}
ADMIN=/usr/libexec/clihost-jail/clihost-jail-admin
SUPERVISOR=/usr/libexec/clihost-jail/clihost-jail-supervisor
mkdir -p "$STATE"
getent passwd "$PROXY" >/dev/null && install -d -m 0755 -o "$PROXY" -g clihost "$W"

ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1${2:+: $2}"; echo "$STEP: $1" >>"$STATE/failed"; }
check() { if eval "$2"; then ok "$1"; else bad "$1" "${3:-}"; fi; }
equals() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1" "expected '$3', got '$2'"; fi; }
wait_for() {  # wait_for SECONDS COMMAND...: true once COMMAND succeeds
  local end=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.2; done
}
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
dead() { ! alive "$1"; }
printable() { tr -cd '[:print:]\n' <"$1" | tail -n "${2:-3}"; }
as_proxy() { runuser -u "$PROXY" -- "$@"; }
uid_of() { id -u "$1"; }
unit_of() { echo "clihost-jail-$(uid_of "$1").service"; }  # the tenant's supervisor, started by PID 1
cg_of() { echo "/sys/fs/cgroup/clihost.slice/clihost-jail.slice/$(unit_of "$1")"; }  # a-b.slice nests in a.slice
# The tenant's JSON line of `list --json`, and one field of it.
list_line() { "$HELPER" list --json 2>/dev/null | grep "\"tenant\": \"$1\""; }
list_field() { list_line "$1" | sed -n "s/.*\"$2\": \([^,}]*\).*/\1/p"; }
supervisor_of() { list_field "$1" supervisor; }
has_session() { list_line "$1" | grep -q "\"sessions\": \[[^]]*\"$2\""; }
# A connection as ttyd makes it: the helper on a new pseudo-terminal, as the
# proxy; its screen goes to $W/conn-NAME.log, and what type_into NAME TEXT
# writes to $W/type-NAME is typed into it (ptydrive). Runs in the background.
connect() {  # connect NAME TENANT SESSION
  rm -f "$W/type-$1" "$W/conn-$1.log"
  as_proxy env TERM=xterm-256color "$L/ptydrive" "$W/conn-$1.log" "$W/type-$1" \
    "$HELPER" run --user "$2" --session "$3" </dev/null >/dev/null 2>&1 &
  echo $! >"$STATE/conn-$1.pid"
}
type_into() { printf '%s\r' "$2" >"$W/type-$1.tmp" && mv "$W/type-$1.tmp" "$W/type-$1"; }
screen_has() { grep -qa -- "$2" "$W/conn-$1.log" 2>/dev/null; }  # screen_has NAME TEXT
shows() {  # shows SECONDS NAME TEXT WHAT: a check that the screen shows TEXT in time
  if wait_for "$1" screen_has "$2" "$3"; then ok "$4"; else bad "$4" "not on the screen: $(printable "$W/conn-$2.log")"; fi
}
# Everything of a tenant: processes of its uid, its unit, its cgroup.
tenant_procs() { pgrep -u "$(uid_of "$1")" | wc -l; }
# Every path outside the volatile trees, with its type (install vs purge).
snapshot() {
  find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /var/log \
    -o -path /var/cache -o -path /var/lib/dpkg -o -path /var/lib/systemd -o -path /var/tmp -o -path /home \
    -o -path /usr/local/lib/ctj-vm -o -path /var/lib/private -o -path /var/lib/apt \) -prune -o -printf '%y %p\n' | LC_ALL=C sort
}
