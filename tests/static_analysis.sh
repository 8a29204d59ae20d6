#!/usr/bin/env bash
# tests/static_analysis.sh: clang-tidy (checks in .clang-tidy) over helper/*/*.cpp
# and cppcheck over the same sources; exits non-zero on any finding of either.
# Installs clang-tidy and cppcheck with apt-get when missing (Debian 12).
#   TIDY_BUILD_DIR=...  where to configure the build whose compile_commands.json
#                       is used (default /tmp/clihost-jail-tidy-build); nothing is compiled
# Silence a finding only after reading it: fix the code, or add a NOLINT(check) /
# "cppcheck-suppress id" on the line with a reason, never a blanket suppression here.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
build=${TIDY_BUILD_DIR:-/tmp/clihost-jail-tidy-build}
jobs=$(nproc)

packages=(clang clang-tidy cppcheck cmake ninja-build pkg-config libpam0g-dev libcap-ng-dev libspdlog-dev libfmt-dev)
"$top/install/ensure-packages.sh" "${packages[@]}"
tidy=$(command -v clang-tidy-14 || command -v clang-tidy)

# Configure only (the generated version.hpp is made at configure time), with
# clang so that clang-tidy understands every flag. Tests off: each helper
# source then has exactly one entry (the shipped build, not the fault-injection one).
CC=clang CXX=clang++ cmake -S "$top" -B "$build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCLIHOST_JAIL_TESTS=OFF -DCLIHOST_JAIL_WERROR=ON >/dev/null

status=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

start=$SECONDS
# -quiet drops the "N warnings generated" noise from system headers; with
# WarningsAsErrors: '*' any finding makes clang-tidy exit non-zero.
if ! printf '%s\n' "$top"/helper/*/*.cpp |
     xargs -P "$jobs" -n 1 "$tidy" -p "$build" --quiet >"$out" 2>&1; then
  status=1
fi
grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter' "$out" || true
if grep -q -E '(warning|error): ' "$out"; then status=1; fi
echo "static analysis: clang-tidy $([ $status -eq 0 ] && echo clean || echo FOUND PROBLEMS) ($((SECONDS - start)) s)"

start=$SECONDS
# cppcheck does not know the compiler's predefined macros; name the target so
# that architecture #if chains (seccomp_filter.cpp) take the real branch.
case $(uname -m) in
  x86_64) arch=-D__x86_64__ ;;
  aarch64) arch=-D__aarch64__ ;;
  *) arch=-D__unknown_arch__ ;;
esac
if ! cppcheck --project="$build/compile_commands.json" --file-filter="$top/helper/*" \
     "$arch" -D__linux__ --std=c++20 -j "$jobs" -q \
     --enable=warning,portability,performance --error-exitcode=1 --inline-suppr \
     --suppress=missingIncludeSystem; then
  status=1
  echo "static analysis: cppcheck FOUND PROBLEMS ($((SECONDS - start)) s)"
else
  echo "static analysis: cppcheck clean ($((SECONDS - start)) s)"
fi
exit $status
