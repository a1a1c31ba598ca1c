#!/usr/bin/env bash
# Configure and build one flavour of colmet.
#   scripts/build.sh [programs|release|asan|fuzz] [extra cmake args...]
# Build trees: build/ (programs: colmet-job, -node, -collector and the sample
# workload only, for the quick start;
# release: everything, tests and benchmarks too), build-asan/ (ASan+UBSan),
# build-fuzz/ (clang, libFuzzer). Every flavour is a unity build
# (COLMET_UNITY_BUILD: each target's sources compiled in batches of 8), which
# takes half the CPU time of one compiler run per source; pass
# -DCOLMET_UNITY_BUILD=OFF for one object per source.
set -euo pipefail
cd "$(dirname "$0")/.."

flavour=${1:-release}
shift || true
jobs=$(nproc)

case "$flavour" in
  programs)
    # What the quick start runs, and nothing else: -O1 (13 % less
    # compile time than -O3, see README), no debug information, no tests,
    # benchmarks or SPANK plugin. The release flavour is the one to deploy.
    dir=build
    targets=(colmet-job colmet-node colmet-collector colmet-workload)
    args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DCOLMET_BUILD_TESTING=OFF -DCOLMET_UNITY_BUILD=ON
          -DCOLMET_BUILD_BENCH=OFF -DCOLMET_WITH_SPANK=OFF) ;;
  release)
    dir=build
    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLMET_BUILD_TESTING=ON -DCOLMET_BUILD_BENCH=ON -DCOLMET_WITH_SPANK=ON
          -DCOLMET_WARNINGS_AS_ERRORS=ON -DCOLMET_UNITY_BUILD=ON
          -DCMAKE_EXPORT_COMPILE_COMMANDS=ON) ;;  # the database: for clang-tidy
  asan)
    dir=build-asan
    args=(-DCMAKE_BUILD_TYPE=Debug -DCOLMET_SANITIZE=ON -DCOLMET_BUILD_BENCH=OFF -DCOLMET_WARNINGS_AS_ERRORS=ON
          -DCOLMET_UNITY_BUILD=ON) ;;
  fuzz)
    dir=build-fuzz
    args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
          -DCOLMET_BUILD_FUZZ=ON -DCOLMET_BUILD_TESTING=OFF -DCOLMET_BUILD_BENCH=OFF -DCOLMET_UNITY_BUILD=ON) ;;
  *)
    echo "usage: scripts/build.sh [programs|release|asan|fuzz]" >&2; exit 64 ;;
esac

cmake -S . -B "$dir" "${args[@]}" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
if [ "$flavour" = fuzz ]; then
  cmake --build "$dir" -j "$jobs" --target fuzz_decode fuzz_sink fuzz_control fuzz_spool fuzz_keys fuzz_node_inputs fuzz_summary_json \
    make_sink_seeds
elif [ "$flavour" = programs ]; then
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$dir" -j "$jobs"
fi
