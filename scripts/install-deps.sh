#!/usr/bin/env bash
# Install the Debian 12 packages colmet needs. Idempotent: installs only what
# is missing. Must run as root.
#   scripts/install-deps.sh run    build the programs and run a job (the quick start)
#   scripts/install-deps.sh packages  what scripts/packages.sh needs (debhelper, lintian)
#   scripts/install-deps.sh test   everything: also the tests, fuzzing, benchmarks,
#                                  the report (Python), Slurm, OAR, packaging (the default)
set -euo pipefail

# To build colmet's programs and run a job under colmet-job run.
run_packages=(
  build-essential cmake pkg-config
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libhdf5-dev libdeflate-dev libcli11-dev libspdlog-dev libpfm4-dev
  nlohmann-json3-dev
  libacl1-dev libcurl4-openssl-dev libsnappy-dev libcap-dev
)
# On top, for scripts/test.sh.
test_packages=(
  # tests, fuzzing, benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev bats clang libclang-rt-14-dev clang-format clang-tidy
  hdf5-tools python3-h5py python3-numpy mandoc procps linux-perf acl logrotate
  # colmet-job run under the real sudo (the command runs as the user who ran sudo)
  sudo
  # colmet-mail-summary's test: a real MTA delivering into local mailboxes
  dma
  # the time-series sink's tests: a real store, and Prometheus' protobuf messages to decode with
  victoria-metrics libprotobuf-dev protobuf-compiler python3-yaml
  # the Python package (python/): colmet.open, colmet-report, its tests (pytest, a headless browser)
  python3-pandas python3-matplotlib python3-pytest chromium
  # Slurm SPANK plugin (spank.h) and its one-node cluster test
  libslurm-dev slurmctld slurmd slurm-client munge
  # OAR 2.5.9 hooks tests (tests/integration/oar): the JRM and oardodo, and a
  # complete one-machine OAR (PostgreSQL, Almighty, the node sshd, oarsub)
  oar-common oar-server oar-server-pgsql oar-node oar-user oar-user-pgsql liboar-perl
  libdbd-pg-perl postgresql-15 openssh-server
  # a real cgroup v2 kernel for the tests (tests/integration/uml): Linux as a
  # user process, booted with this machine's files as its root; e2fsprogs
  # formats its block device for the I/O check
  user-mode-linux e2fsprogs
)

# On top of run, to build the Debian packages (scripts/packages.sh).
package_packages=(debhelper dpkg-dev libslurm-dev python3 lintian)

case "${1:-test}" in
  run) packages=("${run_packages[@]}") ;;
  packages) packages=("${run_packages[@]}" "${package_packages[@]}") ;;
  test) packages=("${run_packages[@]}" "${test_packages[@]}" "${package_packages[@]}") ;;
  *) echo "usage: scripts/install-deps.sh [run|packages|test]" >&2; exit 64 ;;
esac

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
# dma: local delivery only, no smarthost.
if [[ " ${missing[*]} " == *" dma "* ]]; then
  printf 'dma dma/mailname string %s\ndma dma/relayhost string\n' "$(hostname -f 2>/dev/null || hostname)" |
    debconf-set-selections
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
