#!/usr/bin/env bash
# A packager's first build: `cmake -DCMAKE_BUILD_TYPE=Release` (-O3) with the
# system compiler must build, also with warnings as errors
# (CLIHOST_JAIL_WERROR=ON), so that no -O3-only warning (GCC 12's -Wrestrict
# on `"literal" + std::string&&` broke it once) can come back unnoticed.
# And -Werror is the project's choice, not the packager's: it is off unless
# asked for. Builds in a temp dir; the host is untouched.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Default configuration: no -Werror anywhere in the compile commands.
cmake -S "$repo" -B "$work/default" -DCMAKE_BUILD_TYPE=Release -DCLIHOST_JAIL_TESTS=OFF \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
check "a default configuration does not turn warnings into errors" \
  "grep -q -- '-O3' '$work/default/compile_commands.json' && ! grep -q -- '-Werror' '$work/default/compile_commands.json'"

cmake -S "$repo" -B "$work/strict" -DCMAKE_BUILD_TYPE=Release -DCLIHOST_JAIL_TESTS=OFF -DCLIHOST_JAIL_WERROR=ON \
  -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
check "CLIHOST_JAIL_WERROR=ON compiles every source with -Werror at -O3" \
  "[ \"\$(grep -c -- '-O3.*-Werror\\|-Werror.*-O3' '$work/strict/compile_commands.json')\" = \"\$(grep -c '\"file\"' '$work/strict/compile_commands.json')\" ]"
if cmake --build "$work/strict" -j"$(nproc)" >"$work/build.log" 2>&1; then
  ok "Release build with -Werror succeeds ($(${CXX:-c++} --version | head -1))"
else
  bad "Release build with -Werror succeeds"
  grep -E -B2 -A8 'error' "$work/build.log" | head -60
fi
check "the Release helper runs" "'$work/strict/clihost-jail' --version | grep '^clihost-jail ' >/dev/null"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
