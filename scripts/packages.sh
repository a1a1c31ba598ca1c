#!/usr/bin/env bash
# Build colmet's Debian packages from this tree (debian/, dpkg-buildpackage
# -us -uc -b) into DIR (default: ./packages): colmet-common, colmet-node,
# colmet-collector, slurm-spank-colmet, oar-colmet, colmet-report.
# Installs the build dependencies first (as root). Builds from a copy of the
# tree, since dpkg-buildpackage writes next to the source directory.
#   scripts/packages.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
out=$(mkdir -p "${1:-packages}" && cd "${1:-packages}" && pwd)

if [ "$(id -u)" -eq 0 ]; then
  scripts/install-deps.sh packages
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
tmp=$(mktemp -d /tmp/colmet-build.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tree=$tmp/colmet-$version
mkdir "$tree"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tree"
else
  tar --exclude='./build*' --exclude='./obj-*' --exclude='./packages' -cf - . | (cd "$tree" && tar xf -)
fi
echo "packages: building colmet $version (log: $out/build.log)"
start=$(date +%s)
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  echo "packages: dpkg-buildpackage failed (see $out/build.log)" >&2
  exit 1
fi
cp "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out/"
echo "packages: built in $(( $(date +%s) - start )) s into $out:"
(cd "$out" && ls -1 ./*.deb | sed 's|^\./|  |')
