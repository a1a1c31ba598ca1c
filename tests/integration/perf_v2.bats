#!/usr/bin/env bats
# perf counters of a job in a cgroup v2 directory: perf_event_open in cgroup
# mode on the unified tree's directory, which works while no cgroup v1
# perf_event hierarchy is mounted (the controller is then bound to v2). On a
# hybrid host (v1 controllers, cgroup2 at /sys/fs/cgroup/unified), colmet-job
# run --cgroup-root /sys/fs/cgroup/unified is colmet on the v2 tree: the
# task_clock is checked against the workload's whole-life CPU (its parent's
# wait4) and the cgroup's own CPU time, and colmet must not mount a v1
# perf_event hierarchy there. On a pure v2 host the root itself is used.
# Needs root and a kernel with perf_event (user-mode Linux has none).

load helpers
bats_require_minimum_version 1.5.0

v1_perf_mounted() { grep -qE ' - cgroup [^ ]+ [^ ]*perf_event' /proc/self/mountinfo; }
perf_on_v1() { awk '$1 == "perf_event" && $2 != 0 { found = 1 } END { exit !found }' /proc/cgroups; }

setup_file() {
  [ "$(id -u)" -eq 0 ] || return 0
  # A v1 perf_event hierarchy other tests mounted (colmet mounts one for v1
  # jobs) holds the controller: unmounted here when it holds no cgroup any
  # more (empty leftovers are removed), and mounted again at the end.
  # The kernel keeps an unmounted hierarchy alive while it has cgroups, also
  # ones still being freed after their rmdir: wait until only the root is
  # left (/proc/cgroups' count) before unmounting.
  if v1_perf_mounted && [ -d /sys/fs/cgroup/perf_event ]; then
    find /sys/fs/cgroup/perf_event -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null || true
    for _ in $(seq 50); do
      awk '$1 == "perf_event" && $3 == 1 { found = 1 } END { exit !found }' /proc/cgroups && break
      sleep 0.1
    done
    umount /sys/fs/cgroup/perf_event 2>/dev/null && echo remount >"$BATS_FILE_TMPDIR/remount"
    for _ in $(seq 50); do perf_on_v1 || break; sleep 0.1; done
  fi
}

teardown_file() {
  if [ -f "$BATS_FILE_TMPDIR/remount" ] && ! v1_perf_mounted; then
    mount -t cgroup -o perf_event cgroup /sys/fs/cgroup/perf_event || true
  fi
}

setup() {
  require_root
  require_perf
  require_h5py
  if cgroup_is_v2; then ROOT=$CGROOT
  elif [ -e "$CGROOT/unified/cgroup.controllers" ]; then ROOT=$CGROOT/unified
  else skip "no cgroup2 tree on this host"; fi
  perf_on_v1 && skip "a cgroup v1 perf_event hierarchy that still holds cgroups binds the controller: perf cannot count on cgroup v2 here"
  cd "$BATS_TEST_TMPDIR"
}

@test "perf task_clock of a job in a cgroup v2 directory matches its whole-life CPU and the cgroup's own" {
  run "$COLMET_BIN/colmet-job" run --job-id "pv2-$$" --hdf5-dir out -s 0.5 --cgroup-root "$ROOT" \
      --enable-perfhw --perfhw-list task_clock,page_faults -- \
      "$COLMET_BIN/colmet-cputime" --output cputime.json -- "$COLMET_BIN/colmet-workload" --cpu-seconds 1.5
  echo "$output"
  [ "$status" -eq 0 ]
  f=out/pv2-$$.h5
  host=$(h5 "$f" "list(f['hosts'])[0]")
  task=$(h5 "$f" "last('$host', 'perfhw', 'task_clock')")
  faults=$(h5 "$f" "last('$host', 'perfhw', 'page_faults')")
  cpu=$(h5 "$f" "last('$host', 'cgroup_cpu', 'usage')")
  truth=$(cputime_of cputime.json)
  echo "perf task_clock $task s, cgroup CPU time $cpu s, whole-life CPU $truth s, page faults $faults"
  within_pct "$task" "$truth" "$CPU_PCT"
  within_pct "$task" "$cpu" "$CPU_PCT"
  at_least "$faults" 1
  # The counters were opened on the v2 directory: nothing mounted on v1.
  ! v1_perf_mounted
  [ -z "$(ls -d "$ROOT"/colmet/pv2-* 2>/dev/null)" ]
}

@test "a sampler started before its job's v2 directory exists opens the counters there as soon as it appears" {
  # Slurm's cgroup/v2 job: the sampler starts at the prolog, before
  # slurmstepd makes job_<id>; --find-cgroup names the level. The counters
  # must open on the directory when it appears, before the first task runs
  # in it, so they hold the task's whole CPU time.
  base=$ROOT/colmetpv2w$$
  mkdir "$base"
  URI="ipc://$BATS_TEST_TMPDIR/collector.ipc"
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" --hdf5-dir out \
    --flush-interval 0.2 -v 2>>collector.log &
  collector=$!
  "$COLMET_BIN/colmet-node" --job-id "pv2w-$$" --zeromq-uri "$URI" -s 2 --control-dir "$BATS_TEST_TMPDIR/ctl" \
    --spool-dir none --cgroup-root "$ROOT" --cgroup "/colmetpv2w$$/job_9" --find-cgroup job_9 \
    --enable-perfhw --perfhw-list task_clock,page_faults -v 2>>node.log &
  node=$!
  wait_for_text node.log "its counters open once the job's cgroup is found"
  wait_for_text node.log "control socket"
  # Waiting, the control status says so and a change is refused.
  run "$COLMET_BIN/colmet-ctl" --control-dir "$BATS_TEST_TMPDIR/ctl" --job-id "pv2w-$$" --status
  echo "$output"
  [[ "$output" == *"perfhw         waiting: task_clock,page_faults"* ]]
  sleep 0.5
  mkdir "$base/job_9"
  sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2/colmet-cputime" --output cputime.json -- "$2/colmet-workload" --cpu-seconds 1.5' \
    sh "$base/job_9" "$COLMET_BIN"
  run "$COLMET_BIN/colmet-ctl" --control-dir "$BATS_TEST_TMPDIR/ctl" --job-id "pv2w-$$" --status
  echo "$output"
  [[ "$output" == *"perfhw         counting: task_clock,page_faults"* ]]
  stop_pid "$node"
  rmdir "$base/job_9" "$base"
  f=out/pv2w-$$.h5
  for _ in $(seq 100); do [ -f "$f" ] && [ "$(h5 "$f" 'int("summary" in f)' 2>/dev/null)" = 1 ] && break; sleep 0.1; done
  stop_pid "$collector"
  cat node.log
  host=$(h5 "$f" "list(f['hosts'])[0]")
  task=$(h5 "$f" "last('$host', 'perfhw', 'task_clock')")
  cpu=$(h5 "$f" "last('$host', 'cgroup_cpu', 'usage')")
  read -r low high < <(exec_truth cputime.json)
  echo "perf task_clock $task s, cgroup CPU time $cpu s, whole-life CPU $low s (with colmet-cputime's process $high s)"
  between_pct "$task" "$low" "$high" "$CPU_PCT"
  between_pct "$cpu" "$low" "$high" "$CPU_PCT"
  grep -q "perfhw: counting task_clock,page_faults on $base/job_9" node.log
  # The job's metadata came through (job_start named it before the directory existed).
  [ -n "$(h5 "$f" "f['hosts']['$host'].attrs.get('job_start_ns', '')")" ]
  ! v1_perf_mounted
}

@test "colmet-job mount-perf-event on the v2 tree mounts nothing and says why" {
  run "$COLMET_BIN/colmet-job" mount-perf-event --cgroup-root "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"cgroup v2: perf_event is part of the unified hierarchy"* ]]
  ! v1_perf_mounted
}
