#!/bin/bash
# tests/systemd/run_in_runc.sh: the systemd suite (ctest label `systemd`).
# Boots Debian 12's systemd 252 as PID 1 in a runc container and runs
# inside.sh there: the freshly built helper (setuid root) under a stand-in
# proxy service, `systemctl restart` of it, the tenant's transient scope and
# its limits. Root only.
#   CLIHOST_JAIL_BIN          the helper to install (ctest sets it)
#   CLIHOST_JAIL_TEST_CONFIG  the config path that helper reads (ctest sets it)
#   CLIHOST_JAIL_STUB_BIN, CLIHOST_JAIL_TEST_ATTACH_STUB  its attach stub, and
#                             where that helper looks for it (ctest sets both)
# The root file system comes from mmdebstrap (the host's apt sources) and is
# cached under /var/cache/clihost-jail-test (CLIHOST_JAIL_SYSTEMD_CACHE), keyed by a hash of what goes
# into it; each run writes into an overlay of it, never into the cache.
# Exits 0 (every check passed), 1 (one failed), 77 (skipped: runc cannot
# boot systemd on this host; the reason is printed).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${CLIHOST_JAIL_BIN:?set CLIHOST_JAIL_BIN to the helper}
CONFIG_PATH=${CLIHOST_JAIL_TEST_CONFIG:-/etc/clihost-jail-test/jail.conf}
STUB_BIN=${CLIHOST_JAIL_STUB_BIN:-$(dirname "$BIN")/clihost-jail-attach}
STUB_PATH=${CLIHOST_JAIL_TEST_ATTACH_STUB:-/usr/local/libexec/clihost-jail-test/clihost-jail-attach}
# The supervisor and admin programs, where the test build execs them.
SUPERVISOR_BIN=${CLIHOST_JAIL_SUPERVISOR_BIN:-$(dirname "$BIN")/clihost-jail-supervisor}
SUPERVISOR_PATH=${CLIHOST_JAIL_TEST_SUPERVISOR:-/usr/local/libexec/clihost-jail-test/clihost-jail-supervisor}
ADMIN_BIN=${CLIHOST_JAIL_ADMIN_BIN:-$(dirname "$BIN")/clihost-jail-admin}
ADMIN_PATH=${CLIHOST_JAIL_TEST_ADMIN:-/usr/local/libexec/clihost-jail-test/clihost-jail-admin}
CACHE=${CLIHOST_JAIL_SYSTEMD_CACHE:-/var/cache/clihost-jail-test}
SUITE=bookworm
PACKAGES="systemd,systemd-sysv,dbus,bubblewrap,tmux,libpam-modules,libpam-runtime,procps,util-linux,passwd,login,libcap-ng0"
NAME=ctj-systemd-$$
started=$SECONDS
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
say() { echo "systemd suite: $*"; }
skip() { say "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || { say "run as root"; exit 1; }
for tool in runc mmdebstrap gcc nsenter; do
  command -v $tool >/dev/null || { say "$tool is missing (tests/run.sh installs it)"; exit 1; }
done

# 1. The root file system, cached by a hash of the suite, the packages and
#    the apt sources it is made from.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && [ -s "$f" ] && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { say "no apt sources in /etc/apt"; exit 1; }
key=$( { echo "$SUITE $PACKAGES minbase v1"; cat "${sources[@]}"; } | sha256sum | cut -c1-16)
ROOTFS=$CACHE/systemd-rootfs-$key
if [ ! -x "$ROOTFS/sbin/init" ]; then
  t=$(now)
  mkdir -p "$CACHE"
  rm -rf "$ROOTFS.tmp"
  if ! mmdebstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS.tmp" "${sources[@]}" \
      </dev/null >"$CACHE/mmdebstrap.log" 2>&1; then
    say "mmdebstrap failed:"; tail -15 "$CACHE/mmdebstrap.log"; rm -rf "$ROOTFS.tmp"; exit 1
  fi
  mv "$ROOTFS.tmp" "$ROOTFS"
  for old in "$CACHE"/systemd-rootfs-*; do [ "$old" = "$ROOTFS" ] || rm -rf "$old"; done
  say "root file system built in $(since "$t") ($ROOTFS)"
else
  say "root file system cached ($ROOTFS)"
fi

# 2. This run's tree: an overlay over the cache.
W=$(mktemp -d /tmp/ctj-systemd.XXXXXX)
M=$W/merged
mkdir -p "$W/upper" "$W/work" "$M" "$W/state" "$W/bundle"
cleanup() {
  set +e
  if runc --root "$W/state" state $NAME >/dev/null 2>&1; then
    t=$(now)
    runc --root "$W/state" kill $NAME 37  # SIGRTMIN+3: systemd powers off
    for _ in $(seq 100); do
      runc --root "$W/state" state $NAME 2>/dev/null | grep -q '"status": "stopped"' && break
      sleep 0.1
    done
    runc --root "$W/state" delete -f $NAME
    say "container stopped in $(since "$t")"
  fi
  mountpoint -q "$M" && umount "$M"
  rm -rf "$W"
}
trap cleanup EXIT
mount -t overlay overlay -o "lowerdir=$ROOTFS,upperdir=$W/upper,workdir=$W/work" "$M" \
  || { say "cannot mount an overlay over $ROOTFS"; exit 1; }

in_root() { chroot "$M" "$@"; }
in_root groupadd --system clihost && in_root useradd --system -g clihost -s /usr/sbin/nologin clihost \
  && in_root groupadd clihost-tenants && in_root useradd -m -u 1500 -G clihost-tenants -s /bin/bash ctj-sdt \
  && in_root useradd -m -u 1501 -G clihost-tenants -s /bin/bash ctj-sdu \
  || { say "cannot create the test's users in the root file system"; exit 1; }
gid=$(in_root getent group clihost | cut -d: -f3)
L=$M/usr/local/lib/ctj-sd
mkdir -p "$L" "$M/usr/libexec/clihost-jail" "$M$(dirname "$CONFIG_PATH")"
for c in ptydrive forkloop memhog; do gcc -O2 -Wall -o "$L/$c" "$HERE/$c.c" || exit 1; done
install -m 0755 "$HERE/inside.sh" "$L/"
install -o 0 -g "$gid" -m 4750 "$BIN" "$M/usr/libexec/clihost-jail/clihost-jail"
install -D -o 0 -g 0 -m 0755 "$STUB_BIN" "$M$STUB_PATH"
install -D -o 0 -g 0 -m 0700 "$SUPERVISOR_BIN" "$M$SUPERVISOR_PATH"
install -D -o 0 -g 0 -m 0755 "$ADMIN_BIN" "$M$ADMIN_PATH"
install -m 0644 "$TOP/pam/clihost-jail" "$M/etc/pam.d/clihost-jail"
install -m 0644 "$TOP/install/systemd/clihost-jail.slice" "$M/etc/systemd/system/"
# The suite's policy and its stand-in proxy service (also the VM's, tests/host).
install -m 0644 "$HERE/suite.conf" "$M$CONFIG_PATH"
install -m 0644 "$HERE/ctj-proxy.service" "$M/etc/systemd/system/ctj-proxy.service"
: >"$M/etc/machine-id"  # systemd makes a transient one
echo ctj-systemd >"$M/etc/hostname"
ln -sf /dev/null "$M/etc/systemd/system/console-getty.service"
ln -sf /dev/null "$M/etc/systemd/system/getty@.service"

# 3. Boot: a cgroup namespace, /sys/fs/cgroup read-write (read-only, systemd
#    would report limits it does not enforce), setuid allowed
#    (noNewPrivileges false), only the capabilities this process has.
names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE
       NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT
       SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
       AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ
       PERFMON BPF CHECKPOINT_RESTORE)
bnd=$((16#$(awk '/^CapBnd/ { print $2 }' /proc/self/status)))
caps=""
for i in "${!names[@]}"; do
  (( (bnd >> i) & 1 )) && caps="$caps${caps:+, }\"CAP_${names[$i]}\""
done
cat >"$W/bundle/config.json" <<EOJ
{ "ociVersion": "1.0.2",
  "process": { "terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["/sbin/init"],
    "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "container=oci"], "cwd": "/", "noNewPrivileges": false,
    "capabilities": {"bounding": [$caps], "effective": [$caps], "permitted": [$caps]} },
  "root": {"path": "$M", "readonly": false},
  "hostname": "ctj-systemd",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", "rw"]},
    {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=755"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]}
  ],
  "linux": {
    "cgroupsPath": "$NAME",
    "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "network"}, {"type": "cgroup"}],
    "resources": {"devices": [{"allow": true, "access": "rwm"}]}
  }
}
EOJ
t=$(now)
(cd "$W/bundle" && exec runc --root "$W/state" run -d --pid-file "$W/pid" $NAME </dev/null >"$W/console.log" 2>&1) \
  || skip "runc cannot start a container here: $(tr '\n' ' ' <"$W/console.log" | tail -c 400)"
LEADER=$(cat "$W/pid")
state=""
for _ in $(seq 300); do
  if [ "$(cat /proc/$LEADER/comm 2>/dev/null)" = systemd ]; then
    state=$(nsenter -t "$LEADER" -a systemctl is-system-running 2>/dev/null)
    case $state in running|degraded) break ;; esac
  fi
  kill -0 "$LEADER" 2>/dev/null || skip "systemd exited while booting: $(tail -5 "$W/console.log" | tr '\n' ' ')"
  sleep 0.1
done
case $state in
  running|degraded) say "systemd booted in $(since "$t") ($state)" ;;
  *) skip "systemd did not finish booting within 30 s (is-system-running: '${state:-no answer}'): $(tail -5 "$W/console.log" | tr '\n' ' ')" ;;
esac
[ "$state" = degraded ] && nsenter -t "$LEADER" -a systemctl --failed --no-legend --plain | sed 's/^/  failed unit: /'

# 4. The checks, inside.
t=$(now)
runc --root "$W/state" exec $NAME /usr/local/lib/ctj-sd/inside.sh
rc=$?
say "checks inside took $(since "$t")"
say "whole suite $((SECONDS - started)) s"
exit $rc
