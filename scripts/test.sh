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
# guests), so while the release tests run, the ASan build, the Debian
# packages and the fuzzers are built in the background at the lowest CPU
# priority (nice 19: they take only what the tests leave idle); while the
# ASan tests run, the fuzzers run the same way. Each stage's time is printed
# at the end.
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

# background NAME COMMAND...: run COMMAND at nice 19 in the idle I/O class, its output in
# $logs/NAME.log and its time and status in $logs/NAME.rc.
background() {
  local name=$1; shift
  (
    start=$SECONDS
    nice -n 19 ionice -c 3 "$@" >"$logs/$name.log" 2>&1
    echo "$? $((SECONDS - start))" >"$logs/$name.rc"
  ) &
  echo "$!" >"$logs/$name.pid"
}

# join NAME WHAT: wait for a background stage; its time goes to the table,
# its log to the output when it failed. Status 0 when it succeeded.
join() {
  local name=$1 what=$2 rc secs
  wait "$(cat "$logs/$name.pid")"
  read -r rc secs <"$logs/$name.rc"
  timed "$what (background, nice 19)" "$secs"
  if [ "$rc" -ne 0 ]; then
    echo "== $what FAILED (exit $rc); its log: =="
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

# While the release tests run: the ASan build, then the packages and the
# fuzzers, one after the other (one build at a time, each with every core).
# No -dbgsym packages: they are not installed, and take build time.
step "In the background at nice 19: the ASan + UBSan build, the Debian packages, the libFuzzer build (logs in $logs)"
background builds bash -c "scripts/build.sh asan && echo 'asan build done' \
  && DEB_BUILD_OPTIONS=noautodbgsym scripts/packages.sh '$logs/packages' && echo 'packages done' \
  && scripts/build.sh fuzz && echo 'fuzz build done'"

step "Unit, integration, lint and system tests (release build; system: a real cgroup v2 kernel, user-mode Linux, the real OAR and Slurm)"
t=$SECONDS
run_ctest build 'unit|integration|lint|system'
timed "release tests (unit, integration, lint, system)" $((SECONDS - t))

step "Waiting for the background builds"
t=$SECONDS
builds_ok=1
join builds "ASan build, Debian packages, libFuzzer build" || {
  builds_ok=0
  failed=$((failed + 1)); failures+=("background builds (ASan, packages, fuzz): see above")
}
timed "waiting for them after the release tests" $((SECONDS - t))
grep -q '^asan build done' "$logs/builds.log" && asan_ok=1 || asan_ok=0
grep -q '^packages done' "$logs/builds.log" && packages_ok=1 || packages_ok=0

if [ "$packages_ok" -eq 1 ]; then
  step "Debian packages: linted, installed, used and purged (tests/install/check_packages.sh)"
  t=$SECONDS
  export COLMET_PACKAGES_DIR=$logs/packages  # check_packages.sh takes these instead of building again
  run_ctest build 'packaging'
  unset COLMET_PACKAGES_DIR
  timed "package test (lintian, install, use, purge)" $((SECONDS - t))
fi

if [ "$builds_ok" -eq 1 ]; then
  step "In the background at nice 19: ${FUZZ_SECONDS} s libFuzzer runs of the decoder, the sink, the control protocol, the spool reader and the key files"
  background fuzz scripts/fuzz.sh "$FUZZ_SECONDS"
fi

if [ "$asan_ok" -eq 1 ]; then
  step "Unit and integration tests under ASan + UBSan"
  t=$SECONDS
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_ctest build-asan 'unit|integration'
  unset ASAN_OPTIONS UBSAN_OPTIONS
  timed "ASan + UBSan tests (unit, integration)" $((SECONDS - t))
fi

if [ "$builds_ok" -eq 1 ]; then
  step "Waiting for the fuzzing runs"
  t=$SECONDS
  if join fuzz "fuzzing runs"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("fuzz: a fuzzing run (decoder, sink, control, spool or keys) failed")
  fi
  timed "waiting for them after the ASan tests" $((SECONDS - t))
fi

echo
echo "== Time per stage (wall clock; background stages overlap the ones before them) =="
for s in "${stage_times[@]}"; do echo "  $s"; done
printf '  %-64s %5d s\n' "whole run" $((SECONDS - run_start))
echo
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "colmet: $passed passed, $failed failed"
rm -rf "$logs"
[ "$failed" -eq 0 ]
