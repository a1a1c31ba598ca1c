#!/usr/bin/env bats
# colmet on a pure cgroup v2 machine, checked against truth taken outside the
# workload: colmet-job run (CPU time against the parent's wait4, peak memory,
# block I/O on a real block device), and the scheduler hooks' path as OAR 3
# lays a job out (the job's cgroup made by the scheduler, the sampler outside
# it, the collector down: the node spool, flush-spool, nothing left behind),
# and the warning when the job's processes leave the directory sampled.
# Run in the user-mode Linux guest (uml_run.sh --disk: a block device for the
# I/O check); skips on a host that is not pure cgroup v2.

load ../helpers
bats_require_minimum_version 1.5.0

setup() {
  require_root
  require_h5py
  cgroup_is_v2 || skip "not a pure cgroup v2 machine: tests/integration/uml/uml_run.sh runs this suite in one"
  cd "$BATS_TEST_TMPDIR"
  OUT=$BATS_TEST_TMPDIR/out
  RUN=$BATS_TEST_TMPDIR/run
  SPOOL=$BATS_TEST_TMPDIR/spool
  LOG=$BATS_TEST_TMPDIR/colmet-job.log
  mkdir -p "$OUT"
  MADE=()
  JOBS=()
}

teardown() {
  local j d
  for j in "${JOBS[@]}"; do
    "$COLMET_BIN/colmet-job" stop --hook --job-id "$j" --run-dir "$RUN" --spool-dir none --log-file "$LOG" || true
  done
  [ -n "${COLLECTOR_PID:-}" ] && stop_pid "$COLLECTOR_PID"
  for d in "${MADE[@]}"; do remove_job_cgroup "$d"; done
  rmdir "$CGROOT/oar.slice" 2>/dev/null || true
  mountpoint -q "$BATS_TEST_TMPDIR/disk" && umount "$BATS_TEST_TMPDIR/disk"
  echo "--- colmet-job.log"; cat "$LOG" 2>/dev/null || true
  echo "--- collector.log"; cat "$BATS_TEST_TMPDIR/collector.log" 2>/dev/null || true
}

summary() { h5 "$1" "float(f['summary'].attrs['$2'])"; }

@test "colmet-job run: CPU time within 2 % of the parent's wait4, peak memory, no cgroup left" {
  run "$COLMET_BIN/colmet-job" run --job-id "v2-run-$$" --hdf5-dir out -s 0.5 -- \
      "$COLMET_BIN/colmet-cputime" --output cputime.json -- "$COLMET_BIN/colmet-workload" --cpu-seconds 1.5 --memory-mib 96
  echo "$output"
  [ "$status" -eq 0 ]
  f=out/v2-run-$$.h5
  cpu=$(summary "$f" cpu_time_s)
  truth=$(cputime_of cputime.json)
  peak=$(summary "$f" peak_memory_bytes)
  echo "cgroup CPU time $cpu s, whole-life CPU $truth s, peak memory $peak B"
  within_pct "$cpu" "$truth" "$CPU_PCT"
  at_least "$peak" $((96 * 1024 * 1024))
  # The cgroup colmet-job made is gone.
  [ -z "$(ls -d "$CGROOT"/colmet/v2-run-* 2>/dev/null)" ]
}

@test "colmet-job run: block I/O written to a real device, from the cgroup's io.stat" {
  [ -n "${COLMET_UML_DISK:-}" ] || skip "no spare block device (uml_run.sh --disk gives the guest one)"
  mkfs.ext4 -q -F "$COLMET_UML_DISK"
  mkdir -p disk
  mount "$COLMET_UML_DISK" disk
  run "$COLMET_BIN/colmet-job" run --job-id "v2-io-$$" --hdf5-dir out -s 0.5 -- \
      "$COLMET_BIN/colmet-workload" --write-mib 24 --file disk/data
  echo "$output"
  [ "$status" -eq 0 ]
  written=$(summary "out/v2-io-$$.h5" write_bytes)
  echo "block I/O written: $written B (the workload wrote and fsynced 24 MiB)"
  at_least "$written" $((24 * 1024 * 1024))
  # Not the whole disk's traffic either (ext4's journal adds a little).
  "$PY" -c "import sys; sys.exit(0 if $written < 32 * 1024 * 1024 else 1)"
}

# oar3_job USER JOB: the job's cgroup as OAR 3's job resource manager makes it
# on cgroup v2 (systemd: oar.slice/oar-u<uid>.slice/oar-u<uid>-j<job>.slice),
# its processes in a scope below it; in $JOB_DIR.
oar3_job() {
  local uid
  uid=$(id -u "$1")
  JOB_REL="/oar.slice/oar-u$uid.slice/oar-u$uid-j$2.slice"
  make_job_cgroup "$JOB_REL/oar-u$uid-j$2-p1.scope"
  MADE+=("/oar.slice/oar-u$uid.slice")
  JOBS+=("$2")
}

@test "hooks, OAR 3 layout, collector down: the sampler outside the job, the spool flushed later, nothing left" {
  job=$((4000 + RANDOM))
  oar3_job root "$job"
  port=$(free_port)
  uri=tcp://127.0.0.1:$port
  # No collector yet: the job's messages go to the node spool.
  run "$COLMET_BIN/colmet-job" start --hook --job-id "$job" --user root --scheduler oar --zeromq-uri "$uri" \
      --run-dir "$RUN" --spool-dir "$SPOOL" --log-file "$LOG" -s 0.5
  [ "$status" -eq 0 ]
  pid=$(sed -n 's/^pid=//p' "$RUN/$job.pid")
  [ -n "$pid" ]
  cat "/proc/$pid/cgroup"
  # The sampler is not in the job's cgroup, and colmet made no cgroup.
  ! grep -q "oar.slice" "/proc/$pid/cgroup"
  [ -z "$(find "$CGROOT" -path "$CGROOT/oar.slice" -prune -o -name "*$job*" -print)" ]
  # The job's work, in the scope OAR put its processes in.
  in_cgroup "$JOB_REL/oar-u0-j$job-p1.scope" "$COLMET_BIN/colmet-cputime" --output cputime.json -- \
      "$COLMET_BIN/colmet-workload" --cpu-seconds 1 --memory-mib 32
  run "$COLMET_BIN/colmet-job" stop --hook --job-id "$job" --run-dir "$RUN" --spool-dir "$SPOOL" --log-file "$LOG"
  [ "$status" -eq 0 ]
  ! kill -0 "$pid" 2>/dev/null
  [ ! -e "$RUN/$job.pid" ]
  [ "$(find "$SPOOL" -name '*.spool' | wc -l)" -ge 1 ]
  # The scheduler's cgroup is the scheduler's to remove: still there.
  [ -d "$CGROOT$JOB_REL" ]
  # The collector is back: flush-spool delivers, and the file is complete.
  start_collector "$uri" "$OUT"
  wait_for_text "$BATS_TEST_TMPDIR/collector.log" "listening on"
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL" --log-file "$LOG"
  echo "$output"
  [ "$status" -eq 0 ]
  for _ in $(seq 100); do
    [ -f "$OUT/$job.h5" ] && h5 "$OUT/$job.h5" "'summary' in f" 2>/dev/null | grep -q True && break
    sleep 0.2
  done
  [ "$(find "$SPOOL" -name '*.spool' | wc -l)" -eq 0 ]
  cpu=$(summary "$OUT/$job.h5" cpu_time_s)
  read -r low high < <(exec_truth cputime.json)
  echo "cgroup CPU time $cpu s, whole-life CPU $low s (with colmet-cputime's process $high s)"
  between_pct "$cpu" "$low" "$high" "$CPU_PCT"
  [ "$(h5 "$OUT/$job.h5" "int(f['summary'].attrs['samples_lost'])")" -eq 0 ]
  [[ "$(h5 "$OUT/$job.h5" "str(list(f['hosts'].values())[0].attrs['cgroup'])")" == *"oar-u0-j$job.slice" ]]
}

@test "a process that leaves the job's directory: the warning is logged once, stored and printed" {
  mkdir -p "$CGROOT/colmet-elsewhere-$$"
  MADE+=("/colmet-elsewhere-$$")
  # The job's shell moves itself out (as systemd-run or a user's tool would)
  # and lives on there; colmet-job run waits for it.
  run "$COLMET_BIN/colmet-job" run --job-id "v2-warn-$$" --hdf5-dir out -s 0.2 -- \
      bash -c "sleep 0.6; echo \$\$ > $CGROOT/colmet-elsewhere-$$/cgroup.procs; sleep 2"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"holds none of the job's processes (process "*", seen there before, is now in /colmet-elsewhere-$$)"* ]]
  warning=$(h5 "out/v2-warn-$$.h5" "str(f['summary'].attrs['cgroup_warning'])")
  echo "stored: $warning"
  [[ "$warning" == *"is now in /colmet-elsewhere-$$"* ]]
  # Once: one warning line, not one per sample.
  [ "$(grep -o "seen there before" <<<"$output" | wc -l)" -le 2 ]
}

@test "a job whose processes end in its directory gets no warning" {
  run "$COLMET_BIN/colmet-job" run --job-id "v2-nowarn-$$" --hdf5-dir out -s 0.2 -- bash -c "sleep 1"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *"holds none of the job's processes"* ]]
  [ "$(h5 "out/v2-nowarn-$$.h5" "str(f['summary'].attrs.get('cgroup_warning', ''))")" = "" ]
}
