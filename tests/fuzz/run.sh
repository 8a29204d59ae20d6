#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS]: build the libFuzzer harnesses (clang, with
# ASan+UBSan) and run each for SECONDS (default 30) over a copy of its seed
# corpus in tests/fuzz/corpus/<harness>/. Exits non-zero if any harness finds
# a crash, leak, timeout or sanitizer report; the reproducer is kept and named.
#   FUZZ_BUILD_DIR=...  build directory (default /tmp/clihost-jail-fuzz-build)
#   FUZZ_WORK_DIR=...   where the corpus copies, logs and crash artifacts go;
#                       kept when given (default: a temp dir, removed on success)
#   FUZZ_HARNESSES="fuzz_plan fuzz_cli"   run only these
#
# Long runs (hours; the grown corpus and any crash stay in FUZZ_WORK_DIR):
#   FUZZ_WORK_DIR=/var/tmp/clihost-fuzz tests/fuzz/run.sh 14400     # 4 h per harness, one after another
# or one harness on every core, resumable from the same corpus directory:
#   /tmp/clihost-jail-fuzz-build/tests/fuzz/fuzz_plan -jobs="$(nproc)" -workers="$(nproc)" \
#     -max_total_time=28800 -timeout=10 /var/tmp/clihost-fuzz/corpus/fuzz_plan tests/fuzz/corpus/fuzz_plan
# Reproduce a crash: $FUZZ_BUILD_DIR/tests/fuzz/<harness> <artifact file>
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)
seconds=${1:-30}
case $seconds in ''|*[!0-9]*) echo "usage: tests/fuzz/run.sh [SECONDS]" >&2; exit 2 ;; esac
build=${FUZZ_BUILD_DIR:-/tmp/clihost-jail-fuzz-build}
read -r -a harnesses <<<"${FUZZ_HARNESSES:-fuzz_config fuzz_cli fuzz_plan fuzz_mountinfo fuzz_request}"

# clang and its runtimes (libFuzzer, ASan, UBSan) live in libclang-rt-14-dev on Debian 12.
packages=(clang libclang-rt-14-dev cmake ninja-build pkg-config libpam0g-dev libcap-ng-dev libspdlog-dev
          libfmt-dev libgtest-dev)
"$top/install/ensure-packages.sh" "${packages[@]}"

if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCLIHOST_JAIL_FUZZ=ON -DCLIHOST_JAIL_TESTS=ON -DCLIHOST_JAIL_WERROR=ON >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target "${harnesses[@]}"

if [ -n "${FUZZ_WORK_DIR:-}" ]; then
  work=$FUZZ_WORK_DIR
  keep=1
else
  work=$(mktemp -d /tmp/clihost-jail-fuzz.XXXXXX)
  keep=0
fi
mkdir -p "$work/artifacts"

# Sanitizer reports are fatal (the build uses -fno-sanitize-recover=all).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One harness per core at a time: the same CPU time per harness as one after
# another, in half the wall time on the project's 2-core machines.
run_one() {
  local h=$1 start=$SECONDS
  mkdir -p "$work/corpus/$h"
  cp -a "$top/tests/fuzz/corpus/$h/." "$work/corpus/$h/"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$work/artifacts/$h-")
  [ -f "$top/tests/fuzz/$h.dict" ] && args+=(-dict="$top/tests/fuzz/$h.dict")
  if "$build/tests/fuzz/$h" "${args[@]}" "$work/corpus/$h" >"$work/$h.log" 2>&1; then
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log")
    echo "fuzz: $h ok: ${runs:-?} runs in $((SECONDS - start)) s, corpus $(find "$work/corpus/$h" -type f | wc -l) inputs"
    touch "$work/ok-$h"
  else
    echo "fuzz: $h FAILED; log $work/$h.log; reproducer(s):" >&2
    ls "$work/artifacts/$h-"* >&2 2>/dev/null || true
    grep -E 'ERROR|SUMMARY|==[0-9]+==|#[0-9]+ .*(helper|tests/fuzz)/' "$work/$h.log" | head -20 >&2 || true
  fi
}
cores=$(nproc)
for h in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n || true; done
  run_one "$h" &
done
wait
failed=()
for h in "${harnesses[@]}"; do
  # Only a harness that said it ran clean counts (a job that died early did not).
  if [ ! -e "$work/ok-$h" ]; then failed+=("$h"); keep=1; fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (work dir $work kept)" >&2
  exit 1
fi
[ "$keep" -eq 1 ] || rm -rf "$work"
echo "fuzz: all ${#harnesses[@]} harnesses ran ${seconds} s each without a finding"
