#!/bin/sh
# clihost-jail-close-routes TENANT...: close the per-account routes around the
# jail for new tenants: cron and at jobs (which run outside any jail) and
# logind lingering (an unjailed per-user service manager). Run it as root
# whenever you create a tenant; it is idempotent. `clihost-jail check --user
# TENANT` then reports these routes as ok.
#
# Why a script and not the package: deny entries name accounts, and tenants
# are created after the package is installed. (A host-wide alternative is an
# /etc/cron.allow and /etc/at.allow listing only root, which closes cron and
# at for every account at once, tenants or not; the package does not impose
# that on a host's other users.)
#
# The rest is host-wide and shipped: the sshd drop-in
# (/etc/ssh/sshd_config.d/clihost-jail.conf) and a PAM service without
# pam_systemd. The login shell is the operator's: create tenants with
# `useradd --shell /usr/sbin/nologin` and set `[jail] shell` in jail.conf.
set -eu
[ "$(id -u)" -eq 0 ] || { echo "clihost-jail-close-routes: run as root" >&2; exit 2; }
[ $# -ge 1 ] || { echo "usage: clihost-jail-close-routes TENANT..." >&2; exit 2; }

# listed FILE NAME: NAME is a line of FILE, blanks around it ignored.
listed() {
    awk -v n="$2" '{ gsub(/^[ \t]+|[ \t\r]+$/, "") } $0 == n { found = 1 } END { exit !found }' "$1"
}

# add_line FILE NAME MODE GROUP: append NAME to FILE unless listed (crontab(1)
# and at(1) read one name a line). A new file gets MODE and root:GROUP.
add_line() {
    if [ ! -e "$1" ]; then
        install -m "$3" -o root -g "$4" /dev/null "$1"
    fi
    if ! listed "$1" "$2"; then
        printf '%s\n' "$2" >>"$1"
    fi
}

rc=0
for t in "$@"; do
    if ! id "$t" >/dev/null 2>&1; then
        echo "clihost-jail-close-routes: no such user: $t" >&2
        rc=1
        continue
    fi
    add_line /etc/cron.deny "$t" 0644 root
    # Debian's at.deny is root:daemon 0640 (atd reads it as daemon).
    if getent group daemon >/dev/null; then g=daemon; else g=root; fi
    add_line /etc/at.deny "$t" 0640 "$g"
    # cron.allow/at.allow win over the deny files: a tenant listed there
    # stays open, and only the operator knows why it was listed.
    for allow in /etc/cron.allow /etc/at.allow; do
        if [ -f "$allow" ] && listed "$allow" "$t"; then
            echo "clihost-jail-close-routes: $t is listed in $allow: remove it there" >&2
            rc=1
        fi
    done
    if [ -e "/var/lib/systemd/linger/$t" ]; then
        loginctl disable-linger "$t" 2>/dev/null || rm -f "/var/lib/systemd/linger/$t"
    fi
    shell=$(getent passwd "$t" | cut -d: -f7)
    case "$shell" in
        */nologin|*/false) ;;
        *) echo "clihost-jail-close-routes: $t has login shell '$shell': set [jail] shell in jail.conf, then usermod -s /usr/sbin/nologin $t" >&2 ;;
    esac
done
exit $rc
