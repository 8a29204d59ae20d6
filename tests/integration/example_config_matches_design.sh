#!/bin/bash
# The configuration is stated three times; all three must say the same thing
# (same sections, keys, values and order once comments and spacing are
# removed), so that none can drift from the contract (jail.conf(5) says
# each key's rules):
#   - README.md, section "Configuration": what users read first (the reference);
#   - install/jail.conf: the example installed as /etc/clihost-jail/jail.conf;
#   - the built-in defaults: what the helper's library loads for an absent
#     file, printed by the print_default_policy test tool
#     ($CLIHOST_JAIL_PRINT_DEFAULTS, set by ctest; else looked up in build/ci).
# Then, as root and if a built helper exists ($CLIHOST_JAIL_BIN or
# build/ci/clihost-jail), that the helper itself accepts install/jail.conf:
# `check` with CLIHOST_JAIL_CONFIG pointing at a copy in a root-owned
# directory must report the config as ok (its exit code also depends on the
# host, so it is not used).
# Needs nothing outside the repository and its build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

# key = value lines and [sections], comments stripped, whitespace normalised
normalise() { sed -e 's/#.*//' -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' -e 's/ *= */ = /' | grep -v '^$'; }
# the first fenced block after the markdown heading $2 in file $1
block_after() { awk -v h="$2" '$0 == h {c=1; next} c && /^```/ {n++; if (n == 2) exit; next} c && n == 1' "$1"; }

pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

reference=$(block_after "$repo/README.md" "## Configuration" | normalise)
if [ -z "$reference" ]; then
    bad "no config block under '## Configuration' in README.md"
    echo "$pass passed, $fail failed"; exit 1
fi
compare() { # compare NAME TEXT
    if [ "$reference" = "$2" ]; then
        ok "$1 equals README.md's config block ($(wc -l <<<"$2") lines)"
    else
        diff <(echo "$reference") <(echo "$2") || true
        bad "$1 differs from README.md's config block"
    fi
}
compare install/jail.conf "$(normalise < "$repo/install/jail.conf")"

print_defaults=${CLIHOST_JAIL_PRINT_DEFAULTS:-$repo/build/ci/tests/print_default_policy}
if [ -x "$print_defaults" ]; then
    compare "the built-in defaults" "$("$print_defaults" | normalise)"
else
    bad "no print_default_policy at $print_defaults (build the tests first)"
fi

# Control: a block differing in one value is caught by the comparison above.
if [ "$reference" != "$(sed 's/^min_uid = 1000$/min_uid = 1001/' <<<"$reference")" ]; then
    ok "control: a changed value would be seen"
else
    bad "control: the comparison cannot see a changed value"
fi

bin=${CLIHOST_JAIL_BIN:-$repo/build/ci/clihost-jail}
if [ "$(id -u)" = 0 ] && [ -x "$bin" ]; then
    # /tmp is world-writable, which the helper rightly refuses as a parent.
    dir=$(mktemp -d -p /run clihost-jail-conf.XXXXXX)
    trap 'rm -rf "$dir"' EXIT
    chmod 0755 "$dir"
    install -m 0644 "$repo/install/jail.conf" "$dir/jail.conf"
    out=$(CLIHOST_JAIL_CONFIG=$dir/jail.conf "$bin" check 2>&1 || true)
    if grep -qx "config: $dir/jail.conf: ok.*" <<<"$out"; then
        ok "$bin accepts install/jail.conf"
    else
        echo "$out"; bad "$bin does not accept install/jail.conf"
    fi
else
    echo "skip helper check: needs root and a built helper"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
