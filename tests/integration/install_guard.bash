# install_guard.bash: sourced (not a test itself: ctest runs *.sh) by the
# packaging scripts that write to the host's install paths (deb_package.sh,
# quickstart_demo.sh). README's order is quickstart, then tests: an install
# already on the host must be as it was when the script ends, byte for byte,
# with its modes and owners. The guard covers every path this project
# installs (GUARD_PATHS; cmake_install.sh checks that each file of a
# `cmake --install` lies under one of them), every path of the quickstart's
# install manifest (build/release/install_manifest.txt of this checkout) and
# of CLIHOST_JAIL_INSTALL_MANIFEST if set, the package's dpkg state and the
# helper's statoverride.
#   guard_begin WORKDIR   before the first change: snapshot, and a tar of
#                         what exists
#   guard_restore         remove whatever is at the paths now, extract the tar
#   guard_verify          snapshot again; print each path that differs, with
#                         its state before and after; status 1 if any
# guard_snapshot BASE PATH... and guard_diff BEFORE AFTER are the parts
# (deb_package.sh runs them on a scratch tree as the positive control).

# Relative to /. The systemd paths are those of the unit's enablement and of
# deb-systemd-helper's state; cron.deny and at.deny get the test tenant.
GUARD_PATHS=(
  usr/libexec/clihost-jail
  usr/sbin/clihost-jail-close-routes
  usr/share/clihost-jail
  usr/share/doc/clihost-jail
  usr/share/lintian/overrides/clihost-jail
  usr/share/man/man8/clihost-jail.8 usr/share/man/man8/clihost-jail.8.gz
  usr/share/man/man8/clihost-jail-close-routes.8 usr/share/man/man8/clihost-jail-close-routes.8.gz
  usr/share/man/man5/clihost-jail.conf.5 usr/share/man/man5/clihost-jail.conf.5.gz
  usr/lib/systemd/system/clihost-jail-nft.service
  usr/lib/systemd/system/clihost-jail.slice
  etc/clihost-jail
  etc/pam.d/clihost-jail
  etc/ssh/sshd_config.d/clihost-jail.conf
  etc/systemd/system/clihost-jail-nft.service
  etc/systemd/system/multi-user.target.wants/clihost-jail-nft.service
  etc/systemd/system/nftables.service.wants/clihost-jail-nft.service
  var/lib/systemd/deb-systemd-helper-enabled/clihost-jail-nft.service.dsh-also
  var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/clihost-jail-nft.service
  var/lib/systemd/deb-systemd-helper-enabled/nftables.service.wants/clihost-jail-nft.service
  var/lib/systemd/deb-systemd-helper-masked/clihost-jail-nft.service
  etc/cron.deny
  etc/at.deny
)

# guard_snapshot BASE PATH...: one line per file, directory or link at or
# under each BASE/PATH (path, type, mode, uid:gid, link target, sha256), or
# "PATH absent".
guard_snapshot() {
  local base=$1 p path type mode owner target sum
  shift
  for p in "$@"; do
    if [ -e "$base/$p" ] || [ -L "$base/$p" ]; then
      (cd "$base" && find "$p" -printf '%p\t%y\t%#m\t%U:%G\t%l\n') |
        while IFS=$'\t' read -r path type mode owner target; do
          sum=-
          if [ "$type" = f ]; then sum=$(sha256sum <"$base/$path"); sum=${sum%% *}; fi
          printf '%s\t%s %s %s %s %s\n' "$path" "$type" "$mode" "$owner" "${target:--}" "$sum"
        done
    else
      printf '%s\tabsent\n' "$p"
    fi
  done | LC_ALL=C sort -u
}

# guard_diff BEFORE AFTER: each path whose line differs, with both states.
guard_diff() {
  awk -F'\t' 'NR == FNR { b[$1] = $2; next } { a[$1] = $2 }
    END {
      for (p in b) if (!(p in a) || a[p] != b[p]) print p "\tbefore: " b[p] "\tafter: " ((p in a) ? a[p] : "(not listed)")
      for (p in a) if (!(p in b)) print p "\tbefore: (not listed)\tafter: " a[p]
    }' "$1" "$2" | LC_ALL=C sort
}

guard_state() {
  local status d
  guard_snapshot / "${guard_paths[@]}"
  # Directories that did not exist (deb-systemd-helper's, say) exist no more.
  for d in "${guard_absent_dirs[@]}"; do
    if [ -e "/$d" ]; then printf '%s\tpresent\n' "$d"; else printf '%s\tabsent\n' "$d"; fi
  done
  # dpkg forgets a purged package, or keeps it as "un": both are not installed.
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' clihost-jail 2>/dev/null || true)
  case "$status" in ""|un*) status=not-installed ;; esac
  printf 'dpkg:clihost-jail\t%s\n' "$status"
  printf 'statoverride:helper\t%s\n' "$(dpkg-statoverride --list /usr/libexec/clihost-jail/clihost-jail 2>/dev/null || true)"
}

guard_begin() {
  guard_dir=$1
  local m line p q skip
  guard_paths=("${GUARD_PATHS[@]}")
  local manifests=()
  # GUARD_NO_MANIFEST=1: GUARD_PATHS only (a script that touches none of the install).
  [ "${GUARD_NO_MANIFEST:-0}" = 1 ] || manifests=(
    "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/release/install_manifest.txt"
    ${CLIHOST_JAIL_INSTALL_MANIFEST:+"$CLIHOST_JAIL_INSTALL_MANIFEST"})
  for m in "${manifests[@]}"; do
    [ -f "$m" ] || continue
    while IFS= read -r line; do
      # Absolute paths of files (a manifest lists files), nothing else.
      case "$line" in /*/*) ;; *) continue ;; esac
      case "$line" in */../*|*/./*|*/..|*/.) continue ;; esac
      [ -d "$line" ] && [ ! -L "$line" ] && continue
      guard_paths+=("${line#/}")
    done <"$m"
  done
  # A path under another one is covered by it (tar and find descend).
  local kept=()
  for p in "${guard_paths[@]}"; do
    skip=0
    for q in "${guard_paths[@]}"; do
      if [ "$p" != "$q" ] && [[ "$p" == "$q"/* ]]; then skip=1; break; fi
    done
    [ "$skip" = 1 ] || kept+=("$p")
  done
  mapfile -t guard_paths < <(printf '%s\n' "${kept[@]}" | LC_ALL=C sort -u)
  # The missing directories above the paths, deepest first.
  mapfile -t guard_absent_dirs < <(for p in "${guard_paths[@]}"; do
      q=$(dirname "$p")
      while [ "$q" != . ] && [ ! -e "/$q" ]; do echo "$q"; q=$(dirname "$q"); done
    done | LC_ALL=C sort -ru)
  guard_state >"$guard_dir/guard.before"
  local present=()
  for p in "${guard_paths[@]}"; do
    if [ -e "/$p" ] || [ -L "/$p" ]; then present+=("$p"); fi
  done
  rm -f "$guard_dir/guard.tar"
  if [ ${#present[@]} -gt 0 ]; then
    tar -C / --numeric-owner -cpf "$guard_dir/guard.tar" "${present[@]}"
  fi
}

guard_restore() {
  local p
  for p in "${guard_paths[@]}"; do rm -rf "/${p:?}"; done
  if [ -f "$guard_dir/guard.tar" ]; then tar -C / --numeric-owner -xpf "$guard_dir/guard.tar"; fi
  for p in "${guard_absent_dirs[@]}"; do rmdir "/${p:?}" 2>/dev/null || true; done
}

guard_verify() {
  guard_state >"$guard_dir/guard.after"
  guard_diff "$guard_dir/guard.before" "$guard_dir/guard.after" >"$guard_dir/guard.diff"
  if [ -s "$guard_dir/guard.diff" ]; then
    echo "the install on this host differs after the test, at:"
    sed 's/^/  /' "$guard_dir/guard.diff"
    return 1
  fi
  echo "the install on this host is as before the test ($(grep -vc absent "$guard_dir/guard.before") paths present, $(grep -c absent "$guard_dir/guard.before") absent)"
}
