#!/usr/bin/env bash
# Quick start, step 2: install what colmet needs, build it three ways and run
# every test: unit and integration tests (GoogleTest, bats), the man-page
# lint and the system tests (colmet in a real cgroup v2 kernel, user-mode
# Linux, Slurm's cgroup/v2 plugin included; the real OAR and Slurm) on the
# release build; the Debian packages built from the tree, installed, used and
# purged; unit and integration tests again under AddressSanitizer +
# UndefinedBehaviorSanitizer (the system tests, real schedulers and kernels,
# run once); one-minute libFuzzer runs of the message decoder, the HDF5 sink
# and the control protocol, half-minute runs of the spool and key-file
# readers (COLMET_FUZZ_SECONDS sets the minute).
#
# Two cores are kept busy: most tests wait (on sampling periods, daemons,
# guests), so once the release build is done, the ASan build, the Debian
# packages, the libFuzzer build and the fuzzing runs go on one after the
# other in the background at the lowest CPU priority (nice 19: they take
# what the tests leave idle), while the release tests, then the ASan tests
# (as soon as their build is there), then the package test run in the
# foreground. Each stage's time is printed at the end.
# Run as root on Debian 12 (tests that need root skip themselves, with the
# reason, otherwise).
set -uo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${COLMET_FUZZ_SECONDS:-60}
logs=$(mktemp -d /tmp/colmet-test.XXXXXX)
chmod 755 "$logs"
run_start=$SECONDS

passed=0
failed=0
failures=()
stage_times=()

step() { echo; echo "== $* =="; }
# timed NAME SECONDS: record a stage's wall-clock time for the final table.
timed() { stage_times+=("$(printf '%-64s %5d s' "$1" "$2")"); }

# failure_digest DIR: what each test that failed in DIR's last CTest run
# said of its failure (the lines that name one, at most 20 per test), kept
# for the end of the run: a long output is often seen by its head and tail
# only, and CTest prints a failing test's output in the middle.
failure_digest() {
  local dir=$1 num name
  [ -s "$dir/Testing/Temporary/LastTestsFailed.log" ] || return 0
  while IFS=: read -r num name; do
    echo "-- $name ($dir):"
    awk -v want="$name" '
      $0 ~ "^[0-9]+/[0-9]+ Test: " { inside = (substr($0, index($0, "Test: ") + 6) == want); next }
      /^<end of output>/ { inside = 0 }
      inside' "$dir/Testing/Temporary/LastTest.log" |
      grep -E '^not ok|FAIL|Failure|[Ff]ailed|Error|error:|Timeout' | head -20
  done <"$dir/Testing/Temporary/LastTestsFailed.log"
}

# run_ctest DIR LABEL-REGEX: run CTest, add its counts to the totals.
run_ctest() {
  local dir=$1 labels=$2 log
  log=$(mktemp)
  (cd "$dir" && ctest --output-on-failure -j 2 --timeout 900 -L "$labels") 2>&1 | tee "$log"
  failure_digest "$dir" >>"$logs/failure-digest.txt"
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

# The background chain: each stage runs at nice 19 in the idle I/O class,
# its output in $logs/NAME.log, and writes "STATUS SECONDS" to $logs/NAME.rc
# when it ends; a stage after a failed one is not run (its .rc says 125).
bg_stage() {
  local name=$1; shift
  local start=$SECONDS
  nice -n 19 ionice -c 3 "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  echo "$rc $((SECONDS - start))" >"$logs/$name.rc"
  return $rc
}
bg_skip() { for name in "$@"; do echo "125 0" >"$logs/$name.rc"; done; }

# await NAME WHAT: wait for a background stage; its time goes to the table,
# the end of its log to the output (all of it that matters when it failed).
# Status 0 when it succeeded.
await() {
  local name=$1 what=$2 rc secs t=$SECONDS
  while [ ! -s "$logs/$name.rc" ]; do
    kill -0 "$chain_pid" 2>/dev/null || { echo "125 0" >"$logs/$name.rc"; break; }
    sleep 1
  done
  read -r rc secs <"$logs/$name.rc"
  [ $((SECONDS - t)) -gt 0 ] && timed "waiting for: $what" $((SECONDS - t))
  if [ "$rc" -eq 125 ]; then
    echo "== $what: not run (an earlier background stage failed) =="
    return 1
  fi
  timed "$what (background, nice 19)" "$secs"
  if [ "$rc" -ne 0 ]; then
    echo "== $what FAILED (exit $rc); the end of its log: =="
    tail -80 "$logs/$name.log"
    return 1
  fi
  tail -3 "$logs/$name.log"
  return 0
}

step "Installing dependencies"
t=$SECONDS
scripts/install-deps.sh || exit 1
timed "dependencies (apt-get)" $((SECONDS - t))

step "Release build (-Wall -Wextra, warnings are errors)"
t=$SECONDS
scripts/build.sh release || exit 1
timed "release build" $((SECONDS - t))

# In the background, one stage after the other (each build with every
# core): the ASan build, the Debian packages (-O0, DEB_BUILD_OPTIONS=noopt:
# the test checks the packaging, not the optimiser; no -dbgsym packages, they
# are not installed), the libFuzzer build and the fuzzing runs.
step "In the background at nice 19: the ASan + UBSan build, the Debian packages, the libFuzzer build and ${FUZZ_SECONDS} s runs (logs in $logs)"
(
  bg_stage asan scripts/build.sh asan || { bg_skip packages fuzz_build fuzz; exit; }
  bg_stage packages env DEB_BUILD_OPTIONS="noautodbgsym noopt" scripts/packages.sh "$logs/packages"
  bg_stage fuzz_build scripts/build.sh fuzz || { bg_skip fuzz; exit; }
  bg_stage fuzz scripts/fuzz.sh "$FUZZ_SECONDS"
) &
chain_pid=$!

step "Unit, integration, lint and system tests (release build; system: a real cgroup v2 kernel, user-mode Linux, the real OAR and Slurm)"
t=$SECONDS
run_ctest build 'unit|integration|lint|system'
timed "release tests (unit, integration, lint, system)" $((SECONDS - t))

step "Waiting for the ASan + UBSan build"
if await asan "ASan + UBSan build"; then
  step "Unit and integration tests under ASan + UBSan"
  t=$SECONDS
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_ctest build-asan 'unit|integration'
  unset ASAN_OPTIONS UBSAN_OPTIONS
  timed "ASan + UBSan tests (unit, integration)" $((SECONDS - t))
else
  failed=$((failed + 1)); failures+=("the ASan + UBSan build failed: its tests did not run")
fi

step "Waiting for the Debian packages"
if await packages "Debian packages (dpkg-buildpackage)"; then
  step "Debian packages: linted, installed, used and purged (tests/install/check_packages.sh)"
  t=$SECONDS
  export COLMET_PACKAGES_DIR=$logs/packages  # check_packages.sh takes these instead of building again
  run_ctest build 'packaging'
  unset COLMET_PACKAGES_DIR
  timed "package test (lintian, install, use, purge)" $((SECONDS - t))
else
  failed=$((failed + 1)); failures+=("the Debian packages were not built: their test did not run")
fi

step "Waiting for the fuzzing runs"
if await fuzz_build "libFuzzer build" && await fuzz "fuzzing runs (decoder, sink, control, spool, keys, node inputs, summary JSON)"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); failures+=("fuzz: the libFuzzer build or a fuzzing run (decoder, sink, control, spool, keys, node inputs or summary JSON) failed")
fi
wait "$chain_pid" 2>/dev/null

echo
echo "== Time per stage (wall clock; background stages overlap the ones before them) =="
for s in "${stage_times[@]}"; do echo "  $s"; done
printf '  %-64s %5d s\n' "whole run" $((SECONDS - run_start))
echo
if [ -s "$logs/failure-digest.txt" ]; then
  echo "== What the failed tests said (their whole output is above) =="
  cat "$logs/failure-digest.txt"
  echo
fi
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "colmet: $passed passed, $failed failed"
rm -rf "$logs"
[ "$failed" -eq 0 ]
