#!/usr/bin/env bash
# install/ensure-packages.sh PACKAGE...: apt-get install the Debian packages
# that are not installed yet (one apt-get update first, only when needed).
# Used by quickstart.sh and the test scripts so each lists what it needs.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
