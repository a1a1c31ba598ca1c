#!/usr/bin/env bash
# Quick start, step 1: install what colmet needs, build it, and run a sample
# job under colmet-job run (about 2 s of CPU and 200 MiB of memory), which
# prints the job's summary and leaves its HDF5 file in ./colmet-data/.
# Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh release

echo
echo "== Running a sample job under colmet =="
build/bin/colmet-job run --hdf5-dir colmet-data -s 0.5 -- \
  build/bin/colmet-workload --cpu-seconds 2 --memory-mib 200
echo
echo "Look inside: h5dump -A colmet-data/<job>.h5 | less   (layout: docs/hdf5-layout.md)"
