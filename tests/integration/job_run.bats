#!/usr/bin/env bats
# colmet-job run: exit status, summary, and no cgroup left behind.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  require_root
  cd "$BATS_TEST_TMPDIR"
}

leftover_cgroups() {
  ls -d "$CGROOT"/*/colmet/run-* "$CGROOT"/colmet/run-* "$CGROOT"/*/colmet/t-* "$CGROOT"/colmet/t-* 2>/dev/null || true
}

@test "colmet-job run exits with the command's status and leaves no cgroup" {
  run "$COLMET_BIN/colmet-job" run --job-id "t-exit-$$" --hdf5-dir out -- sh -c 'exit 3'
  echo "$output"
  [ "$status" -eq 3 ]
  [[ "$output" == *"exit status 3"* ]]
  [ -z "$(leftover_cgroups)" ]
  [ -f "out/t-exit-$$.h5" ]
}

@test "colmet-job run prints a summary with the workload's CPU time" {
  run "$COLMET_BIN/colmet-job" run --job-id "t-sum-$$" --hdf5-dir out -s 0.5 -- \
      "$COLMET_BIN/colmet-workload" --cpu-seconds 1 --memory-mib 50
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"CPU time"* ]]
  [[ "$output" == *"peak memory"* ]]
  [[ "$output" == *"out/t-sum-$$.h5"* ]]
  [ -z "$(leftover_cgroups)" ]
}

@test "colmet-job summary prints a file's summary as run does, and says why when there is none" {
  run "$COLMET_BIN/colmet-job" run --job-id "t-show-$$" --hdf5-dir out -s 0.3 -- "$COLMET_BIN/colmet-workload" --cpu-seconds 0.3
  [ "$status" -eq 0 ]
  ran=$(grep -E '^  (CPU time|peak memory|samples|data) ' <<<"$output")
  # The summary's JSON beside the file: colmet-job reads it without HDF5.
  [ -f "out/t-show-$$.json" ]
  run "$COLMET_BIN/colmet-job" summary "$PWD/out/t-show-$$.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^colmet:\ job\ t-show-$$\ ended\ after\ [0-9.]+\ s$ ]]
  [ "$(grep -E '^  (CPU time|peak memory|samples|data) ' <<<"$output")" = "$ran" ]
  # No file: waited for, then said (srun's host may not see the collector's files).
  run "$COLMET_BIN/colmet-job" summary --wait 0.3 out/none.json
  [ "$status" -eq 1 ]
  [ "$output" = "colmet: no summary of out/none.json within 0.3 s: out/none.json does not exist (the job has not ended, or no HDF5 sink stores it)" ]
  # Not a summary: said at once, with the reason.
  echo "not json" > out/bad.json
  SECONDS=0
  run "$COLMET_BIN/colmet-job" summary --wait 5 out/bad.json
  [ "$status" -eq 1 ]
  [ "$SECONDS" -lt 3 ]
  [ "$output" = "colmet: no summary of out/bad.json within 5 s: out/bad.json: not a JSON object" ]
  run "$COLMET_BIN/colmet-job" summary --wait 700 out/none.json
  [ "$status" -eq 64 ]
}

@test "Ctrl-C reaches the command, colmet-job cleans up and exits 130" {
  # A new process group stands in for the terminal's foreground group.
  # bats runs it in the background, where SIGINT starts ignored: python
  # restores the default, as a terminal's foreground job has it.
  "$PY" -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setsid(); os.execv(sys.argv[1], sys.argv[1:])' \
    "$COLMET_BIN/colmet-job" run --job-id "t-int-$$" --hdf5-dir out -- sleep 30 2>"$BATS_TEST_TMPDIR/run.log" &
  pid=$!
  for i in $(seq 300); do   # up to 30 s: a loaded user-mode Linux guest is slow
    pgrep -s "$pid" -x sleep >/dev/null && break
    sleep 0.1
  done
  kill -INT -- "-$pid"
  wait "$pid" && status=0 || status=$?
  cat "$BATS_TEST_TMPDIR/run.log"
  [ "$status" -eq 130 ]
  [ -z "$(leftover_cgroups)" ]
  [ -f "out/t-int-$$.h5" ]
}

@test "a command that does not exist gives 127 and a clear message" {
  run -127 "$COLMET_BIN/colmet-job" run --job-id "t-nf-$$" --hdf5-dir out -- /nonexistent/program
  [ "$status" -eq 127 ]
  [[ "$output" == *"cannot run /nonexistent/program"* ]]
  [ -z "$(leftover_cgroups)" ]
}

@test "colmet-job run without a command is a usage error" {
  run "$COLMET_BIN/colmet-job" run
  [ "$status" -eq 64 ]
}

@test "a command shorter than one period still gets a complete file and summary" {
  for i in 1 2 3; do
    run "$COLMET_BIN/colmet-job" run --job-id "t-short-$$-$i" --hdf5-dir out -- true
    echo "$output"
    [ "$status" -eq 0 ]
    # job_start and job_end at least (one more when a period boundary falls inside), none lost.
    [[ "$output" =~ samples\ +([0-9]+)\ received,\ 0\ lost ]]
    [ "${BASH_REMATCH[1]}" -ge 2 ]
  done
  [ -z "$(leftover_cgroups)" ]
}

@test "a job id that is already running is refused, and the running job is untouched" {
  "$COLMET_BIN/colmet-job" run --job-id "t-dup-$$" --hdf5-dir out -- sleep 2 2>"$BATS_TEST_TMPDIR/first.log" &
  first=$!
  for i in $(seq 50); do [ -f "out/t-dup-$$.h5" ] && break; sleep 0.1; done
  run "$COLMET_BIN/colmet-job" run --job-id "t-dup-$$" --hdf5-dir out2 -- true
  [ "$status" -eq 64 ]
  [[ "$output" == *"already running"* ]]
  wait "$first"
  [ -z "$(leftover_cgroups)" ]
}

@test "unknown backends and conflicting options are usage errors" {
  run "$COLMET_BIN/colmet-job" run --disable-backend no_such_backend -- true
  [ "$status" -eq 64 ]
  [[ "$output" == *"unknown backend"* ]]
  run "$COLMET_BIN/colmet-job" run --hdf5-dir x --zeromq-uri tcp://127.0.0.1:1 -- true
  [ "$status" -eq 64 ]
  run "$COLMET_BIN/colmet-job" run --job-id "a/b" -- true
  [ "$status" -eq 64 ]
}

@test "colmet-job run --enable-perfhw counts software events, marks missing hardware events, and cleans up" {
  require_perf
  run "$COLMET_BIN/colmet-job" run --job-id "t-perf-$$" --hdf5-dir out -s 0.5 --enable-perfhw \
      --perfhw-list task_clock,cpu_cycles,page_faults -- \
      "$COLMET_BIN/colmet-cputime" --output cputime.json -- "$COLMET_BIN/colmet-workload" --cpu-seconds 1
  echo "$output"
  [ "$status" -eq 0 ]
  require_h5py
  file="out/t-perf-$$.h5"
  host=$(h5 "$file" "list(f['hosts'])[0]")
  cpu=$(h5 "$file" "last('$host', 'cgroup_cpu', 'usage')")
  task=$(h5 "$file" "last('$host', 'perfhw', 'task_clock')")
  truth=$(cputime_of cputime.json)
  echo "whole-life CPU $truth s, cgroup CPU time $cpu s, perf task_clock $task s"
  # Both are cgroup-level figures: each is held to the whole-life CPU time of
  # what the cgroup held (colmet-job's child from its move into the cgroup:
  # colmet-cputime and the workload), not to the other.
  within_pct "$cpu" "$truth" "$CPU_PCT"
  within_pct "$task" "$truth" "$CPU_PCT"
  # No PMU on a VM: cycles are not counted, and stored as NaN, never 0.
  if ! perf stat -e cycles true 2>&1 | grep -q "not supported"; then skip "this machine counts cycles"; fi
  [ "$(h5 "$file" "bool(np.isnan(col('$host', 'perfhw', 'cpu_cycles')).all())")" = "True" ]
  # ...and the reason is stored with the data.
  [[ "$(h5 "$file" "f['hosts']['$host']['perfhw']['segment_0'].attrs['last_status']")" == *"unsupported: cpu_cycles"* ]]
  [ -z "$(leftover_cgroups)" ]
  [ -z "$(ls -d "$CGROOT"/perf_event/colmet/t-perf-* 2>/dev/null)" ]
}

@test "an unknown perf event is a clear error at start" {
  require_perf
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup / --enable-perfhw --perfhw-list no_such_event
  [ "$status" -eq 64 ]
  [[ "$output" == *"unknown perf event 'no_such_event'"* ]]
}

@test "colmet-job mount-perf-event makes the perf_event cgroups ready, and says why when it cannot" {
  require_root
  run "$COLMET_BIN/colmet-job" mount-perf-event
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "perf_event cgroups: /sys/fs/cgroup"* ]]
  dir=${output#perf_event cgroups: }
  dir=${dir%% *}
  [ -f "$dir/cgroup.procs" ]
  # Twice is the same.
  run "$COLMET_BIN/colmet-job" mount-perf-event
  [ "$status" -eq 0 ] && [[ "$output" == "perf_event cgroups: $dir"* ]]
  run "$COLMET_BIN/colmet-job" mount-perf-event --cgroup-root "$BATS_TEST_TMPDIR/none"
  [ "$status" -eq 69 ]
  [[ "$output" == *"$BATS_TEST_TMPDIR/none: No such file or directory"* ]]
}
