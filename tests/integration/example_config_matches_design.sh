#!/bin/bash
# Checks that install/jail.conf states exactly the built-in defaults of
# DESIGN.md's config block (same sections, keys, values, order) once comments
# and spacing are removed, so the example can never drift from the contract.
# DESIGN.md is looked up in shared/ beside the repository (or $DESIGN_MD).
# Then, as root and if a built helper exists ($CLIHOST_JAIL_BIN or
# build/clihost-jail), that the helper itself accepts the file: `check` with
# CLIHOST_JAIL_CONFIG pointing at a copy in a root-owned directory must report
# the config as ok (its exit code also depends on the host, so it is not used).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
design=${DESIGN_MD:-}
for c in "$repo/../shared/DESIGN.md" "$repo/shared/DESIGN.md" /work/shared/DESIGN.md; do
    [ -z "$design" ] && [ -f "$c" ] && design=$c
done
[ -n "$design" ] || { echo "SKIP: DESIGN.md not found"; exit 77; }

# key = value lines and [sections], comments stripped, whitespace normalised
normalise() { sed -e 's/#.*//' -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' -e 's/ *= */ = /' | grep -v '^$'; }
expected=$(awk '/^## Config/ {c=1} c && /^```/ {n++; next} c && n==1' "$design" | normalise)
actual=$(normalise < "$repo/install/jail.conf")
[ -n "$expected" ] || { echo "FAIL: no config block found in $design"; exit 1; }
pass=0 fail=0
if [ "$expected" = "$actual" ]; then
    echo "ok   install/jail.conf equals the DESIGN.md defaults ($(wc -l <<<"$actual") lines)"
    pass=$((pass + 1))
else
    diff <(echo "$expected") <(echo "$actual") || true
    echo "FAIL install/jail.conf differs from DESIGN.md"
    fail=$((fail + 1))
fi

bin=${CLIHOST_JAIL_BIN:-$repo/build/clihost-jail}
if [ "$(id -u)" = 0 ] && [ -x "$bin" ]; then
    # /tmp is world-writable, which the helper rightly refuses as a parent.
    dir=$(mktemp -d -p /run clihost-jail-conf.XXXXXX)
    trap 'rm -rf "$dir"' EXIT
    chmod 0755 "$dir"
    install -m 0644 "$repo/install/jail.conf" "$dir/jail.conf"
    out=$(CLIHOST_JAIL_CONFIG=$dir/jail.conf "$bin" check 2>&1 || true)
    if grep -qx "config: $dir/jail.conf: ok.*" <<<"$out"; then
        echo "ok   $bin accepts install/jail.conf"; pass=$((pass + 1))
    else
        echo "$out"; echo "FAIL $bin does not accept install/jail.conf"; fail=$((fail + 1))
    fi
else
    echo "skip helper check: needs root and a built helper"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
