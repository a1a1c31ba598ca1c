#!/usr/bin/env bash
# Quick start, step 1: install what building colmet's programs needs (no
# test, report or scheduler packages), build the programs only, and run a
# sample job under colmet-job run (about 2 s of CPU and 200 MiB of memory),
# which prints the job's summary and leaves its HDF5 file in ./colmet-data/.
# Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
scripts/install-deps.sh run
scripts/build.sh programs

echo
echo "== Running a sample job under colmet =="
build/bin/colmet-job run --hdf5-dir colmet-data -s 0.5 -- \
  build/bin/colmet-workload --cpu-seconds 2 --memory-mib 200
echo
echo "Installed, built and ran in $(( $(date +%s) - start )) s."
echo "To see the job: apt-get install python3-h5py python3-pandas python3-matplotlib, then the"
echo "colmet-report command above (build/bin/colmet-report); the file's layout is in docs/hdf5-layout.md."
