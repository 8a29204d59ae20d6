#!/usr/bin/env bash
# tests/tools/build_deb.sh BUILD_DIR: the Debian package of this tree, built
# as a packager builds it (README, "Packaging"): Release, prefix /usr,
# warnings not fatal (the default), no tests; cpack -G DEB. Prints the .deb's
# path. The packaging test (tests/integration/deb_package.sh) and the VM test
# (tests/host/run.sh) install what this builds.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bdir=${1:?usage: build_deb.sh BUILD_DIR}
cmake -S "$repo" -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DCLIHOST_JAIL_TESTS=OFF >/dev/null
cmake --build "$bdir" -j"$(nproc)" >/dev/null
rm -f "$bdir"/clihost-jail_*.deb
(cd "$bdir" && cpack -G DEB >/dev/null)
ls "$bdir"/clihost-jail_*.deb
