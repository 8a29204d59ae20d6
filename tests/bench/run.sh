#!/usr/bin/env bash
# tests/bench/run.sh: launch-cost, concurrency, memory and teardown benchmark of
# clihost-jail against bare bwrap and today's `runuser -u T -- bwrap` chain,
# and of session jails (reconnect, first connection, memory) against plain tmux.
#
#   sudo tests/bench/run.sh [--quick] [--keep-logs] [--profile]
#   sudo tests/bench/run.sh --scale [N] [--keep-logs]
#
#   --quick      CI smoke: fewer runs, N=30 across 5 tenants (about a minute)
#   --scale [N]  only the scale stage (issue 24; not in CI): N tenants (default
#                100), each with a session jail (network = isolated, PAM on)
#                and one attached client, started one after another by the
#                caller through the setuid helper on a pty; start times,
#                `list` of all, memory, `stop` of all at once, leftovers
#                (tests/bench/scalebench.py). Needs slirp4netns, the group
#                clihost-jail-net, the nft table inet clihost_jail and
#                /dev/net/tun 0666: whatever of these is missing is made for
#                the run and undone after. N up to 2000; the tenants'
#                accounts are made and removed in one go each
#                (tests/bench/accounts.py: useradd/userdel take ~1 s each
#                with hundreds of accounts). At N=1000: 16,000 processes
#                (16 per tenant), 3000 ptys, no inotify instance; the limits
#                are checked and none is raised (Debian 12's defaults carry
#                it: pid_max 32768, pty/max 4096, the driver's 2 fds per
#                tenant under ulimit -n); scalebench prints what each host
#                limit holds at N. Exit 1 also when a `list` misses a
#                tenant's session. Results: tests/bench/RESULTS.md.
#   --keep-logs  keep the work directory (latency and scan JSON) under /run
#   --profile    afterwards, where the helper's own time goes: callgrind
#                (installs valgrind) of C and D, and startup-only timings
#
# Runs as root on a Debian 12 host. CLIHOST_JAIL_BIN=/path/to/clihost-jail uses
# an existing build; otherwise the helper is built into a temporary directory.
# Missing tools (hyperfine, python3, bubblewrap, ...) are installed with apt-get.
# Everything created (tenants, their homes and groups, configs under /run, the
# PAM service file if it was absent, the temp build) is removed on exit. An
# installed PAM service file that differs from the repo's is left alone: the run
# happens in a private mount namespace with the repo's file bind-mounted over it.
#
# The helper's session jails keep their state in the runtime directory it
# was built with (`check` names it; a build made here uses
# /run/clihost-jail-bench). Every tenant's session jail is stopped at the end
# and the directory must hold no record of any of them.
#
# Exit status: 0 when every measurement ran, even if a performance target was
# missed (this is a measurement, not a timed test); 1 when something failed to
# run, a concurrent launch failed, or anything of a jail was left behind.
#
# Latency: every variant interleaved run by run (the order rotated each run;
# jailbench.py latency: one posix_spawn and wait4 per run, at nice -10), in
# ROUNDS rounds of RUNS runs per variant; a ratio's spread is the range of
# its per-round ratios and the p10..p90 of its run-by-run pairs.
#
# Variants, all running `true` as the tenant in the jail, same bwrap argv
# (taken from `clihost-jail print`, so the jail is identical):
#   A0 bwrap exec'd by a process already running as the tenant: the absolute
#      floor, printed for information.
#   A  setpriv --reuid --regid --init-groups -- bwrap ...: the cheapest honest
#      root -> tenant -> bwrap chain (no PAM); the baseline for C.
#   B  runuser -u T -- bwrap ...: today's chain (PAM session via pam.d/runuser).
#   C  clihost-jail run ... -- true, [pam] session = false (exec's bwrap),
#      the production path: the helper installed setuid root (root:GROUP
#      4750, a copy in /var/cache) and started by an unprivileged caller in
#      GROUP (its real ids, as a proxy starts it); its policy is the bench's, at the
#      helper's built-in path (bind-mounted in this run's mount namespace).
#   D  the same with [pam] session = true (watcher, wait, PAM session).
#   Cr, Dr  C and D called by root (CLIHOST_JAIL_CONFIG), for information.
#   Cb, Db  with CLIHOST_BENCH_BASELINE=/path/to/another/clihost-jail (an
#      earlier build, say), Cr and Dr run by that helper, interleaved with the
#      rest: old and new side by side in one run (Cr/Cb, Dr/Db, and its own
#      C/A and PAM overhead). The reconnect part then adds Jr (J called by
#      root) and Jb (the same by that helper, reconnecting to a session jail
#      of its own of a fourth tenant: a build of another record version
#      refuses the other's session jail by design): Jr/Jb. And, on
#      connections of each (3 each, interleaved), typing through the
#      front's terminal relay against the baseline's: a keystroke's echo
#      (20 keys, median ms, Er/Eb) and `cat` of a 4 MiB file (MiB/s, to
#      its end mark on screen).
#      The baseline must be built with the bench's runtime directory
#      (-DCLIHOST_JAIL_RUNTIME_DIR=/run/clihost-jail-bench), as run.sh builds.
#
# Targets (ratios, each printed with its spread: the range of the per-round
# ratios and the p10..p90 of run-by-run pairs within a round):
#   Cw/A <= 1.10 (Cw: C for a tenant whose supervisor already runs, kept
#   by a one-off `sleep` of a third tenant; C, where each run starts the
#   tenant's supervisor, is its first one-off, reported apart); the PAM
#   session's overhead (D - C) / (B - A) <= 1.10 (what
#   our PAM session costs over what runuser's costs), D/B printed beside;
#   private memory per PAM session (the root parent + the watcher, summed
#   Pss over the idle sessions, per session) <= 1 MiB, VmHWM printed beside;
#   first connection F/O <= 1.25; reconnect J/P <= 1.3. The last line is
#   one machine-readable JSON object: `BENCH {...}`.
#
# Session jails, each connection on a new pty the way ttyd makes one (SIGHUP
# and the master closed on disconnect), timed from fork to the tenant's
# prompt on screen (a unique PS1 in the tenants' ~/.profile), PAM on:
#   reconnect  J: `clihost-jail run --user T --session S` (setuid, run by
#              the caller) with T's session jail running, against P: `tmux -S SOCK attach -t S` exec'd as T
#              on a tmux server T started outside any jail; J0: the attach
#              jail's bwrap argv exec'd as T (the floor of any jail, info),
#              as an attach runs it: without --unshare-net (it joins the
#              tenant's empty namespace, which its session jail holds).
#   first      no session jail: its start plus the attach (`stop` between
#              runs), against a one-off jail running `tmux new-session` (the
#              launch model before session jails) and a plain `tmux
#              new-session` as T (kill-server between runs).
#   memory     MEM_SESSIONS idle session jails by process, and one attach each.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
QUICK=0
KEEP_LOGS=0
PROFILE=0
SCALE=0
ARGS=("$@")
for ((k = 0; k < ${#ARGS[@]}; k++)); do
    arg=${ARGS[k]}
    case "$arg" in
        --quick) QUICK=1 ;;
        --keep-logs) KEEP_LOGS=1 ;;
        --profile) PROFILE=1 ;;
        --scale)
            SCALE=100
            if [[ ${ARGS[k + 1]:-} =~ ^[0-9]+$ ]]; then SCALE=${ARGS[k + 1]}; k=$((k + 1)); fi
            ((SCALE >= 2 && SCALE <= 2000)) || { echo "run.sh: --scale N: 2..2000" >&2; exit 2; } ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "run.sh: unknown argument $arg" >&2; exit 2 ;;
    esac
done

if ((QUICK)); then
    ROUNDS=2 RUNS=5 WARMUP=2           # latency: rounds x runs per variant, variants interleaved run by run
    CONC_N=30 CONC_TENANTS=5           # concurrency
    MEM_SESSIONS=3                     # idle sessions for memory + teardown; idle session jails
    SJ_ROUNDS=2 SJ_RUNS=3 SJ_FIRST=2   # session jails: rounds x reconnects / first connections per variant
else
    ROUNDS=10 RUNS=20 WARMUP=3
    CONC_N=200 CONC_TENANTS=20
    MEM_SESSIONS=10
    SJ_ROUNDS=10 SJ_RUNS=10 SJ_FIRST=3
fi
CONC_SLEEP=2

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (it creates users and runs the helper as real uid 0)"

# The whole run happens in a private mount namespace: an installed
# /etc/pam.d/clihost-jail that differs from the repo's is never overwritten
# (other users of this host may rely on it), the repo's file is bind-mounted
# over it; and the policy the setuid helper reads (its built-in path, which a
# setuid run cannot override) is the bench's, bind-mounted over whatever is
# installed there.
PAM_FILE=/etc/pam.d/clihost-jail
if [[ -z ${CLIHOST_BENCH_PRIVATE_NS:-} ]]; then
    command -v unshare >/dev/null || die "unshare (util-linux) is needed"
    CLIHOST_BENCH_PRIVATE_NS=1 exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
fi

# ------------------------------------------------------------------ cleanup
WORK=""
BUILD_DIR=""
BIN=""
RUNTIME_DIR=""
TENANTS=()
TENANT_UIDS=()
CREATED_GROUP=""
CALLER=""          # the unprivileged caller of the setuid helper (the proxy's role)
CALLER_GROUP=""    # its group, the setuid binary's group (mode 4750)
SUID_DIR=""        # where the setuid copy of the helper lives
CONF_CREATED=()    # directories of the built-in policy path the bench created (removed on exit)
CONF_PATH=""
PAM_ACTION=""   # "" untouched, "installed" (remove on exit), "bind-mounted" (private namespace)
NET_GROUP_CREATED=""   # --scale: what it made for network = isolated (undone on exit)
NFT_LOADED=""
TUN_MODE=""
STUB_PLACED=""   # the attach stub, if this run installed it (removed on exit)
PROGRAMS_PLACED=()   # the supervisor and admin programs, the OOM preload, if this run installed them
cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    # Session jails have a root supervisor: end them the helper's way first.
    local t
    if [[ -n $BIN && -x $BIN && -n $WORK ]]; then
        for t in "${TENANTS[@]}"; do
            (cd "$WORK" && env -i PATH=/usr/bin:/bin CLIHOST_JAIL_CONFIG="$WORK/pam.conf" \
                timeout 30 "$BIN" stop --user "$t") >/dev/null 2>&1
        done
    fi
    # Kill what is still running as our tenants (only our own, freshly
    # created uids), by pid.
    if ((${#TENANT_UIDS[@]})); then
        local pid uid u
        for pid in /proc/[0-9]*; do
            pid=${pid#/proc/}
            uid=$(awk '/^Uid:/{print $2; exit}' "/proc/$pid/status" 2>/dev/null) || continue
            for u in "${TENANT_UIDS[@]}"; do
                [[ $uid == "$u" ]] && kill -KILL "$pid" 2>/dev/null
            done
        done
        sleep 0.2
    fi
    local placed
    for placed in "${PROGRAMS_PLACED[@]}"; do rm -f "$placed"; done
    [[ -n $STUB_PLACED ]] && rm -f "$STUB_PLACED" && rmdir "$(dirname "$STUB_PLACED")" 2>/dev/null
    # The helper never removes a tenant's flock file; these tenants are gone.
    if [[ -n $RUNTIME_DIR && -d $RUNTIME_DIR ]]; then
        local u
        for u in "${TENANT_UIDS[@]}"; do rm -f "$RUNTIME_DIR/$u.lock"; done
    fi
    # --scale: the tenants' accounts go in one rewrite of each account file
    # (tests/bench/accounts.py), as they came; userdel takes ~1 s each.
    ((SCALE && ${#TENANTS[@]})) && { "$PY" "$HERE/accounts.py" remove "$PREFIX" || log "cleanup: accounts.py remove failed"; }
    for t in "${TENANTS[@]}"; do
        if ! ((SCALE)); then
            userdel "$t" >/dev/null 2>&1 || log "cleanup: userdel $t failed"
            getent group "$t" >/dev/null && groupdel "$t" >/dev/null 2>&1
        fi
        [[ -d /home/$t ]] && rm -rf --one-file-system "/home/$t"
        rm -f "/var/mail/$t"
    done
    [[ -n $CREATED_GROUP ]] && groupdel "$CREATED_GROUP" >/dev/null 2>&1
    [[ -n $CALLER ]] && { userdel "$CALLER" >/dev/null 2>&1 || log "cleanup: userdel $CALLER failed"; }
    [[ -n $CALLER_GROUP ]] && groupdel "$CALLER_GROUP" >/dev/null 2>&1
    [[ -n $SUID_DIR && -d $SUID_DIR ]] && rm -rf --one-file-system "$SUID_DIR"
    local k
    ((${#CONF_CREATED[@]})) && umount "$(dirname "$CONF_PATH")" 2>/dev/null
    for ((k = ${#CONF_CREATED[@]} - 1; k >= 0; k--)); do
        if [[ -d ${CONF_CREATED[k]} ]]; then rmdir "${CONF_CREATED[k]}"; else rm -f "${CONF_CREATED[k]}"; fi
    done
    case "$PAM_ACTION" in
        installed) rm -f "$PAM_FILE" ;;
        bind-mounted) umount "$PAM_FILE" ;;
    esac
    [[ -n $NFT_LOADED ]] && nft delete table inet clihost_jail
    [[ -n $NET_GROUP_CREATED ]] && groupdel "$NET_GROUP_CREATED"
    [[ -n $TUN_MODE ]] && chmod "$TUN_MODE" /dev/net/tun
    if [[ -n $WORK && -d $WORK ]]; then
        if ((KEEP_LOGS)); then log "logs kept in $WORK"; else rm -rf --one-file-system "$WORK"; fi
    fi
    [[ -n $BUILD_DIR && -d $BUILD_DIR ]] && rm -rf "$BUILD_DIR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------- dependencies
APT_UPDATED=0
apt_install() {
    log "installing $*"
    if ((!APT_UPDATED)); then apt-get update -qq >/dev/null; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
        die "apt-get install $* failed"
}
need() {  # need COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    apt_install "$2"
    command -v "$1" >/dev/null 2>&1 || die "$2 installed but $1 still missing"
}
need_pkg() { dpkg -s "$1" >/dev/null 2>&1 || apt_install "$1"; }
need hyperfine hyperfine
need /usr/bin/python3 python3
need /usr/bin/bwrap bubblewrap
need setpriv util-linux
need runuser util-linux
need useradd passwd
need /usr/bin/tmux tmux
PY=/usr/bin/python3
JB="$HERE/jailbench.py"

BIN=${CLIHOST_JAIL_BIN:-}
if [[ -z $BIN ]]; then
    need cmake cmake
    need g++ g++
    need pkg-config pkg-config
    for dev in libspdlog-dev libfmt-dev libcap-ng-dev libpam0g-dev; do need_pkg "$dev"; done
    BUILD_DIR=$(mktemp -d /tmp/clihost-bench-build.XXXXXX)
    log "building the helper into $BUILD_DIR"
    # Its own built-in policy path: the setuid runs read it (bind-mounted or
    # created by the bench), so no real /etc/clihost-jail/jail.conf is touched.
    cmake -S "$REPO" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLIHOST_JAIL_TESTS=OFF \
        -DCLIHOST_JAIL_RUNTIME_DIR=/run/clihost-jail-bench -DCLIHOST_JAIL_CONFIG=/etc/clihost-jail-bench/jail.conf \
        -DCLIHOST_JAIL_ATTACH_STUB=/usr/local/libexec/clihost-jail-bench/clihost-jail-attach \
        -DCLIHOST_JAIL_SUPERVISOR=/usr/local/libexec/clihost-jail-bench/clihost-jail-supervisor \
        -DCLIHOST_JAIL_ADMIN=/usr/local/libexec/clihost-jail-bench/clihost-jail-admin >"$BUILD_DIR/cmake.log" 2>&1 ||
        { tail -20 "$BUILD_DIR/cmake.log" >&2; die "cmake configure failed"; }
    cmake --build "$BUILD_DIR" -j"$(nproc)" >>"$BUILD_DIR/cmake.log" 2>&1 ||
        { tail -20 "$BUILD_DIR/cmake.log" >&2; die "build failed"; }
    BIN=$BUILD_DIR/clihost-jail
fi
[[ -x $BIN ]] || die "helper $BIN is not executable"
BIN=$(readlink -f "$BIN")

# ----------------------------------------------------------------- fixtures
# Configs must sit in root-owned, non-group/world-writable directories all
# the way up, so not under /tmp.
WORK=$(mktemp -d /run/clihost-bench.XXXXXX)
chmod 0755 "$WORK"
mkdir -m 0755 "$WORK/results"
# network = host in every policy here: the floor (A, B) is a bwrap without a
# network namespace of its own; the isolated network's cost is measured
# apart (tests/bench/netbench.py).
printf '[jail]\nallow_caller_command = true\nnetwork = host\n[pam]\nsession = false\n' >"$WORK/nopam.conf"
printf '[jail]\nallow_caller_command = true\nnetwork = host\n[pam]\nsession = true\n' >"$WORK/pam.conf"
chmod 0644 "$WORK"/*.conf

if [[ ! -e $PAM_FILE ]]; then
    install -m 0644 "$REPO/pam/clihost-jail" "$PAM_FILE"; PAM_ACTION=installed
elif ! cmp -s "$PAM_FILE" "$REPO/pam/clihost-jail"; then
    [[ -n ${CLIHOST_BENCH_PRIVATE_NS:-} ]] || die "internal: $PAM_FILE differs but no private mount namespace"
    log "$PAM_FILE differs from the repo's: using the repo's, bind-mounted in this run's private mount namespace"
    install -m 0644 "$REPO/pam/clihost-jail" "$WORK/pam.clihost-jail"   # a snapshot: the repo may change meanwhile
    mount --bind "$WORK/pam.clihost-jail" "$PAM_FILE"; PAM_ACTION=bind-mounted
fi

TENANT_GROUP=clihost-tenants
if ! getent group "$TENANT_GROUP" >/dev/null; then
    groupadd "$TENANT_GROUP"; CREATED_GROUP=$TENANT_GROUP
fi

# Unique names so a concurrent run (or an existing alice/bob) is never touched.
PREFIX="cjb$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
PROMPT="${PREFIX}-ready\$"
NTENANTS=$CONC_TENANTS
((SCALE)) && NTENANTS=$SCALE
log "creating $NTENANTS tenants ${PREFIX}01..$(printf '%02d' "$NTENANTS")"
if ((SCALE)); then
    # All at once (tests/bench/accounts.py): useradd rewrites and syncs the
    # account files once per account, ~1 s each with hundreds of accounts.
    for i in $(seq 1 "$NTENANTS"); do
        t=$(printf '%s%02d' "$PREFIX" "$i")
        [[ ! -e /home/$t ]] || die "/home/$t already exists"
    done
    mapfile -t TENANTS < <(seq -f "${PREFIX}%02g" 1 "$NTENANTS")   # removed on exit by prefix, made or not
    "$PY" "$HERE/accounts.py" add "$PREFIX" "$NTENANTS" "$TENANT_GROUP" >"$WORK/accounts.txt" ||
        die "accounts.py add failed"
    printf "PS1='%s '\n" "$PROMPT" >"$WORK/profile"
    while read -r t uid; do
        install -d -m 0750 -o "$uid" -g "$uid" "/home/$t"
        install -m 0644 -o "$uid" -g "$uid" "$WORK/profile" "/home/$t/.profile"
        TENANT_UIDS+=("$uid")
    done <"$WORK/accounts.txt"
fi
for i in $(seq 1 "$((SCALE ? 0 : NTENANTS))"); do   # one useradd each
    t=$(printf '%s%02d' "$PREFIX" "$i")
    # Never adopt (and later delete) an account or home that is not ours.
    ! getent passwd "$t" >/dev/null && [[ ! -e /home/$t ]] || die "$t or /home/$t already exists"
    # useradd fails rather than waits when another process holds the passwd
    # lock (concurrent test runs): retry a little.
    for try in 1 2 3 4 5 6 7 8 9 10; do
        if useradd --no-create-home --home-dir "/home/$t" --shell /bin/sh --groups "$TENANT_GROUP" \
            --key UID_MIN=20000 --key UID_MAX=59999 "$t" 2>"$WORK/useradd.err"; then
            TENANTS+=("$t")
            break
        fi
        getent passwd "$t" >/dev/null && { TENANTS+=("$t"); die "useradd $t failed half-way"; }
        ((try < 10)) || { cat "$WORK/useradd.err" >&2; die "useradd $t failed"; }
        sleep 0.3
    done
    install -d -m 0750 -o "$t" -g "$t" "/home/$t"
    # The login shell tmux starts reads this: its prompt is what the session
    # jail part waits for ("the prompt is on screen").
    printf "PS1='%s '\n" "$PROMPT" >"$WORK/profile"
    install -m 0644 -o "$t" -g "$t" "$WORK/profile" "/home/$t/.profile"
    TENANT_UIDS+=("$(id -u "$t")")
done
T1=${TENANTS[0]}
UIDS_CSV=$(IFS=,; echo "${TENANT_UIDS[*]}")
NAMES_CSV=$(IFS=,; echo "${TENANTS[*]}")

run_helper() {  # run_helper CONFIG ARGS...: the helper exactly as the bench runs it
    local conf=$1; shift
    (cd "$WORK" && env -i PATH=/usr/bin:/bin CLIHOST_JAIL_CONFIG="$conf" "$BIN" "$@")
}

log "helper: $BIN ($("$BIN" --version))"
# A build of three programs (README, "Three programs") execs the supervisor
# and admin programs by the absolute paths its build named, and its session
# jail's tmux preloads the OOM fork handler beside the stub: where BIN is in
# a build directory, each is installed there from beside BIN unless the same
# file is there already (removed on exit if placed here). An installed helper has
# them installed; a build before the split has none.
if [[ -f $(dirname "$BIN")/CMakeCache.txt ]]; then
    cache_path() { sed -n "s|^$1:STRING=\(/.*\)|\1|p" "$(dirname "$BIN")/CMakeCache.txt" | head -n 1; }
    place() {  # place FILE MODE TARGET
        [[ -n $3 && -e $1 ]] || return 0
        [[ -e $3 ]] && cmp -s "$1" "$3" && return 0
        install -D -o 0 -g 0 -m "$2" "$1" "$3" && PROGRAMS_PLACED+=("$3")
    }
    place "$(dirname "$BIN")/clihost-jail-supervisor" 0700 "$(cache_path CLIHOST_JAIL_SUPERVISOR)"
    place "$(dirname "$BIN")/clihost-jail-admin" 0755 "$(cache_path CLIHOST_JAIL_ADMIN)"
    stub=$(cache_path CLIHOST_JAIL_ATTACH_STUB)
    [[ -n $stub ]] && place "$(dirname "$BIN")/clihost-jail-oom.so" 0644 "$(dirname "$stub")/clihost-jail-oom.so"
fi
# The attach stub its attach jails run (a build with a prepared attach jail
# names it in `check`), from beside the binary, installed where the build
# looks for it unless a file is there already; removed on exit if placed here.
STUB_PATH=$(run_helper "$WORK/nopam.conf" check 2>&1 | sed -n 's|^attach stub: \(FAIL: \)\{0,1\}\(/[^:]*\): .*|\2|p' | head -n 1 || true)
if [[ -n $STUB_PATH && ! -e $STUB_PATH ]]; then
    [[ -x $(dirname "$BIN")/clihost-jail-attach ]] || die "the attach stub is not beside $BIN"
    install -D -m 0755 "$(dirname "$BIN")/clihost-jail-attach" "$STUB_PATH"; STUB_PLACED=$STUB_PATH
fi
# check's exit status also covers the deployment (routes around the jail,
# the audit trail), which a benchmark's throw-away tenants need not pass:
# what matters here is its verdict on the jail itself.
# Its last line names both; only "a jail cannot start (...)" stops the bench.
run_helper "$WORK/nopam.conf" check --user "$T1" >"$WORK/check.txt" 2>&1 || true
CHECK_RESULT=$(grep '^result: ' "$WORK/check.txt" | tail -n 1)
if [[ -z $CHECK_RESULT || $CHECK_RESULT == *"a jail cannot start"* ]] ||
   ! grep -q '^jail trial: ok' "$WORK/check.txt"; then
    cat "$WORK/check.txt" >&2; die "clihost-jail check says no jail can start here"
fi
# The runtime directory this binary was built with, as its `check` names it.
RUNTIME_DIR=$(sed -n 's|^runtime state: \(/[^:]*\): ok.*|\1|p' "$WORK/check.txt")
[[ $RUNTIME_DIR == /* ]] || die "cannot find the runtime directory in clihost-jail check's output"
log "runtime directory: $RUNTIME_DIR"
run_helper "$WORK/pam.conf" run --user "$T1" --session smoke -- true ||
    die "a PAM-session launch of 'true' failed"

# ------------------------------------------- the production path: setuid
# A proxy runs the helper as an unprivileged caller in the helper's group,
# the helper installed setuid root, mode 4750 (as the integration tests and
# the package install it). Not under /run: a nosuid tmpfs on systemd hosts.
CALLER="${PREFIX}c"
CALLER_GROUP="${PREFIX}x"
groupadd "$CALLER_GROUP" || { CALLER_GROUP=""; die "groupadd failed"; }
useradd --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --groups "$CALLER_GROUP" \
    --key UID_MIN=20000 --key UID_MAX=59999 "$CALLER" || { CALLER=""; die "useradd $CALLER failed"; }
CALLER_UID=$(id -u "$CALLER"); CALLER_GID=$(id -g "$CALLER")
SUID_DIR=$(mktemp -d /var/cache/clihost-bench.XXXXXX)
chmod 0755 "$SUID_DIR"
findmnt -no OPTIONS -T "$SUID_DIR" | tr ',' '\n' | grep -x nosuid >/dev/null && die "$SUID_DIR is on a nosuid mount"
SUID_BIN=$SUID_DIR/clihost-jail
install -m 0755 "$BIN" "$SUID_BIN"
chown "root:$CALLER_GROUP" "$SUID_BIN"
chmod 4750 "$SUID_BIN"
install -d -m 0755 -o "$CALLER" -g "$CALLER_GROUP" "$WORK/caller"   # the caller's working directory
# A setuid run reads the policy at its built-in path only (`check` names it).
CONF_PATH=$(env -i PATH=/usr/bin:/bin "$BIN" check 2>/dev/null | sed -n 's|^config: \(/[^:]*\):.*|\1|p') || true
[[ $CONF_PATH == /* ]] || die "cannot find the helper's built-in policy path in its check output"
# The bench's policy lives in a directory of its own, bind-mounted over the
# directory of that path in this run's private mount namespace: a rename or
# removal there by someone else (a concurrent test run rewriting its policy)
# does not reach this view, but its removal of the directory itself detaches
# the mount, so every use checks it again (ensure_suid_conf).
SUID_CONF_DIR=$WORK/policy
install -d -m 0755 "$SUID_CONF_DIR"
SUID_CONF=$SUID_CONF_DIR/$(basename "$CONF_PATH")
ensure_suid_conf() {
    cmp -s "$SUID_CONF" "$CONF_PATH" 2>/dev/null && return 0
    local dir d todo=()
    dir=$(dirname "$CONF_PATH")
    if [[ ! -d $dir ]]; then
        # Created (root-owned, 0755) and removed on exit.
        d=$dir
        while [[ ! -e $d ]]; do todo=("$d" "${todo[@]}"); d=$(dirname "$d"); done
        for d in "${todo[@]}"; do install -d -m 0755 -o root -g root "$d"; CONF_CREATED+=("$d"); done
    fi
    mount --bind "$SUID_CONF_DIR" "$dir" || die "cannot bind the bench's policy over $dir"
    cmp -s "$SUID_CONF" "$CONF_PATH" || die "the setuid helper's policy at $CONF_PATH is not the bench's"
}
suid_conf() {  # suid_conf true|false [NETWORK]: the setuid helper's policy, PAM session on or off
    printf '[callers]\nusers = %s\ngroups = %s\n[jail]\nallow_caller_command = true\nnetwork = %s\n[pam]\nsession = %s\n' \
        "$CALLER" "$CALLER_GROUP" "${2:-host}" "$1" >"$SUID_CONF"
    chmod 0644 "$SUID_CONF"
    ensure_suid_conf
}
log "setuid helper: $SUID_BIN (root:$CALLER_GROUP 4750), caller $CALLER, policy at $CONF_PATH"
as_caller() {  # as_caller CMD...: as the caller, with its groups and an empty environment
    setpriv --reuid="$CALLER_UID" --regid="$CALLER_GID" --init-groups -- env -i PATH=/usr/bin:/bin "$@"
}
suid_conf true
(cd "$WORK/caller" && as_caller "$SUID_BIN" run --user "$T1" --session smoke -- true) ||
    die "a PAM-session launch of 'true' by the setuid helper, called by $CALLER, failed"

# ----------------------------------------------------------- host limits
need_procs=$((CONC_N * 4 + 200))
((SCALE)) && need_procs=$((SCALE * 16 + 200))   # 12 processes per tenant (scalebench.py), and margin
nproc_lim=$(ulimit -u)
pid_max=$(cat /proc/sys/kernel/pid_max)
threads_max=$(cat /proc/sys/kernel/threads-max)
userns_max=$(cat /proc/sys/user/max_user_namespaces)
cg_pids=max
# The pids controller of this process's cgroup: in the v2 hierarchy, or in
# v1's pids hierarchy (hosts differ: tests/integration/conftest.py,
# cgroup_controllers).
for f in "/sys/fs/cgroup$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)/pids.max" \
         "/sys/fs/cgroup/pids$(awk -F: '$2=="pids"{print $3}' /proc/self/cgroup)/pids.max" /sys/fs/cgroup/pids.max; do
    [[ -r $f ]] && { cg_pids=$(cat "$f"); break; }
done
log "limits: RLIMIT_NPROC(root)=$nproc_lim pid_max=$pid_max threads-max=$threads_max" \
    "max_user_namespaces=$userns_max cgroup pids.max=$cg_pids; N=$CONC_N needs ~$need_procs pids" \
    "and $CONC_N user namespaces ($((CONC_N / CONC_TENANTS)) jails x 3 processes per tenant uid)"
((SCALE)) && log "scale: $SCALE tenants need ~$need_procs pids and $((SCALE * 3)) user namespaces"
for lim in "$pid_max" "$threads_max" "$cg_pids"; do
    [[ $lim == max || $lim == unlimited || $lim -ge $need_procs ]] ||
        die "a pid limit ($lim) is below the ~$need_procs the concurrency test needs"
done
((userns_max >= CONC_N)) || die "user.max_user_namespaces=$userns_max < $CONC_N"

# ------------------------------------------------------ scale (--scale N)
if ((SCALE)); then
    # network = isolated, as a tenant gets by default: what it needs on the
    # host, made for this run where missing and undone on exit.
    need /usr/bin/slirp4netns slirp4netns
    need nft nftables
    if ! getent group clihost-jail-net >/dev/null; then
        groupadd --system clihost-jail-net; NET_GROUP_CREATED=clihost-jail-net
    fi
    if ! nft list table inet clihost_jail >/dev/null 2>&1; then
        nft -f "$REPO/install/nftables/clihost-jail.nft"; NFT_LOADED=1
    fi
    [[ -c /dev/net/tun ]] || die "/dev/net/tun is missing"
    tun=$(stat -c %a /dev/net/tun)
    [[ $tun == 666 ]] || { TUN_MODE=$tun; chmod 0666 /dev/net/tun; }
    pty_max=$(cat /proc/sys/kernel/pty/max); pty_nr=$(cat /proc/sys/kernel/pty/nr)
    ((pty_max - pty_nr >= 2 * SCALE + 16)) || die "kernel.pty.max=$pty_max ($pty_nr in use): $SCALE tenants need $((2 * SCALE))"
    nofile=$(ulimit -n)
    ((nofile >= 4 * SCALE + 64)) || die "ulimit -n is $nofile: the driver holds a pty per tenant and more; raise it"
    suid_conf true isolated
    log "scale: $SCALE tenants, each a session jail (network = isolated, PAM on) and one attached client"
    cat /proc/loadavg >"$WORK/loadavg-start.txt"
    rc=0
    nice -n -10 "$PY" "$HERE/scalebench.py" --tenants "$NAMES_CSV" --suid-bin "$SUID_BIN" --caller "$CALLER" \
        --caller-dir "$WORK/caller" --bin "$BIN" --runtime-dir "$RUNTIME_DIR" --marker "$PROMPT" \
        --json-out "$WORK/results/scale.json" --workdir "$WORK/results" || rc=$?
    exit "$rc"
fi

# --------------------------------------------------------- 1. launch latency
cat /proc/loadavg >"$WORK/loadavg-start.txt"
read -r load1 _ </proc/loadavg
if awk -v l="$load1" -v n="$(nproc)" 'BEGIN{exit !(l > n / 4)}'; then
    log "WARNING: load average $load1 on $(nproc) CPUs: other work is running, timings will be noisy" \
        "(compare p10 and CPU time, which suffer less)"
fi
log "1. latency: ${ROUNDS} round(s) x ${RUNS} runs per variant (+${WARMUP} warm-up)"
printed=$(run_helper "$WORK/nopam.conf" print --user "$T1" --session bench -- true)
plan=$(grep '^env -i ' <<<"$printed" | tail -n 1)
eval "set -- $plan"
[[ $1 == env && $2 == -i ]] || die "unexpected print output: $plan"
shift 2
PLAN_ENV=()
while [[ $# -gt 0 && $1 == *=* && $1 != /* ]]; do PLAN_ENV+=("$1"); shift; done
BWRAP_ARGV=("$@")
# A helper whose one-off jail runs the stub, handed `true` and its
# environment (the stub's line): the floor A/B is the same jail with bwrap
# running `true` itself, the environment its own and set after --clearenv,
# as the helper's own plan did before (RUN_ARGV below is compared with the
# printed argv, PRINTED_ARGV).
PRINTED_ARGV=("${BWRAP_ARGV[@]}")
handed=$(sed -n "s/^# then the stub, handed the caller's stdio, execs: //p" <<<"$printed" | tail -n 1)
if [[ -n $handed ]]; then
    eval "set -- $handed"
    [[ $1 == env && $2 == -i ]] || die "unexpected print output: $handed"
    shift 2
    HANDED_ENV=()
    while [[ $# -gt 0 && $1 == *=* && $1 != /* ]]; do HANDED_ENV+=("$1"); shift; done
    [[ $* == true && ${#PLAN_ENV[@]} -eq 0 ]] || die "unexpected handed command in: $handed"
    floor=()
    for w in "${BWRAP_ARGV[@]:0:${#BWRAP_ARGV[@]}-1}"; do
        floor+=("$w")
        if [[ $w == --clearenv ]]; then
            for kv in "${HANDED_ENV[@]}"; do floor+=(--setenv "${kv%%=*}" "${kv#*=}"); done
        fi
    done
    BWRAP_ARGV=("${floor[@]}" true)
    PLAN_ENV=("${HANDED_ENV[@]}")
fi
[[ ${BWRAP_ARGV[0]} == /* && ${BWRAP_ARGV[-1]} == true ]] || die "cannot find the bwrap argv in: $plan"

# The plan may hand bwrap descriptors (--seccomp FD: a BPF program the helper
# writes). To run A/B with the very same flags, capture what the helper really
# passes: a stand-in "bwrap" (root-owned, in $WORK) run by the helper as the
# tenant copies its argv and the program on that fd into the tenant's home.
SECCOMP_FD=""
STATUS_FD=""
for ((i = 1; i < ${#BWRAP_ARGV[@]}; i++)); do
    case "${BWRAP_ARGV[i]}" in
        --) break ;;
        --seccomp|--add-seccomp-fd)
            [[ -z $SECCOMP_FD ]] || die "more than one seccomp fd in the plan: extend the bench"
            SECCOMP_FD=${BWRAP_ARGV[i + 1]} ;;
        # A one-off jail's status pipe (bwrap writes to it): /dev/null serves.
        --json-status-fd) STATUS_FD=${BWRAP_ARGV[i + 1]} ;;
        --file|--bind-data|--ro-bind-data|--userns|--userns2|--pidns|--info-fd|--block-fd|\
        --userns-block-fd|--sync-fd)
            die "the plan passes bwrap a descriptor with ${BWRAP_ARGV[i]}: the bench cannot replay that yet" ;;
    esac
done
cat >"$WORK/bwrap-standin" <<'STANDIN'
#!/bin/bash
# Stand-in for bwrap (bench only): record what the helper would exec bwrap with.
printf '%s\n' "$@" >"CLIHOST_BENCH_HOME/.clihost-bench-argv"
if [ -n "$CLIHOST_BENCH_FD" ]; then eval "cat <&$CLIHOST_BENCH_FD" >"CLIHOST_BENCH_HOME/.clihost-bench-fd"; fi
STANDIN
# The fd number and the tenant's home are written into the stand-in (its
# environment is the plan's: none, where the stub is handed the command's).
sed -i -e "s/\$CLIHOST_BENCH_FD/${SECCOMP_FD}/g" -e "s|CLIHOST_BENCH_HOME|/home/$T1|g" "$WORK/bwrap-standin"
chmod 0755 "$WORK/bwrap-standin"
printf '[jail]\nbwrap = %s\nallow_caller_command = true\nnetwork = host\n[pam]\nsession = false\n' "$WORK/bwrap-standin" >"$WORK/standin.conf"
chmod 0644 "$WORK/standin.conf"
rm -f "/home/$T1/.clihost-bench-argv" "/home/$T1/.clihost-bench-fd"
run_helper "$WORK/standin.conf" run --user "$T1" --session bench -- true || die "the stand-in bwrap run failed"
mapfile -t RUN_ARGV <"/home/$T1/.clihost-bench-argv"
[[ "${RUN_ARGV[*]}" == "${PRINTED_ARGV[*]:1}" ]] ||
    die "print and run disagree on bwrap's arguments: print: ${PRINTED_ARGV[*]:1} / run: ${RUN_ARGV[*]}"
FD_REDIR=()
if [[ -n $SECCOMP_FD ]]; then
    install -m 0644 "/home/$T1/.clihost-bench-fd" "$WORK/seccomp.bpf"
    [[ -s $WORK/seccomp.bpf ]] || die "the helper passed an empty seccomp program on fd $SECCOMP_FD"
    log "the plan passes a seccomp program on fd $SECCOMP_FD ($(stat -c %s "$WORK/seccomp.bpf") bytes): A0/A/B get the same one"
fi
rm -f "/home/$T1/.clihost-bench-argv" "/home/$T1/.clihost-bench-fd"

T1_UID=$(id -u "$T1"); T1_GID=$(id -g "$T1")
# Every variant runs at nice -10 (inherited by the whole chain) so that other
# work on the host disturbs the comparison less; all variants alike.
NICE=(nice -n -10)
HFLOG=$WORK/hyperfine.log   # --profile's start-up timings
# The variants for jailbench's interleaved driver (run by run, paired): the
# argv, the environment, who starts it, the descriptors A0/A/B get on the
# plan's fd numbers (the captured seccomp program; bwrap's status pipe on
# /dev/null, as the helper gives a one-off jail), and for the setuid helper
# the policy it reads at its built-in path.
suid_conf false; cp "$SUID_CONF" "$WORK/suid-nopam.policy"
suid_conf true; cp "$SUID_CONF" "$WORK/suid-pam.policy"
printf '%s\0' "${BWRAP_ARGV[@]}" >"$WORK/bwrap.argv"
printf '%s\0' "${PLAN_ENV[@]}" >"$WORK/plan.env"
BASELINE=""
if [[ -n ${CLIHOST_BENCH_BASELINE:-} ]]; then
    BASELINE=$(readlink -f "$CLIHOST_BENCH_BASELINE")
    [[ -x $BASELINE ]] || die "CLIHOST_BENCH_BASELINE: $CLIHOST_BENCH_BASELINE is not an executable"
    log "baseline helper: $BASELINE ($("$BASELINE" --version))"
    # Jr and Jb attach to one session jail: a baseline keeping its state
    # elsewhere would find none, start a second one on the same socket and
    # leave it running past this run's `stop`.
    (cd "$WORK" && env -i PATH=/usr/bin:/bin CLIHOST_JAIL_CONFIG="$WORK/nopam.conf" "$BASELINE" check --user "$T1") \
        >"$WORK/check-baseline.txt" 2>&1 || true
    BASE_RUNTIME=$(sed -n 's|^runtime state: \(/[^:]*\): ok.*|\1|p' "$WORK/check-baseline.txt")
    [[ $BASE_RUNTIME == "$RUNTIME_DIR" ]] ||
        die "CLIHOST_BENCH_BASELINE keeps its session jails in '${BASE_RUNTIME:-?}', this helper in $RUNTIME_DIR: build the baseline with -DCLIHOST_JAIL_RUNTIME_DIR=$RUNTIME_DIR"
fi
# Cw: C for a tenant whose supervisor already runs (the owner model's usual
# case: a session jail or another jail of the tenant keeps it). Each C run
# starts T1's supervisor, which ends with its one-off; TW's is kept by a
# one-off `sleep` started here, under the same policy, and stopped after.
TW=${TENANTS[2]}
(cd "$WORK" && exec env -i PATH=/usr/bin:/bin CLIHOST_JAIL_CONFIG="$WORK/nopam.conf" "$BIN" run --user "$TW" \
    --session keep -- sleep 100000 </dev/null >"$WORK/keeper.log" 2>&1) &
KEEPER=$!
for _ in $(seq 100); do
    run_helper "$WORK/nopam.conf" list --user "$TW" 2>/dev/null | grep -q "supervisor=" && break
    sleep 0.1
done
run_helper "$WORK/nopam.conf" list --user "$TW" | grep -q "supervisor=" ||
    die "the supervisor of $TW did not come up for the Cw runs: $(cat "$WORK/keeper.log")"
"$PY" - "$WORK" "$T1" "$CALLER" "$BIN" "$SUID_BIN" "${SECCOMP_FD:-}" "${STATUS_FD:-}" "$BASELINE" "$TW" >"$WORK/variants.json" <<'PYEOF'
import json, os, pwd, sys
work, tenant, caller, binary, suid, sfd, tfd, baseline, warm = sys.argv[1:10]
argv = open(f"{work}/bwrap.argv").read().split("\0")[:-1]
penv = dict(e.split("=", 1) for e in open(f"{work}/plan.env").read().split("\0")[:-1])
def ids(name):
    pw = pwd.getpwnam(name)
    return [pw.pw_uid, pw.pw_gid, os.getgrouplist(name, pw.pw_gid)]
fds = {}
if sfd: fds[sfd] = f"{work}/seccomp.bpf"
if tfd: fds[tfd] = "/dev/null"
t = ids(tenant)
run = ["run", "--user", tenant, "--session", "bench", "--", "true"]
plain = {"PATH": "/usr/bin:/bin"}
policy = lambda n: open(f"{work}/suid-{n}.policy").read()
old = [
    {"name": "Cb", "argv": [baseline] + run, "env": dict(plain, CLIHOST_JAIL_CONFIG=f"{work}/nopam.conf")},
    {"name": "Db", "argv": [baseline] + run, "env": dict(plain, CLIHOST_JAIL_CONFIG=f"{work}/pam.conf")},
] if baseline else []
print(json.dumps([
    {"name": "A0", "argv": argv, "env": penv, "fds": fds, "as": t},
    {"name": "A", "argv": ["/usr/bin/setpriv", f"--reuid={t[0]}", f"--regid={t[1]}", "--init-groups", "--"] + argv,
     "env": penv, "fds": fds},
    {"name": "B", "argv": ["/usr/sbin/runuser", "-u", tenant, "--"] + argv, "env": penv, "fds": fds},
    {"name": "C", "argv": [suid] + run, "env": plain, "as": ids(caller), "policy": policy("nopam")},
    {"name": "Cw", "argv": [suid, "run", "--user", warm, "--session", "bench", "--", "true"], "env": plain,
     "as": ids(caller), "policy": policy("nopam")},
    {"name": "D", "argv": [suid] + run, "env": plain, "as": ids(caller), "policy": policy("pam")},
    {"name": "Cr", "argv": [binary] + run, "env": dict(plain, CLIHOST_JAIL_CONFIG=f"{work}/nopam.conf")},
    {"name": "Dr", "argv": [binary] + run, "env": dict(plain, CLIHOST_JAIL_CONFIG=f"{work}/pam.conf")},
] + old))
PYEOF
LAT=$(cd "$WORK" && "${NICE[@]}" "$PY" "$JB" latency --variants "$WORK/variants.json" --policy-file "$SUID_CONF" \
    --rounds "$ROUNDS" --runs "$RUNS" --warmup "$WARMUP") || die "the latency runs did not complete"
echo "$LAT" >"$WORK/latency.json"
run_helper "$WORK/nopam.conf" stop --user "$TW" >/dev/null || die "stop --user $TW (the Cw keeper) failed"
wait "$KEEPER" || true

# ---------------------------------------------------------- 2. concurrency
log "2. concurrency: $CONC_N launches at once across $CONC_TENANTS tenants, sleep $CONC_SLEEP each, PAM on"
scan() { "$PY" "$JB" scan --bin "$BIN" --uids "$UIDS_CSV" --names "$NAMES_CSV" --runtime-dir "$RUNTIME_DIR" "$@"; }
scan >"$WORK/scan-before.json"
"$PY" "$JB" concurrent --n "$CONC_N" --sleep "$CONC_SLEEP" --bin "$BIN" --config "$WORK/pam.conf" \
    --tenants "$NAMES_CSV" --workdir "$WORK" >"$WORK/concurrent.json" || die "the concurrency run did not complete"
# Every helper has exited by now; give the host's init up to 10 s to reap
# re-parented zombies before calling anything a leftover.
scan --settle 10 >"$WORK/scan-after-concurrency.json"

logind_check() {
    if [[ -d /run/systemd/system ]] && command -v loginctl >/dev/null && loginctl list-sessions >/dev/null 2>&1; then
        local n=0 t c
        for t in "${TENANTS[@]}"; do
            c=$(loginctl list-sessions --no-legend 2>/dev/null | awk -v u="$t" '$3==u' | wc -l)
            n=$((n + c))
        done
        echo "$n"
    else
        echo "unavailable"
    fi
}
logind_check >"$WORK/logind-after-concurrency.txt"

# ------------------------------------------------ 3+4. memory and teardown
log "3/4. memory and teardown: $MEM_SESSIONS idle PAM sessions (sleep in the jail), then SIGTERM each"
"$PY" "$JB" sessions --m "$MEM_SESSIONS" --bin "$BIN" --config "$WORK/pam.conf" \
    --tenants "$NAMES_CSV" --workdir "$WORK" >"$WORK/sessions.json" || die "the memory/teardown run did not complete"

# ------------------------------------------------------- 5-7. session jails
# Same nice level as the launch variants; PAM on (the supervisor holds the
# PAM session, every attach runs the account check).
SJ=("${NICE[@]}" "$PY" "$JB")
SJ_OPTS=(--bin "$BIN" --config "$WORK/pam.conf" --marker "$PROMPT")
log "5. session jails, reconnect: ${SJ_ROUNDS} round(s) x ${SJ_RUNS} per variant, to the prompt on a new pty"
# J0 (the floor) replays the attach jail's plan with the same seccomp program
# (captured above); TERM as jailbench gives every connection.
# A build with a prepared attach jail prints its bwrap running the attach
# stub and, after it, what the stub execs: J0 is that jail started fresh
# with the client as bwrap's command (its variables set by bwrap).
ATTACH_PLAN=$(cd "$WORK" && env -i PATH=/usr/bin:/bin CLIHOST_JAIL_CONFIG="$WORK/pam.conf" TERM=xterm-256color \
    "$BIN" print --user "$T1" --session bench | "$PY" -c '
import shlex, sys
lines = sys.stdin.read().splitlines()
bwrap = [l for l in lines if l.startswith("env -i ")][-1]
handed = [l for l in lines if l.startswith("# then the stub, handed the terminal, execs: ")]
if not handed:
    print(bwrap)
    sys.exit(0)
words = shlex.split(bwrap)
client = shlex.split(handed[-1].split(": ", 1)[1])[2:]
at = next(i for i, w in enumerate(client) if w.startswith("/"))
env, command = client[:at], client[at:]
i = words.index("--clearenv") + 1
sets = [x for e in env for x in ["--setenv", *e.split("=", 1)]]
words = words[:2] + env + words[2:i] + sets + words[i:words.index("--") + 1] + command
print(" ".join(shlex.quote(w) for w in words))
')
[[ -s $WORK/seccomp.bpf ]] || die "no seccomp program was captured for the attach jail's floor"
# J is the production path: the setuid helper run by the caller (its policy:
# PAM on, as pam.conf); the session jail itself is started by J's first
# connection.
suid_conf true
"${SJ[@]}" reconnect --tenant "$T1" --session bench --rounds "$SJ_ROUNDS" --runs "$SJ_RUNS" --warmup 2 \
    --plan "$ATTACH_PLAN" --seccomp-file "$WORK/seccomp.bpf" --suid-bin "$SUID_BIN" --caller "$CALLER" \
    ${BASELINE:+--baseline-bin "$BASELINE" --baseline-tenant "${TENANTS[3]}"} "${SJ_OPTS[@]}" >"$WORK/reconnect.json" ||
    die "the reconnect run did not complete"
log "6. session jails, first connection: ${SJ_ROUNDS} round(s) x ${SJ_FIRST} per variant"
"${SJ[@]}" first --tenant "${TENANTS[1]}" --session first --rounds "$SJ_ROUNDS" --runs "$SJ_FIRST" --warmup 1 \
    "${SJ_OPTS[@]}" >"$WORK/first.json" || die "the first-connection run did not complete"
log "7. session jails, memory: $MEM_SESSIONS idle session jails, then one attach each"
"${SJ[@]}" session-memory --m "$MEM_SESSIONS" --tenants "$NAMES_CSV" "${SJ_OPTS[@]}" >"$WORK/session-memory.json" ||
    die "the session-jail memory run did not complete"
# The end of it all: `stop` for every tenant, as a proxy does when a tenant
# is removed; then nothing of any of them may be left (scan below).
: >"$WORK/stop.txt"
for t in "${TENANTS[@]}"; do
    run_helper "$WORK/pam.conf" stop --user "$t" >>"$WORK/stop.txt" 2>&1 || { cat "$WORK/stop.txt" >&2; die "stop --user $t failed"; }
done
scan --settle 10 >"$WORK/scan-final.json"
logind_check >"$WORK/logind-final.txt"

# ------------------------------------------------------------------ report
echo "$LAT" >"$WORK/latency.json"
cat /proc/loadavg >"$WORK/loadavg-end.txt"
rc=0
"$PY" "$JB" report --workdir "$WORK" --quick "$QUICK" || rc=$?

# ---------------------------------------------------------------- profile
# Instruction counts (callgrind, user space only) of the helper's own work up
# to the exec of bwrap (C) / in the waiting parent (D), by the buckets that
# matter for start-up, plus wall-clock cost of start-up alone (--version).
cg_summary() {  # cg_summary LABEL FILE
    local label=$1 f=$2 total
    total=$(awk '/^totals:/{print $2}' "$f")
    printf '  %s: %s instructions (user space) in the helper process\n' "$label" "$total"
    callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null | awk -v total="$total" '
        function show(key, name) {
            if (seen[key]++) return
            printf "    %-56s %9d Ir %5.1f%%\n", name, n, 100 * n / total
        }
        { n = $1; gsub(",", "", n); n += 0 }
        /elf\/rtld.c:_dl_start /                     { show("start", "dynamic linking at start-up (ld.so, -z now)") }
        /elf\/dl-open.c:_dl_open /                   { show("dlopen", "dlopen (NSS and PAM modules)") }
        /:main \[/                                   { show("main", "main()") }
        /clihost::log::init\(\)/                     { show("loginit", "  clihost::log::init (spdlog)") }
        /clihost::validate_tenant\(/                 { show("tenant", "  validate_tenant (NSS lookups, home checks)") }
        /initgroups.c:getgrouplist /                 { show("ggl", "    getgrouplist") }
        /clihost::probe_host\(/                      { show("probe", "  probe_host (parent side; the trial is a fork)") }
        /clihost::PamSession::open\(/                { show("pamopen", "  PamSession::open (pam_start .. pam_open_session)") }
        /clihost::hand_over\(/                       { show("sup", "  hand_over (to the supervisor, wait, relay)") }
        /clihost::start_jail\(/                      { show("exec", "  start_jail (the watcher: drop, verify, bwrap)") }
        /clihost::log::audit\(/                      { show("audit", "  clihost::log::audit (all audit lines)") }
    '
}
if ((PROFILE)); then
    need valgrind valgrind
    need callgrind_annotate valgrind
    log "profile: callgrind of C and D, and start-up cost"
    echo
    echo "profile (callgrind, inclusive instruction counts):"
    # Forked children (the namespace trial) drop to the tenant before they
    # exit and write their own profile, so the output directory must take
    # files from the tenant too; it lives in $WORK.
    CG=$WORK/callgrind
    install -d -m 1777 "$CG"
    for v in C D; do
        conf=$WORK/nopam.conf; [[ $v == D ]] && conf=$WORK/pam.conf
        # --dump-before=execve: C's helper process becomes bwrap, so its
        # profile is written just before that exec (as $v.PID.1).
        # D: valgrind cannot run the watcher's bwrap child (clone(CLONE_VM)
        # without CLONE_VFORK: "Valgrind does not support general clone()"),
        # so the watcher fails there and D exits non-zero; the root parent's
        # profile (PAM, fork, wait, PAM close) is still complete.
        if ! (cd "$WORK" && env -i PATH=/usr/bin:/bin CLIHOST_JAIL_CONFIG="$conf" valgrind --tool=callgrind \
            --dump-before=execve --callgrind-out-file="$CG/$v.%p" "$BIN" run --user "$T1" --session prof -- true) \
            >"$CG/$v.log" 2>&1; then
            [[ $v == D ]] || { tail -5 "$CG/$v.log" >&2; die "callgrind of $v failed"; }
            grep -q "does not support general clone" "$CG/$v.log" ||
                { tail -5 "$CG/$v.log" >&2; die "callgrind of $v failed"; }
            echo "  (D: the watcher's clone(CLONE_VM) cannot run under valgrind; the root parent's profile follows)"
        fi
        # The helper process has the lowest pid (forked children inherit its
        # counters up to the fork and write their own files; the trial's
        # child in its new pid namespace calls itself pid 1).
        pid=$(ls "$CG" | sed -n "s/^$v\.\([0-9]*\)\(\.1\)\{0,1\}\$/\1/p" | awk '$1 > 1' | sort -n | head -1)
        if [[ $v == C ]]; then f=$CG/$v.$pid.1; else f=$CG/$v.$pid; fi
        [[ -s $f ]] || die "no callgrind profile of the helper process ($f)"
        cg_summary "$v" "$f"
    done
    echo
    echo "start-up alone (exec, dynamic linking, static init, sanitize, log::init; no lookups):"
    (cd "$WORK" && env -i "${NICE[@]}" hyperfine -N --style none --warmup 5 --runs 200 --export-json "$WORK/startup.json" \
        "$BIN --version" "/usr/bin/setpriv --version" "/usr/bin/bwrap --version" >>"$HFLOG" 2>&1) ||
        die "start-up timing failed"
    "$PY" - "$WORK/startup.json" <<'PYEOF'
import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = sorted(r["times"])
    print(f"  {r['command']:<40} median {statistics.median(t) * 1e3:5.2f} ms  p10 {t[len(t) // 10] * 1e3:5.2f} ms"
          f"  cpu {(r['user'] + r['system']) * 1e3:5.2f} ms")
PYEOF
    for lib in $(ldd "$BIN" | awk '$3 ~ /^\// {print $3}'); do printf '%s ' "$(basename "$lib")"; done |
        sed 's/^/  shared libraries: /'; echo
fi
exit "$rc"
