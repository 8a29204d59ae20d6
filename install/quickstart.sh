#!/usr/bin/env bash
# install/quickstart.sh: build, install and demonstrate clihost-jail on a
# fresh Debian 12 machine. Run as root from the repository:
#     sudo ./install/quickstart.sh
# It installs the build and run dependencies (apt-get), builds, installs the
# helper setuid root (4750 root:clihost) with its PAM service and an example
# config, creates two demo tenants if missing (login shell nologin, cron/at
# denied: no route around the jail, SECURITY.md), starts a syslog daemon if
# nothing listens on /dev/log (the audit lines' sink), and shows from inside
# a real jailed tmux session what a tenant sees.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
[ "$(id -u)" -eq 0 ] || { echo "quickstart: run as root (sudo $0)" >&2; exit 2; }

deps=(build-essential cmake pkg-config libpam0g-dev libcap-ng-dev libspdlog-dev libfmt-dev
      bubblewrap tmux libpam-modules procps slirp4netns nftables)
"$top/install/ensure-packages.sh" "${deps[@]}"

echo "== groups and demo tenants"
getent group clihost >/dev/null || groupadd --system clihost
getent group clihost-tenants >/dev/null || groupadd clihost-tenants
# nologin as login shell: sshd, su and login have no shell to give a tenant;
# tmux in the jail starts [jail] shell instead (set below).
for t in clihost-demo1 clihost-demo2; do
  id "$t" >/dev/null 2>&1 || useradd --create-home --shell /usr/sbin/nologin --groups clihost-tenants "$t"
  usermod --shell /usr/sbin/nologin "$t"
  chmod 0750 "$(getent passwd "$t" | cut -d: -f6)"
done

echo "== build and install"
build=$top/build/release
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DCLIHOST_JAIL_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
cmake --install "$build" >/dev/null
helper=/usr/libexec/clihost-jail/clihost-jail
# The three programs: the setuid front, the supervisor (root's 0700) and
# the admin program (check, print; root only).
ls -l "$helper" "${helper}-supervisor" "${helper}-admin"

echo "== network = isolated: the network group and the host-address rules"
getent group clihost-jail-net >/dev/null || groupadd --system clihost-jail-net
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  systemctl enable --now clihost-jail-nft.service
else
  nft -f /usr/share/clihost-jail/clihost-jail.nft
fi
# slirp4netns opens /dev/net/tun as the tenant: Debian's udev makes it 0666;
# a machine without udev (a minimal VM or container) has it 0600 root.
[ -c /dev/net/tun ] || { mkdir -p /dev/net; mknod -m 0666 /dev/net/tun c 10 200; }
[ "$(stat -c %a /dev/net/tun)" = 666 ] || chmod 0666 /dev/net/tun

echo "== routes around the jail: closed"
# The example policy leaves [jail] shell unset (the login shell): the demo
# tenants have nologin, so their jails start bash. Only an unedited example
# is changed; an operator's own policy is left alone.
conf=/etc/clihost-jail/jail.conf
if ! grep -Eq '^[[:space:]]*shell[[:space:]]*=' "$conf"; then
  if cmp -s "$conf" "$top/install/jail.conf"; then
    sed -i -E 's|^# (shell = /usr/bin/bash)|\1|' "$conf"
  else
    echo "quickstart: $conf has no [jail] shell and the demo tenants' login shell is nologin: add 'shell = /usr/bin/bash' under [jail]" >&2
    exit 1
  fi
fi
grep -E '^[[:space:]]*shell[[:space:]]*=' "$conf"
# cron, at and lingering: per tenant.
/usr/sbin/clihost-jail-close-routes clihost-demo1 clihost-demo2
# sshd: the drop-in installed above denies group clihost-tenants; a running
# sshd must re-read it. `sshd -T` (run by check) needs sshd's privilege
# separation directory, which sshd's own service creates when it starts.
if [ -x /usr/sbin/sshd ]; then
  install -d -m 0755 /run/sshd
  if [ -d /run/systemd/system ] && systemctl is-active --quiet ssh; then systemctl reload ssh; fi
  ls -l /etc/ssh/sshd_config.d/clihost-jail.conf
fi

echo "== audit log: a syslog daemon on /dev/log"
# Every launch and refusal writes an audit line to syslog (authpriv); check
# fails and no jail is run while nothing reads /dev/log. Container images and
# minimal VMs run no syslog daemon: start one, and say which. logger(1)
# (bsdutils, always installed) sends one line the way the helper does
# (datagram, then stream) and fails if nothing accepts it.
syslog_listens() {
  [ -S /dev/log ] && logger --socket-errors=on -u /dev/log -p user.info -t clihost-jail-quickstart \
    "syslog check: audit lines can reach /dev/log" 2>/dev/null
}
if syslog_listens; then
  echo "a syslog daemon already listens on /dev/log: left as it is"
elif [ -d /run/systemd/system ] && systemctl start systemd-journald-dev-log.socket 2>/dev/null && syslog_listens; then
  echo "started journald's syslog socket (systemd-journald-dev-log.socket): audit lines go to the journal"
else
  "$top/install/ensure-packages.sh" rsyslog
  if [ -d /run/systemd/system ]; then
    systemctl enable --now rsyslog.service
    echo "enabled and started rsyslog.service: audit lines go to /var/log/auth.log"
  else
    # No init system to hand it to: rsyslogd forks into the background itself.
    if pgrep -x rsyslogd >/dev/null; then
      echo "quickstart: rsyslogd runs but nothing accepts lines on /dev/log (is its imuxsock module loaded?)" >&2
    else
      rsyslogd
      for _ in $(seq 50); do syslog_listens && break; sleep 0.1; done
      echo "started rsyslogd (pid $(pgrep -x rsyslogd)): audit lines go to /var/log/auth.log;" \
           "this machine has no systemd, so start it again after a reboot (rsyslogd)"
    fi
  fi
fi
# If none listens even now, check below fails on its audit log line and the
# demo does not run.

echo "== clihost-jail check --user clihost-demo1"
"$helper" check --user clihost-demo1

echo "== a jailed terminal: tmux stands in for ttyd's pseudo-terminal"
demo=clihost-quickstart-$$
tmux -L "$demo" new-session -d -s host -x 160 -y 50 "$helper run --user clihost-demo1 --session demo"
home2=$(getent passwd clihost-demo2 | cut -d: -f6)
ready=
for _ in $(seq 50); do
  if runuser -u clihost-demo1 -- tmux -S "$(getent passwd clihost-demo1 | cut -d: -f6)/.cache/tmux/clihost.sock" \
       has-session -t =demo 2>/dev/null; then ready=1; break; fi
  sleep 0.1
done
[ -n "$ready" ] || { echo "quickstart: the jailed session did not start" >&2; tmux -L "$demo" capture-pane -p; exit 1; }
sleep 0.5
tmux -L "$demo" send-keys -t host "clear; id; echo TTYD_SANDBOX=\$TTYD_SANDBOX SHELL=\$SHELL; ls /home; ls $home2; touch /etc/demo; ps ax" Enter
sleep 1.5
tmux -L "$demo" capture-pane -p -t host | sed '/^$/d'
"$helper" kill --user clihost-demo1 --session demo
tmux -L "$demo" kill-server 2>/dev/null || true
cat <<EOT
== done
Above, from inside the jail: the other tenant's home does not exist, /etc is
read-only, ps sees only the jail's own processes, and TTYD_SANDBOX=true.
Next: add the proxy user to group clihost, put tenants in clihost-tenants,
read 'man clihost-jail' and /etc/clihost-jail/jail.conf.
EOT
