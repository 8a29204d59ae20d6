# 9a. Reboot the guest (inside the same QEMU run, its disk kept): step 11
#     runs on the next boot.
echo "$(cat /proc/sys/kernel/random/boot_id)" >"$STATE/boot_id"
request_reboot
ok "reboot requested"
