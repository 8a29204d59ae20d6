#!/bin/bash
# tests/host/run.sh: the host suite (ctest label `host`). Boots Debian 12
# (bookworm) and Debian 13 (trixie) in QEMU, systemd as PID 1 on pure cgroup
# v2, and runs the end-to-end steps of guest/steps/ in each as root: the .deb
# of this tree (tests/tools/build_deb.sh, as the packaging test builds it)
# installed, used and removed as an operator following README and
# install/clihost/README.md would, with a reboot and an upgrade in between,
# and the systemd suite's checks (tests/systemd/inside.sh). Root only.
#   CLIHOST_JAIL_VM_RELEASES  the releases (default: bookworm trixie)
#   CLIHOST_JAIL_VM_STEPS     a regex of step names to run (default: all);
#                             the first step and the install always run
#   CLIHOST_JAIL_DEB_BUILD_DIR  where the .deb is built (default: a fresh dir)
#   CLIHOST_JAIL_VM_CACHE     the images' cache (vm_image.sh)
#   CLIHOST_JAIL_VM_TIMEOUT   seconds for one release's QEMU (default 1800)
#   CLIHOST_JAIL_VM_CPU       the CPU model TCG emulates (default qemu64: with
#                             max a reboot stalled in modprobe, soft lockups)
#   CLIHOST_JAIL_VM_KEEP=1    keep each run's directory (console log, state)
# KVM only where a hardware KVM module is loaded (kvm_intel, kvm_amd), else
# TCG: a kvm_pvm /dev/kvm (paravirtual nested) boots no stock Debian kernel.
# Exits 0 (every check passed), 1 (one failed), 77 (skipped: QEMU cannot run
# a VM at all here; the reason is printed).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
started=$SECONDS
say() { echo "host suite: $*"; }
skip() { say "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || { say "run as root"; exit 1; }
for tool in qemu-system-x86_64 qemu-img mmdebstrap mke2fs gcc dpkg-deb cmake; do
  command -v $tool >/dev/null || { say "$tool is missing (tests/run.sh installs it)"; exit 1; }
done

# QEMU at all: a machine started paused and quit at once. TCG needs no
# /dev/kvm; a failure here (no memory, a seccomp'd or broken QEMU) is a host
# that cannot run the suite.
if ! out=$(printf 'quit\n' | timeout 60 qemu-system-x86_64 -machine q35,accel=tcg -m 64 -nodefaults \
             -display none -S -monitor stdio 2>&1 >/dev/null); then
  skip "QEMU cannot start a virtual machine here: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
fi
accel=tcg
if { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; } && [ -w /dev/kvm ]; then accel=kvm; fi
case $accel in
  kvm) machine=(-machine q35,accel=kvm -cpu host -smp 2) ;;
  # One vCPU each under TCG: the two releases boot side by side, and two
  # vCPU threads each on a 2-core host starved one guest into soft lockups
  # and RCU stalls on its second boot (3 of 7 runs under load).
  tcg) machine=(-machine q35,accel=tcg -cpu "${CLIHOST_JAIL_VM_CPU:-qemu64}" -smp 1) ;;
esac

work=$(mktemp -d /tmp/ctj-host.XXXXXX)
trap '[ "${CLIHOST_JAIL_VM_KEEP:-0}" = 1 ] && say "kept $work" || rm -rf "$work"' EXIT

# The images, the packages (this tree's, and the same rebuilt with its
# version bumped: the upgrade), the test's small programs.
releases=${CLIHOST_JAIL_VM_RELEASES:-bookworm trixie}
declare -A image
for r in $releases; do
  t=$SECONDS
  image[$r]=$("$HERE/vm_image.sh" "$r") || { say "no $r image"; exit 1; }
  say "$r image ready in $((SECONDS - t)) s (${image[$r]})"
done
t=$SECONDS
deb=$("$TOP/tests/tools/build_deb.sh" "${CLIHOST_JAIL_DEB_BUILD_DIR:-$work/build}") || { say "the .deb did not build"; exit 1; }
mkdir -p "$work/deb/old" "$work/deb/new" "$work/bin" "$work/unpacked"
cp "$deb" "$work/deb/old/"
dpkg-deb -R "$deb" "$work/unpacked"
version=$(sed -n 's/^Version: //p' "$work/unpacked/DEBIAN/control")
sed -i "s/^Version: .*/Version: $version+vmtest1/" "$work/unpacked/DEBIAN/control"
dpkg-deb -b "$work/unpacked" "$work/deb/new/clihost-jail_${version}+vmtest1_amd64.deb" >/dev/null || exit 1
for c in ptydrive forkloop memhog; do gcc -O2 -Wall -o "$work/bin/$c" "$TOP/tests/systemd/$c.c" || exit 1; done
say "packages $version and $version+vmtest1 and the test's programs ready in $((SECONDS - t)) s"

# One run per release: its directory (shared with the guest over 9p), a
# copy-on-write overlay of the image that lives through the guest's reboot.
boot() {  # boot RELEASE: 0 if every step passed
  local r=$1 d=$work/run-$1 img=${image[$1]} t=$SECONDS rc
  mkdir -p "$d/steps" "$d/systemd"
  cp -r "$work/deb" "$work/bin" "$d/"
  install -m 0755 "$HERE/guest/run_steps.sh" "$d/script"
  cp "$HERE/guest/lib.sh" "$HERE/guest/proxy.py" "$d/"
  cp "$TOP/install/clihost/README.md" "$d/proxy-unit.txt"   # the guide's unit, taken from it verbatim
  cp "$TOP/tests/systemd/inside.sh" "$TOP/tests/systemd/suite.conf" "$TOP/tests/systemd/ctj-proxy.service" "$d/systemd/"
  for s in "$HERE"/guest/steps/*.sh; do
    n=$(basename "$s" .sh)
    case $n in 00-*|01-*) ;; *) [[ $n =~ ${CLIHOST_JAIL_VM_STEPS:-.} ]] || continue ;; esac
    cp "$s" "$d/steps/"
  done
  qemu-img create -q -f qcow2 -F raw -b "$img/rootfs.img" "$d/disk.qcow2" || return 1
  : >"$d/output"
  timeout "${CLIHOST_JAIL_VM_TIMEOUT:-1800}" qemu-system-x86_64 "${machine[@]}" -m 1536 -nodefaults -display none \
    -kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
    -append "console=ttyS0 root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 panic=-1 quiet systemd.wants=ctj-vm-runner.service systemd.mask=serial-getty@ttyS0.service" \
    -drive "file=$d/disk.qcow2,format=qcow2,if=virtio" -device virtio-rng-pci \
    -virtfs "local,path=$d,mount_tag=ctjvm,security_model=passthrough,id=ctjvm" \
    -serial "file:$d/console.log" -chardev "file,id=out,path=$d/output" -serial chardev:out \
    </dev/null >"$d/qemu.log" 2>&1 &
  local qpid=$!
  tail -c +1 -f --pid=$qpid "$d/output" | sed -u "s/^/[$r] /" &
  wait $qpid
  wait
  if [ -s "$d/rc" ]; then rc=$(cat "$d/rc"); else
    rc=125; say "$r: no exit status from the guest; qemu and the console's end:"
    cat "$d/qemu.log"; tail -n 30 "$d/console.log"
  fi
  say "$r: exit $rc, $(cat "$d/state/boots" 2>/dev/null || echo 0) boot(s), $((SECONDS - t)) s in QEMU ($accel)"
  [ "$rc" = 0 ]
}
# The releases boot side by side: much of a run is the guest waiting (for
# systemd, for a jail's start, for a screen to show), so two VMs on two cores
# take less than the sum of their times.
declare -A pid
for r in $releases; do boot "$r" & pid[$r]=$!; done
failed=0
for r in $releases; do wait "${pid[$r]}" || failed=1; done
say "whole suite $((SECONDS - started)) s"
exit $failed
