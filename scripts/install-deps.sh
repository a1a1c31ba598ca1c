#!/usr/bin/env bash
# Install the Debian 12 packages colmet needs to build, run and test.
# Idempotent: installs only what is missing. Must run as root.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config
  # libraries
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libhdf5-dev libdeflate-dev libcli11-dev libspdlog-dev libpfm4-dev libacl1-dev
  # tests, fuzzing, benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev bats clang libclang-rt-14-dev
  hdf5-tools python3-h5py python3-numpy mandoc procps linux-perf acl
  # the Python package (python/): colmet.open, colmet-report, its tests (pytest, a headless browser)
  python3-pandas python3-matplotlib python3-pytest chromium
  # Slurm SPANK plugin (spank.h) and its one-node cluster test
  libslurm-dev slurmctld slurmd slurm-client munge
  # OAR 2.5.9 hooks tests (tests/integration/oar): the JRM and oardodo, and a
  # complete one-machine OAR (PostgreSQL, Almighty, the node sshd, oarsub)
  oar-common oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql liboar-perl
  libdbd-pg-perl postgresql-15 openssh-server
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (apt-get needs it)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
