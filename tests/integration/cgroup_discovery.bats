#!/usr/bin/env bats
# Where colmet-node reads the job: --find-cgroup finds each hierarchy's
# directory from the job's own processes (as Slurm's cgroup plugins lay them
# out: a different path per hierarchy), and a sampler reading a directory
# that holds none of the job's processes says so (log, backend status, host
# attribute, /summary). Real cgroups (v1), a real collector, HDF5 read back.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  require_root
  require_h5py
  cgroup_is_v2 && skip "these layouts are cgroup v1 ones (per-controller hierarchies)"
  cd "$BATS_TEST_TMPDIR"
  OUT=$BATS_TEST_TMPDIR/out
  mkdir -p "$OUT"
  URI="ipc://$BATS_TEST_TMPDIR/collector.ipc"
  TAG=colmetdisc$$_$BATS_TEST_NUMBER
  MADE=()
}

teardown() {
  [ -n "${NODE_PID:-}" ] && stop_pid "$NODE_PID"
  [ -n "${COLLECTOR_PID:-}" ] && stop_pid "$COLLECTOR_PID"
  local d
  for d in "${MADE[@]}"; do
    for p in $(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  done
  sleep 0.1
  for d in "${MADE[@]}"; do find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true; done
  echo "--- node.log"; cat "$BATS_TEST_TMPDIR/node.log" 2>/dev/null || true
  echo "--- collector.log"; cat "$BATS_TEST_TMPDIR/collector.log" 2>/dev/null || true
}

# mk CONTROLLER REL: make a directory in one hierarchy (cpuset gets its CPUs).
mk() {
  local c=$1 rel=$2
  [ -d "$CGROOT/$c" ] || return 0
  mkdir -p "$CGROOT/$c$rel"
  MADE+=("$CGROOT/$c/$(cut -d/ -f2 <<<"$rel")")
  if [ "$c" = cpuset ]; then
    local d=$CGROOT/cpuset p=""
    for part in $(tr / ' ' <<<"$rel"); do
      p="$p/$part"
      cat "$d/cpuset.cpus" >"$CGROOT/cpuset$p/cpuset.cpus"
      cat "$d/cpuset.mems" >"$CGROOT/cpuset$p/cpuset.mems"
    done
  fi
}

# run_measured FILE DIR... -- CMD...: run CMD with its process in each DIR
# (cgroup directories); FILE gets CMD's whole-life CPU time in seconds, from
# its parent's wait4 (the parent is not in those cgroups).
run_measured() {
  local file=$1; shift
  local dirs=()
  while [ "$1" != -- ]; do dirs+=("$1"); shift; done
  shift
  "$PY" - "$file" "${dirs[*]}" "$@" <<'PYEOF'
import os, sys
out, dirs, argv = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
pid = os.fork()
if pid == 0:
    for d in dirs:
        with open(d + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
    os.execv(argv[0], argv)
_, status, ru = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write("%.6f\n" % (ru.ru_utime + ru.ru_stime))
sys.exit(os.waitstatus_to_exitcode(status))
PYEOF
}

start_node() {  # start_node JOB [args...]
  local job=$1; shift
  "$COLMET_BIN/colmet-node" --job-id "$job" --zeromq-uri "$URI" -s 0.2 --control-dir "" --spool-dir "$BATS_TEST_TMPDIR/spool" -v "$@" \
    2>>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
}

# wait_file FILE: until the collector wrote the job's /summary.
wait_summary() {
  local i
  for ((i = 0; i < 100; i++)); do
    [ -f "$1" ] && [ "$(h5 "$1" 'int("summary" in f)' 2>/dev/null)" = 1 ] && return 0
    sleep 0.1
  done
  return 1
}

host_attr() { h5 "$1" "(lambda a: a.decode() if isinstance(a, bytes) else a)(f['hosts'][list(f['hosts'])[0]].attrs.get('$2', ''))"; }
summary_attr() { h5 "$1" "(lambda a: a.decode() if isinstance(a, bytes) else a)(f['summary'].attrs.get('$2', ''))"; }
last_status() { h5 "$1" "(lambda g: (lambda a: a.decode() if isinstance(a, bytes) else a)(g['segment_0'].attrs.get('last_status', '')))(f['hosts'][list(f['hosts'])[0]]['$2'])"; }

@test "a sampler reading a cgroup that holds none of the job's processes warns once and records it" {
  rel=/$TAG/job
  for c in cpuacct cpu memory pids blkio; do mk "$c" "$rel"; done
  start_collector "$URI" "$OUT" --flush-interval 0.2
  start_node empty1 --cgroup "$rel"
  sleep 0.3
  # The workload joins the job in every hierarchy but cpuacct: cpuacct's
  # directory stays empty, as when a path was guessed wrong.
  run_measured "$BATS_TEST_TMPDIR/cpu" "$CGROOT/cpu$rel" "$CGROOT/memory$rel" "$CGROOT/pids$rel" -- \
    "$COLMET_BIN/colmet-workload" --cpu-seconds 1.2
  stop_pid "$NODE_PID"; NODE_PID=
  file=$OUT/empty1.h5
  wait_summary "$file"
  warning=$(host_attr "$file" cgroup_warning)
  echo "host attribute cgroup_warning: $warning"
  [[ "$warning" == *"cpuacct directory $CGROOT/cpuacct$rel holds none of the job's processes"* ]]
  [[ "$(summary_attr "$file" cgroup_warning)" == *"cpuacct directory"* ]]
  status_text=$(last_status "$file" cgroup_cpu)
  echo "cgroup_cpu last_status: $status_text"
  [[ "$status_text" == *"empty cgroup: $CGROOT/cpuacct$rel holds none of the job's processes"* ]]
  # memory's directory held the workload: its backend is not flagged.
  [[ "$(last_status "$file" cgroup_memory)" != *"empty cgroup"* ]]
  [ "$(grep -c "holds none of the job's processes" "$BATS_TEST_TMPDIR/node.log")" -eq 1 ]
}

@test "a sampler reading the job's real cgroups records no warning" {
  rel=/$TAG/job
  for c in cpuacct cpu memory pids blkio; do mk "$c" "$rel"; done
  start_collector "$URI" "$OUT" --flush-interval 0.2
  start_node full1 --cgroup "$rel"
  sleep 0.3
  run_measured "$BATS_TEST_TMPDIR/cpu" "$CGROOT/cpuacct$rel" "$CGROOT/cpu$rel" "$CGROOT/memory$rel" "$CGROOT/blkio$rel" \
    "$CGROOT/pids$rel" -- "$COLMET_BIN/colmet-workload" --cpu-seconds 1.2
  stop_pid "$NODE_PID"; NODE_PID=
  file=$OUT/full1.h5
  wait_summary "$file"
  [ -z "$(host_attr "$file" cgroup_warning)" ]
  [ -z "$(summary_attr "$file" cgroup_warning)" ]
  [[ "$(last_status "$file" cgroup_cpu)" != *"empty cgroup"* ]]
  ! grep -q "holds none of the job's processes" "$BATS_TEST_TMPDIR/node.log"
  cpu=$(summary_attr "$file" cpu_time_s); truth=$(cat "$BATS_TEST_TMPDIR/cpu")
  echo "cgroup CPU $cpu s, whole-life CPU $truth s"
  within_pct "$cpu" "$truth" 2
}

@test "--find-cgroup samples each hierarchy where the job's processes are, found after the sampler started" {
  # Slurm's cgroup plugins: cpuacct and memory at <prefix>_<node>/uid/job/step/task,
  # nothing of the job in cpu or blkio; colmet's own anchor (here in pids) at
  # another path. The sampler starts before any of it holds a process.
  anchor=/${TAG}_anchor/uid_0/job_77
  real=/${TAG}_n1/uid_0/job_77
  mk pids "$anchor"
  start_collector "$URI" "$OUT" --flush-interval 0.2
  start_node 77 --cgroup "$anchor" --find-cgroup job_77
  wait_for_text "$BATS_TEST_TMPDIR/node.log" \
    "job 77: its cgroups are not known yet (job_77 under $anchor): waiting for its first process"
  for c in cpuacct memory; do mk "$c" "$real/step_0/task_0"; done
  run_measured "$BATS_TEST_TMPDIR/cpu" "$CGROOT/pids$anchor" "$CGROOT/cpuacct$real/step_0/task_0" \
    "$CGROOT/memory$real/step_0/task_0" -- "$COLMET_BIN/colmet-workload" --cpu-seconds 1.5 --memory-mib 64
  stop_pid "$NODE_PID"; NODE_PID=
  file=$OUT/77.h5
  wait_summary "$file"
  cgroups=$(host_attr "$file" cgroups)
  echo "cgroups attribute: $cgroups"
  [[ "$cgroups" == *"cpuacct=$CGROOT/cpuacct$real "* ]]
  [[ "$cgroups" == *"memory=$CGROOT/memory$real "* ]]
  [[ "$cgroups" == *"pids=$CGROOT/pids$anchor"* ]]
  [[ "$cgroups" != *"cpu="* ]]
  cpu=$(summary_attr "$file" cpu_time_s); truth=$(cat "$BATS_TEST_TMPDIR/cpu")
  mem=$(summary_attr "$file" peak_memory_bytes)
  echo "cgroup CPU $cpu s, whole-life CPU $truth s, peak memory $mem B"
  within_pct "$cpu" "$truth" 2
  at_least "$mem" $((64 * 1024 * 1024))
  [ -z "$(host_attr "$file" cgroup_warning)" ]
  grep -q "job cgroups found from process" "$BATS_TEST_TMPDIR/node.log"
}

@test "colmet-node --find-cgroup refuses a level that is not path components" {
  run "$COLMET_BIN/colmet-node" --job-id x --cgroup /x --find-cgroup ../etc
  [ "$status" -eq 64 ]
  [[ "$output" == *"--find-cgroup"*"must be path components"* ]]
  run "$COLMET_BIN/colmet-node" --job-id x --cgroup /x --find-cgroup /
  [ "$status" -eq 64 ]
}

@test "colmet-job start --scheduler slurm refuses an id that is not a Slurm job or step id" {
  for id in 12a 1.2.3 ../7 -5; do
    run "$COLMET_BIN/colmet-job" start --job-id "$id" --user root --scheduler slurm \
      --run-dir "$BATS_TEST_TMPDIR/run" --log-file "$BATS_TEST_TMPDIR/job.log"
    echo "$id: status $status"
    [ "$status" -eq 64 ]
  done
  grep -q "job id '12a' is neither a Slurm job id (123) nor a step id (123.4)" "$BATS_TEST_TMPDIR/job.log"
  [ ! -e "$CGROOT/perf_event/slurm/uid_0/job_12a" ]
}
