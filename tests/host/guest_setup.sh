#!/bin/sh
# mmdebstrap hooks of vm_image.sh:  guest_setup.sh early|final ROOT
#   early (--essential-hook, before the kernel is installed): a small initrd
#     (MODULES=list: virtio and ext4 only; about 10 s less per boot under TCG)
#   final (--customize-hook): the runner unit, fstab, masks of periodic units
# ROOT is the guest's root file system, on the host.
set -e
R=$2
if [ "$1" = early ]; then
  mkdir -p "$R/etc/initramfs-tools/conf.d" "$R/usr/share/initramfs-tools/modules.d"
  echo MODULES=list >"$R/etc/initramfs-tools/conf.d/ctj-vm.conf"
  printf '%s\n' virtio_pci virtio_blk ext4 9p 9pnet_virtio >"$R/usr/share/initramfs-tools/modules.d/ctj-vm"
  exit 0
fi
echo ctj-vm >"$R/etc/hostname"
: >"$R/etc/machine-id"   # a fresh one on the first boot of each run
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >"$R/etc/fstab"
# The runner: mounts the run's 9p directory, runs its script as root with
# stdout and stderr on ttyS1, writes the exit status and powers off; if the
# script left a file "reboot" it reboots instead (no status yet), and the
# same script runs again on the next boot (it keeps its own state there).
cat >"$R/usr/local/sbin/ctj-vm-runner" <<'EOS'
#!/bin/bash
OUT=/dev/ttyS1
stty -F $OUT raw -echo 2>/dev/null
mkdir -p /run/vm
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ctjvm /run/vm \
  || { echo "ctj-vm: cannot mount the run's 9p directory" >/dev/console; systemctl poweroff --no-block; exit 1; }
echo "ctj-vm: script starts at uptime $(cut -d' ' -f1 /proc/uptime) s" >/dev/console
cd /run/vm
/run/vm/script >$OUT 2>&1 </dev/null
rc=$?
if [ -e /run/vm/reboot ]; then
  rm -f /run/vm/reboot
  sync
  systemctl reboot --no-block
  exit 0
fi
echo "$rc" >/run/vm/rc
sync
systemctl poweroff --no-block
EOS
chmod 0755 "$R/usr/local/sbin/ctj-vm-runner"
cat >"$R/etc/systemd/system/ctj-vm-runner.service" <<'EOS'
[Unit]
Description=clihost-jail VM test: the run's script
After=multi-user.target
[Service]
Type=exec
ExecStart=/usr/local/sbin/ctj-vm-runner
StandardOutput=journal+console
StandardError=journal+console
EOS
passwd -R "$R" -d root >/dev/null 2>&1 || chroot "$R" passwd -d root >/dev/null
for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer \
         e2scrub_reap.service man-db.timer logrotate.timer systemd-tmpfiles-clean.timer; do
  ln -sf /dev/null "$R/etc/systemd/system/$u"
done
printf 'blacklist %s\n' kvm kvm_amd kvm_intel pcspkr >"$R/etc/modprobe.d/ctj-vm.conf"
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb
