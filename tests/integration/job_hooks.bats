#!/usr/bin/env bats
# colmet-job start / stop / status, as scheduler hooks call them (root).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  require_root
  cd "$BATS_TEST_TMPDIR"
  RUN=$BATS_TEST_TMPDIR/run
  LOG=$BATS_TEST_TMPDIR/colmet.log
  OUT=$BATS_TEST_TMPDIR/out
  mkdir -p "$OUT"
  URI="ipc://$BATS_TEST_TMPDIR/collector.ipc"
  JOBS=()
}

teardown() {
  local j
  for j in "${JOBS[@]}"; do
    "$COLMET_BIN/colmet-job" stop --hook --job-id "$j" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG" || true
  done
  for rel in "${CGROUPS[@]}"; do remove_job_cgroup "$rel"; rmdir "$CGROOT/perf_event$rel" 2>/dev/null || true; done
  [ -n "${COLLECTOR_PID:-}" ] && stop_pid "$COLLECTOR_PID"
  echo "--- colmet.log"; cat "$LOG" 2>/dev/null || true
  echo "--- collector.log"; cat "$BATS_TEST_TMPDIR/collector.log" 2>/dev/null || true
}

# job_cgroup USER JOB: the OAR cgroup of the job, created like OAR's JRM does,
# in $JOB_REL. Not to be called in $(...): teardown must see what it adds.
job_cgroup() {
  JOB_REL="/oar/$1_$2"
  make_job_cgroup "$JOB_REL"
  CGROUPS+=("$JOB_REL")
  JOBS+=("$2")
}

start_job() {  # start_job JOB USER [args...]
  local job=$1 user=$2; shift 2
  "$COLMET_BIN/colmet-job" start --job-id "$job" --user "$user" --scheduler oar --zeromq-uri "$URI" \
    --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG" -s 0.5 "$@"
}

record_pid() { sed -n 's/^pid=//p' "$RUN/$1.pid"; }

@test "start returns at once, the sampler runs outside the job's cgroups, stop stores the data and cleans up" {
  start_collector "$URI" "$OUT"
  job=$((1000 + RANDOM))
  job_cgroup alice "$job"; rel=$JOB_REL
  # perf counters where the kernel has perf_event (not in user-mode Linux).
  spec=period=0.5; have_perf && spec=perfhw:task_clock,page_faults
  t0=$(date +%s%N)
  run start_job "$job" alice --spec "$spec"
  t1=$(date +%s%N)
  echo "$output"
  [ "$status" -eq 0 ]
  # Within 2 s (10 s in the user-mode Linux guest, where every exec is slow).
  [ $(( (t1 - t0) / 1000000 )) -lt "$([ -n "${COLMET_UML:-}" ] && echo 10000 || echo 2000)" ]
  pid=$(record_pid "$job")
  [ -n "$pid" ]
  [[ "$(tr '\0' ' ' < /proc/$pid/cmdline)" == *colmet-node*"--job-id $job"* ]]
  # Detached: its own session, not colmet-job's child, and in no job cgroup.
  [ "$(ps -o sid= -p "$pid")" != "$(ps -o sid= -p $$)" ]
  [ "$(ps -o ppid= -p "$pid" | tr -d ' ')" != "$$" ]
  ! grep -q "/oar/" "/proc/$pid/cgroup"
  # colmet's perf_event directory (v1); on v2 the job's own directory serves.
  cgroup_is_v2 || ! have_perf || [ -d "$CGROOT/perf_event$rel" ]

  run "$COLMET_BIN/colmet-job" status --run-dir "$RUN"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$job"*alice*"$pid"*running*"0.5s"*"$URI"*"$rel"*"$spec"* ]]

  # Work of the job, started after the sampler: counted through the perf cgroup,
  # which holds the sh from its echo on, then colmet-cputime (the same process)
  # and the workload: what colmet-cputime's whole-life figure covers.
  in_cgroup "$rel" sh -c "[ ! -d $CGROOT/perf_event$rel ] || echo \$\$ > $CGROOT/perf_event$rel/cgroup.procs; exec $COLMET_BIN/colmet-cputime --output $BATS_TEST_TMPDIR/cputime.json -- $COLMET_BIN/colmet-workload --cpu-seconds 1"

  run "$COLMET_BIN/colmet-job" stop --job-id "$job" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  echo "$output"
  [ "$status" -eq 0 ]
  ! kill -0 "$pid" 2>/dev/null
  [ ! -e "$RUN/$job.pid" ]
  [ ! -d "$CGROOT/perf_event$rel" ]
  grep -q "sampler (pid $pid) stopped" "$LOG"

  stop_pid "$COLLECTOR_PID"; COLLECTOR_PID=
  require_h5py
  f="$OUT/$job.h5"
  [ -f "$f" ]
  cpu=$(h5 "$f" 'last(list(f["hosts"])[0], "cgroup_cpu", "usage")')
  read -r low high < <(exec_truth "$BATS_TEST_TMPDIR/cputime.json")
  echo "whole-life CPU $low s (with colmet-cputime's process $high s), cgroup CPU time $cpu s"
  between_pct "$cpu" "$low" "$high" "$CPU_PCT"
  if have_perf; then
    task=$(h5 "$f" 'last(list(f["hosts"])[0], "perfhw", "task_clock")')
    echo "perf task_clock $task s"
    between_pct "$task" "$low" "$high" "$CPU_PCT"
  fi
  host=$(h5 "$f" 'list(f["hosts"])[0]')
  [ "$(h5 "$f" 'str(f["hosts"]["'"$host"'"].attrs["user"])')" = alice ]
  [ "$(h5 "$f" 'str(f["hosts"]["'"$host"'"].attrs["colmet_spec"])')" = "$spec" ]
}

@test "starting twice keeps the one sampler" {
  job=$((2000 + RANDOM))
  job_cgroup bob "$job"
  run start_job "$job" bob
  [ "$status" -eq 0 ]
  pid=$(record_pid "$job")
  run start_job "$job" bob
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"already running (pid $pid)"* ]]
  [ "$(record_pid "$job")" = "$pid" ]
  [ "$(pgrep -f -c -- "colmet-node --job-id $job ")" -eq 1 ]
}

@test "stopping an unknown job: an error outside hook mode, exit 0 and a log line in hook mode" {
  run "$COLMET_BIN/colmet-job" stop --job-id no-such-job --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 1 ]
  [[ "$output" == *"no sampler recorded"* ]]
  run "$COLMET_BIN/colmet-job" stop --hook --job-id no-such-job --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  [ "$(grep -c 'job no-such-job: no sampler recorded' "$LOG")" -eq 2 ]
}

@test "a sampler that died: status says so, stop cleans up, start starts a new one" {
  job=$((3000 + RANDOM))
  job_cgroup carol "$job"; rel=$JOB_REL
  run start_job "$job" carol
  [ "$status" -eq 0 ]
  pid=$(record_pid "$job")
  kill -9 "$pid"
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  run "$COLMET_BIN/colmet-job" status --run-dir "$RUN"
  echo "$output"
  [ "$status" -eq 3 ]
  [[ "$output" == *"$job"*dead* ]]
  run start_job "$job" carol
  [ "$status" -eq 0 ]
  grep -q "job $job: the sampler recorded in .* is gone; starting a new one" "$LOG"
  pid2=$(record_pid "$job")
  [ "$pid2" != "$pid" ]
  kill -9 "$pid2"
  for i in $(seq 50); do kill -0 "$pid2" 2>/dev/null || break; sleep 0.05; done
  run "$COLMET_BIN/colmet-job" stop --hook --job-id "$job" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  grep -q "job $job: the sampler (pid $pid2) had already exited" "$LOG"
  [ ! -e "$RUN/$job.pid" ]
  [ ! -d "$CGROOT/perf_event$rel" ]
}

@test "with the collector down, start returns within 2 s and stop within its timeout" {
  URI="tcp://127.0.0.1:$(free_port)"
  job=$((4000 + RANDOM))
  job_cgroup dave "$job"
  t0=$(date +%s%N)
  run start_job "$job" dave --hook
  t1=$(date +%s%N)
  [ "$status" -eq 0 ]
  [ $(( (t1 - t0) / 1000000 )) -lt 2000 ]
  sleep 1
  t0=$(date +%s%N)
  run "$COLMET_BIN/colmet-job" stop --hook --job-id "$job" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG" --timeout 3
  t1=$(date +%s%N)
  [ "$status" -eq 0 ]
  [ $(( (t1 - t0) / 1000000 )) -lt 3500 ]
  [ ! -e "$RUN/$job.pid" ]
}

@test "odd user names and non-numeric job ids" {
  start_collector "$URI" "$OUT"
  user="j.o'neil-x@LAB"
  job="77_3.batch"
  job_cgroup "$user" "$job"; rel=$JOB_REL
  run start_job "$job" "$user"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -f "$RUN/77_3.batch.pid" ]
  run "$COLMET_BIN/colmet-job" status --run-dir "$RUN"
  [[ "$output" == *"$job"*"$user"*running* ]]
  run "$COLMET_BIN/colmet-job" stop --job-id "$job" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  stop_pid "$COLLECTOR_PID"; COLLECTOR_PID=
  [ -f "$OUT/77_3.batch.h5" ]
  # A user name that would escape the cgroup tree is refused.
  run "$COLMET_BIN/colmet-job" start --job-id 5 --user "../../x" --scheduler oar --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 64 ]
  [[ "$output" == *"user name"* ]]
}

@test "a spec with an unknown event: clear log line, the job is sampled with the defaults, exit 0" {
  job=$((5000 + RANDOM))
  job_cgroup erin "$job"
  run start_job "$job" erin --hook --spec perfhw:task_clock,no_such_event
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  grep -q "job $job: ignoring colmet spec 'perfhw:task_clock,no_such_event': .*no_such_event.*; sampling with the site defaults" "$LOG"
  pid=$(record_pid "$job")
  kill -0 "$pid"
  [[ "$(tr '\0' ' ' < /proc/$pid/cmdline)" != *perfhw* ]]
  job_cgroup erin "$job-b"
  run start_job "$job-b" erin --spec 'period=0.01'
  [ "$status" -eq 0 ]
  grep -q "job $job-b: ignoring colmet spec 'period=0.01': period 0.01 is out of range" "$LOG"
  grep -q "job $job-b: sampler started (pid [0-9]*, cgroup /oar/erin_$job-b, every 0.5 s" "$LOG"
}

@test "hook mode never fails: a job without cgroup is logged, exit 0, nothing left" {
  CGROUPS+=("/oar/nobody_999999")
  run start_job 999999 nobody --hook
  [ "$status" -eq 0 ]
  # OAR's path (v1), or the first of OAR's v2 layouts (none exists).
  where=/oar/nobody_999999
  cgroup_is_v2 && where=/oar.slice/oar-u$(id -u nobody).slice/oar-u$(id -u nobody)-j999999.slice
  grep -q "job 999999: cannot sample cgroup $where" "$LOG"
  [ ! -e "$RUN/999999.pid" ]
  [ ! -d "$CGROOT/perf_event/oar/nobody_999999" ]
  run start_job 999999 nobody
  [ "$status" -eq 1 ]
}

# cgroup_levels REL: every directory of REL or below it left in any hierarchy.
cgroup_levels() {
  local c
  if cgroup_is_v2; then find "$CGROOT$1" -type d 2>/dev/null; else
    for c in $V1_CONTROLLERS perf_event; do find "$CGROOT/$c$1" -type d 2>/dev/null; done
  fi
}

@test "--create-cgroup: the levels start made go with the last job under them; levels that were there stay" {
  start_collector "$URI" "$OUT"
  top="/colmet-test-$$"
  CGROUPS+=("$top/uid_0/job_1" "$top/uid_0/job_2" "$top/uid_0" "$top" "/colmet-kept-$$/job_3" "/colmet-kept-$$")
  for j in 1 2; do
    run "$COLMET_BIN/colmet-job" start --job-id "t$$-$j" --user root --cgroup "$top/uid_0/job_$j" --create-cgroup \
      --zeromq-uri "$URI" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG" -s 0.5
    echo "$output"
    [ "$status" -eq 0 ]
    JOBS+=("t$$-$j")
  done
  # Job 1 made the levels; job 2 found them made by job 1 and takes them over.
  grep -q "^created_from=$top\$" "$RUN/t$$-1.pid"
  grep -q "^created_from=$top\$" "$RUN/t$$-2.pid"
  # A step sampled below job 1 (as Slurm's steps are): its stop leaves job 1's cgroup.
  CGROUPS=("$top/uid_0/job_1/step_0" "${CGROUPS[@]}")
  run "$COLMET_BIN/colmet-job" start --job-id "t$$-1.0" --user root --cgroup "$top/uid_0/job_1/step_0" \
    --create-cgroup --zeromq-uri "$URI" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG" -s 0.5
  [ "$status" -eq 0 ]
  JOBS+=("t$$-1.0")
  run "$COLMET_BIN/colmet-job" stop --job-id "t$$-1.0" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  [ -z "$(cgroup_levels "$top/uid_0/job_1/step_0")" ]
  [ -n "$(cgroup_levels "$top/uid_0/job_1")" ]
  grep -q "job t$$-1.0: leaving cgroup level $top/uid_0/job_1: it is or holds another running job's cgroup" "$LOG"
  run "$COLMET_BIN/colmet-job" stop --job-id "t$$-1" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  # Job 2 still runs under uid_0: the level stays.
  [ -n "$(cgroup_levels "$top/uid_0/job_2")" ]
  [ -z "$(cgroup_levels "$top/uid_0/job_1")" ]
  grep -q "job t$$-1: leaving cgroup level $top/uid_0: it is or holds another running job's cgroup" "$LOG"
  # The last job to end removes them.
  run "$COLMET_BIN/colmet-job" stop --job-id "t$$-2" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  [ -z "$(cgroup_levels "$top")" ]
  grep -q "job t$$-2: removed cgroup level $top that start created" "$LOG"
  # A level that was there before is never removed.
  make_job_cgroup "/colmet-kept-$$"

  run "$COLMET_BIN/colmet-job" start --job-id "t$$-3" --user root --cgroup "/colmet-kept-$$/job_3" --create-cgroup \
    --zeromq-uri "$URI" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG" -s 0.5
  [ "$status" -eq 0 ]
  JOBS+=("t$$-3")
  grep -q "^created_from=\$" "$RUN/t$$-3.pid"
  run "$COLMET_BIN/colmet-job" stop --job-id "t$$-3" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  [ -z "$(cgroup_levels "/colmet-kept-$$/job_3")" ]
  [ -n "$(cgroup_levels "/colmet-kept-$$")" ]
}

@test "site defaults in colmet.conf [node]: the perf events of a plain 'perfhw' spec, a node backend for every job" {
  require_h5py
  # What an admin writes (colmet.conf(5), "Site defaults"): colmet-job start
  # passes the file on, colmet-node takes the keys a job's spec leaves open.
  sys=$BATS_TEST_TMPDIR/sys
  mkdir -p "$sys/devices/system/cpu"
  cp -r "$BATS_TEST_DIRNAME/../fixtures/node/thermal/sys/." "$sys/"
  cp /sys/devices/system/cpu/online "$sys/devices/system/cpu/online"
  conf=$BATS_TEST_TMPDIR/colmet.conf
  printf '[node]\nperfhw-list = task_clock,page_faults\nenable-temperature = true\n' >"$conf"
  start_collector "$URI" "$OUT"
  job=$((7000 + RANDOM))
  job_cgroup carol "$job"
  spec=period=0.5; have_perf && spec=perfhw
  run start_job "$job" carol --config "$conf" --sysfs-root "$sys" --spec "$spec"
  [ "$status" -eq 0 ]
  pid=$(record_pid "$job")
  # Neither comes from colmet-job's command line: the sampler read them.
  [[ "$(tr '\0' ' ' < /proc/$pid/cmdline)" != *temperature* ]]
  [[ "$(tr '\0' ' ' < /proc/$pid/cmdline)" != *task_clock* ]]
  sleep 1
  run "$COLMET_BIN/colmet-job" stop --job-id "$job" --run-dir "$RUN" --spool-dir "$BATS_TEST_TMPDIR/spool" --log-file "$LOG"
  [ "$status" -eq 0 ]
  stop_pid "$COLLECTOR_PID"; COLLECTOR_PID=
  f="$OUT/$job.h5"
  host=$(h5 "$f" 'list(f["hosts"])[0]')
  [ "$(h5 "$f" "f['hosts/$host/temperature'].attrs['scope']")" = node ]
  [ "$(h5 "$f" "last('$host', 'temperature', 'coretemp1.core_0')")" = "44.0" ]
  if have_perf; then
    [ "$(h5 "$f" "seg('$host', 'perfhw')[0]")" = "['task_clock', 'page_faults', 'task_clock.scaling', 'page_faults.scaling']" ]
  fi
}
