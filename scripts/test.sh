#!/usr/bin/env bash
# Quick start, step 2: install what colmet needs, build it three ways and run
# every test: unit and integration tests (GoogleTest, bats), the man-page
# lint and the system tests (colmet in a real cgroup v2 kernel, user-mode
# Linux, Slurm's cgroup/v2 plugin included) on the release build; the Debian packages built from the tree,
# installed, used and purged; unit and integration tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer (the system tests, real
# schedulers and kernels, run once); one-minute libFuzzer runs
# of the message decoder, the HDF5 sink and the control protocol, half-minute
# runs of the spool and key-file readers (COLMET_FUZZ_SECONDS sets the minute).
# Run as root on Debian 12 (tests that need root skip themselves, with the
# reason, otherwise).
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${COLMET_FUZZ_SECONDS:-60}

passed=0
failed=0
failures=()

# run_ctest DIR LABEL-REGEX: run CTest, add its counts to the totals.
run_ctest() {
  local dir=$1 labels=$2 log
  log=$(mktemp)
  (cd "$dir" && ctest --output-on-failure -j 2 --timeout 900 -L "$labels") 2>&1 | tee "$log"
  local line total fail
  line=$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$log" | tail -1)
  if [ -z "$line" ]; then
    failed=$((failed + 1)); failures+=("$dir: ctest did not complete")
  else
    fail=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$line")
    total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
    passed=$((passed + total - fail)); failed=$((failed + fail))
    [ "$fail" -eq 0 ] || failures+=("$dir: $fail CTest test(s) failed")
  fi
  rm -f "$log"
}

step() { echo; echo "== $* =="; }

step "Installing dependencies"
scripts/install-deps.sh || exit 1

step "Release build (-Wall -Wextra, warnings are errors)"
scripts/build.sh release || exit 1
step "Unit, integration, lint and system tests (release build; system: a real cgroup v2 kernel, user-mode Linux)"
run_ctest build 'unit|integration|lint|system'

step "Debian packages: built, linted, installed, used and purged (tests/install/check_packages.sh)"
run_ctest build 'packaging'

step "ASan + UBSan build"
scripts/build.sh asan || exit 1
step "Unit and integration tests under ASan + UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest build-asan 'unit|integration'
unset ASAN_OPTIONS UBSAN_OPTIONS

step "libFuzzer build (clang) and ${FUZZ_SECONDS} s fuzzing runs of the decoder, the sink, the control protocol, the spool reader and the key files"
if scripts/build.sh fuzz && scripts/fuzz.sh "$FUZZ_SECONDS"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); failures+=("fuzz: a fuzzing run (decoder, sink, control, spool or keys) failed")
fi

echo
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "colmet: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
