#!/usr/bin/env bash
# tests/run.sh: the one test command (README, CI). Run as root on Debian 12:
# installs what it needs with apt-get, builds, and runs every suite through
# ctest: unit (no root), integration (root: real users, PAM, bwrap, tmux),
# systemd (systemd as PID 1 in a runc container), host (the .deb on Debian
# 12 and 13 in QEMU: systemd on pure cgroup v2), packaging, static
# analysis, sanitizers, fuzzing (short), benchmark (quick).
#   BUILD_DIR=...       build directory (default: build/ci)
#   CLIHOST_QUICK=1     unit + integration only (for fast local iteration)
# At the end it prints where the time went: each ctest label against its
# budget below, the slowest tests, the whole run against 45 minutes; then
# ctest's own closing lines again. Its exit status is ctest's.
# A test may skip where the host lacks a feature it needs (README, "Tests").
set -euo pipefail
started=$SECONDS
cd "$(dirname "$0")/.."
top=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "tests/run.sh: run as root (integration tests create users and install a setuid binary)" >&2
  exit 2
fi

packages=(build-essential cmake pkg-config libpam0g-dev libcap-ng-dev libspdlog-dev libfmt-dev
          libgtest-dev libgmock-dev bubblewrap tmux sudo rsyslog python3 python3-pytest python3-pyflakes procps
          util-linux libpam-modules libpam-runtime passwd login
          keyutils  # test_owner*.py: keyctl, the tenant's and the caller's session keyrings
          openssh-server openssh-client  # test_routes.py: a real sshd, and check runs sshd -T
          slirp4netns nftables iproute2  # network = isolated, and test_network.py's own test hosts
          runc bsdutils  # test_containers.py: OCI bundles with Docker's defaults; script(1) is its ttyd
          lintian  # deb_package.sh: Debian's own verdict on the .deb
          mmdebstrap  # systemd/run_in_runc.sh and host/vm_image.sh: Debian root file systems
          qemu-system-x86 qemu-utils e2fsprogs)  # host/run.sh: the VMs (TCG without KVM), their overlays and images
"$top/install/ensure-packages.sh" "${packages[@]}"

# Audit lines go to syslog (authpriv); the tests read them from auth.log.
if ! pgrep -x rsyslogd >/dev/null; then
  rsyslogd 2>/dev/null || true
  for _ in $(seq 50); do [ -S /dev/log ] && break; sleep 0.1; done
fi

# network = isolated (the default) needs what install/quickstart.sh and the
# .deb set up (the group, the host-address rules) and what Debian's udev
# gives every host: /dev/net/tun mode 0666 (these build machines have no udev).
getent group clihost-jail-net >/dev/null || groupadd --system clihost-jail-net
nft -f "$top/install/nftables/clihost-jail.nft"
[ -c /dev/net/tun ] || { mkdir -p /dev/net; mknod -m 0666 /dev/net/tun c 10 200; }
chmod 0666 /dev/net/tun

build=${BUILD_DIR:-$top/build/ci}
# The test build reads its default config from a test-only path, and keeps
# its session jails' state in a test-only runtime directory, so that the
# suites never touch a real /etc/clihost-jail/jail.conf or /run/clihost-jail.
# Warnings are errors here (CLIHOST_JAIL_WERROR; off by default for packagers).
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLIHOST_JAIL_WERROR=ON \
  -DCLIHOST_JAIL_CONFIG=/etc/clihost-jail-test/jail.conf \
  -DCLIHOST_JAIL_RUNTIME_DIR=/run/clihost-jail-test \
  -DCLIHOST_JAIL_ATTACH_STUB=/usr/local/libexec/clihost-jail-test/clihost-jail-attach \
  -DCLIHOST_JAIL_SUPERVISOR=/usr/local/libexec/clihost-jail-test/clihost-jail-supervisor \
  -DCLIHOST_JAIL_ADMIN=/usr/local/libexec/clihost-jail-test/clihost-jail-admin >/dev/null
cmake --build "$build" -j"$(nproc)"

# Each label's share in seconds on the project's machine (2 cores): their
# sum (42 minutes) and the packages and build before ctest (about 3
# minutes on a fresh clone) fit the whole command's 45 minutes. CI's last
# run (42:08 in all, its tests 38:24, the bench refused early): analysis
# 18:58 (sanitizers 12:35, static 3:26, fuzz 2:58 at 30 s a harness, 20
# now), integration 11:00, host 4:56, packaging 3:00, systemd 0:16. The
# quick bench took 60 to 100 s at its earlier sizes (fewer runs now).
budgets="unit=30 integration=660 packaging=210 analysis=1050 bench=90 systemd=60 host=420"
run_budget=2700

cd "$build"
rm -f ctest-junit.xml
set +e
ctest --output-on-failure --timeout 900 --output-junit "$build/ctest-junit.xml" \
  ${CLIHOST_QUICK:+-L "unit|integration"} 2>&1 | tee "$build/ctest-output.log"
rc=${PIPESTATUS[0]}
set -e

ctest --show-only=json-v1 >"$build/ctest-tests.json" 2>/dev/null || true
python3 "$top/tests/tools/time_report.py" "$build/ctest-junit.xml" "$build/ctest-tests.json" "$budgets" || true
elapsed=$((SECONDS - started))
if [ "$elapsed" -gt "$run_budget" ]; then
  echo "== the whole test command: $((elapsed / 60)) min $((elapsed % 60)) s: OVER BUDGET ($((run_budget / 60)) min)"
else
  echo "== the whole test command: $((elapsed / 60)) min $((elapsed % 60)) s (budget $((run_budget / 60)) min)"
fi
echo "== ctest's result"
sed -n '/tests passed, .* tests failed out of/,$p' "$build/ctest-output.log"
exit "$rc"
