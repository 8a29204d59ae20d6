#!/bin/bash
# tests/host/vm_image.sh RELEASE: the VM image of a Debian release (bookworm,
# trixie), built once with mmdebstrap from the host's configured apt sources
# (the host's codename replaced by RELEASE) and cached outside the tree under
# $CLIHOST_JAIL_VM_CACHE (default /var/cache/clihost-jail-test/vm), keyed by
# the release, the package list, the setup hook and the sources: a change of
# any of them builds a new image (and removes the release's older ones).
# Prints the image's directory (rootfs.img, vmlinuz, initrd.img). Root only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
release=${1:?usage: vm_image.sh RELEASE}
case $release in *[!a-z]*|'') echo "vm_image: bad release '$release'" >&2; exit 2 ;; esac
cache=${CLIHOST_JAIL_VM_CACHE:-/var/cache/clihost-jail-test/vm}
# The guest: systemd as PID 1, the generic kernel (9p: the cloud kernel has
# only virtiofs), what the package depends on, python3 for the guide's proxy.
packages="systemd,systemd-sysv,dbus,udev,kmod,procps,linux-image-amd64,initramfs-tools,zstd,bubblewrap,tmux,slirp4netns,nftables,python3,libpam-modules,libpam-runtime,util-linux,passwd,login,iproute2,libcap-ng0"
host_codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
sources=$(mktemp)
trap 'rm -f "$sources"' EXIT
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] || continue
  grep -q "\b$host_codename\b" "$f" || continue   # Debian's own sources only
  if [ "${f%.sources}" != "$f" ]; then
    sed "s/\b$host_codename\b/$release/g" "$f"; echo
  else
    grep -E '^deb ' "$f" | sed "s/\b$host_codename\b/$release/g"
  fi
done >"$sources"
[ -s "$sources" ] || { echo "vm_image: no Debian apt sources for $host_codename in /etc/apt" >&2; exit 1; }
key=$( { echo "$release $packages v1"; cat "$HERE/guest_setup.sh" "$sources"; } | sha256sum | cut -c1-16)
dir=$cache/$release-$key
if [ -s "$dir/rootfs.img" ] && [ -s "$dir/vmlinuz" ] && [ -s "$dir/initrd.img" ]; then
  echo "$dir"; exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/$release.lock"
flock 9   # two runs for one release build it once
if [ ! -s "$dir/rootfs.img" ]; then
  t=$SECONDS
  tmp=$dir.tmp
  rm -rf "$tmp"; mkdir -p "$tmp"
  cp "$sources" "$tmp/sources.sources"
  if ! nice mmdebstrap --variant=minbase --include="$packages" \
      --essential-hook="$HERE/guest_setup.sh early \"\$1\"" \
      --customize-hook="$HERE/guest_setup.sh final \"\$1\"" \
      "$release" "$tmp/root" "$tmp/sources.sources" </dev/null >"$cache/$release-mmdebstrap.log" 2>&1; then
    echo "vm_image: mmdebstrap $release failed; the end of $cache/$release-mmdebstrap.log:" >&2
    tail -15 "$cache/$release-mmdebstrap.log" >&2; rm -rf "$tmp"; exit 1
  fi
  cp "$(ls "$tmp"/root/boot/vmlinuz-* | tail -1)" "$tmp/vmlinuz"
  cp "$(ls "$tmp"/root/boot/initrd.img-* | tail -1)" "$tmp/initrd.img"
  size=$(du -sm "$tmp/root" | cut -f1)
  mke2fs -q -t ext4 -L ctjroot -d "$tmp/root" "$tmp/rootfs.img" $((size + 1024))M
  rm -rf "$tmp/root" "$tmp/sources.sources"
  for old in "$cache/$release"-*; do [ "$old" = "$tmp" ] || [ ! -d "$old" ] || rm -rf "$old"; done
  mv "$tmp" "$dir"
  echo "vm_image: $release image built in $((SECONDS - t)) s (root file system $size MiB)" >&2
fi
echo "$dir"
