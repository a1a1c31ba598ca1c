#!/usr/bin/env bats
# Waste flags (colmet-collector --flag-*): real jobs, each in a cgroup of its
# own with a real workload, sampled into a real collector, which flags the
# jobs that waste what they were given and leaves the others alone; the
# flags land in the job's file (/flags), in the summary on-job-end reads,
# and, for a job that stops sending, while it still runs. GPUs through the
# NVML test double (tests/support/fake_nvml.c).

load helpers

setup() {
  require_root
  require_h5py
  OUT="$BATS_TEST_TMPDIR/out"
  URI="tcp://127.0.0.1:$(free_port)"
  PIDS=()
  RELS=()
}

teardown() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  for r in "${RELS[@]}"; do remove_job_cgroup "$r"; done
  true
}

# workload NAME CMD...: CMD in a new cgroup of its own; WORK_PID is its pid.
workload() {
  local rel="/colmet-test/flags-$$-$1"
  shift
  RELS+=("$rel")
  make_job_cgroup "$rel"
  in_cgroup "$rel" "$@" &
  WORK_PID=$!
  PIDS+=("$WORK_PID")
}

# sampler JOB REL [colmet-node options...]: starts the job's sampler; NODE_PID.
sampler() {
  local job=$1 rel=$2
  shift 2
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir none --job-id "$job" --cgroup "$rel" --zeromq-uri "$URI" \
    --sample-period 0.25 --hostname flaghost --control-dir "" "$@" 2>>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  PIDS+=("$NODE_PID")
}

# flags FILE: the names of the file's flags, sorted, space-separated ("-" for none).
flags() {
  h5 "$1" "' '.join(sorted(k for k in f['flags'].attrs if not k.endswith('_since_ns'))) if 'flags' in f else '-'"
}

wait_for_file_attr() {  # wait_for_file_attr FILE EXPR: until the Python expression holds (20 s)
  local i
  for i in $(seq 200); do
    [ -f "$1" ] && [ "$(h5 "$1" "$2" 2>/dev/null)" = True ] && return 0
    sleep 0.1
  done
  echo "not within 20 s in $1: $2"
  return 1
}

@test "an idle job that asked for much memory is flagged, a busy one that uses its memory is not" {
  start_collector "$URI" "$OUT" --flush-interval 0.5 --flag-window 2 --flag-cpu-efficiency 0.05 \
    --flag-memory-fraction 0.5 --flag-memory-min 0 --on-job-end "cat > $BATS_TEST_TMPDIR/\$COLMET_JOB_ID.json"
  # Busy: one CPU burning for 4 s, 24 MiB held, 32 MiB asked for.
  workload busy "$COLMET_BIN/colmet-workload" --cpu-seconds 4 --memory-mib 24
  sleep 0.3
  sampler "busy-$$" "/colmet-test/flags-$$-busy" --meta host_memory_mib=32
  busy_node=$NODE_PID
  # Idle: a sleeping process, 4096 MiB asked for.
  workload idle sleep 30
  sampler "idle-$$" "/colmet-test/flags-$$-idle" --meta host_memory_mib=4096
  idle_node=$NODE_PID
  sleep 2.8
  stop_pid "$busy_node" 5
  stop_pid "$idle_node" 5
  wait_for_file_attr "$OUT/idle-$$.h5" "'summary' in f"
  wait_for_file_attr "$OUT/busy-$$.h5" "'summary' in f"
  run flags "$OUT/idle-$$.h5"
  echo "idle: $output"
  [ "$output" = "low_cpu_efficiency memory_unused" ]
  run h5 "$OUT/idle-$$.h5" "f['flags'].attrs['memory_unused']"
  echo "$output"
  [[ "$output" =~ ^host\ flaghost\ used\ at\ most\ [0-9]+\ MiB\ of\ the\ 4096\ MiB\ asked\ for ]]
  run h5 "$OUT/idle-$$.h5" "f['flags'].attrs['low_cpu_efficiency']"
  echo "$output"
  [[ "$output" =~ ^CPU\ efficiency\ [0-4]\.[0-9]\ %\ over\ [23]\ s\ \(below\ 5\.0\ %\)$ ]]
  run flags "$OUT/busy-$$.h5"
  echo "busy: $output (peak $(h5 "$OUT/busy-$$.h5" "f['summary'].attrs['peak_memory_bytes']"), efficiency $(h5 "$OUT/busy-$$.h5" "f['summary'].attrs['cpu_efficiency']"))"
  [ "$output" = "-" ]
  # on-job-end gets them with the summary.
  for i in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/idle-$$.json" ] && [ -s "$BATS_TEST_TMPDIR/busy-$$.json" ] && break; sleep 0.1; done
  run "$PY" -c "import json, sys; print(' '.join(x['name'] for x in json.load(open(sys.argv[1]))['flags']))" "$BATS_TEST_TMPDIR/idle-$$.json"
  [ "$output" = "low_cpu_efficiency memory_unused" ]
  run "$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['flags'])" "$BATS_TEST_TMPDIR/busy-$$.json"
  [ "$output" = "[]" ]
}

@test "a job whose sampler dies is flagged while it runs; a live one is not" {
  start_collector "$URI" "$OUT" --flush-interval 0.5 --flag-silence 1 --idle-close 60
  workload gone sleep 30
  sampler "gone-$$" "/colmet-test/flags-$$-gone"
  gone_node=$NODE_PID
  workload live sleep 30
  sampler "live-$$" "/colmet-test/flags-$$-live"
  sleep 1
  kill -9 "$gone_node"
  # Flagged before its summary (which comes only after --idle-close).
  wait_for_file_attr "$OUT/gone-$$.h5" "'flags' in f and 'stopped_sending' in f['flags'].attrs"
  run h5 "$OUT/gone-$$.h5" "('summary' in f, f['flags'].attrs['stopped_sending'])"
  echo "$output"
  [[ "$output" =~ ^\(False,\ \'host\ flaghost\ sent\ nothing\ for\ [0-9]+\ s\ before\ its\ job\ end\ \(limit\ 1\ s\)\'\)$ ]]
  run flags "$OUT/live-$$.h5"
  [ "$output" = "-" ]
}

@test "a job that leaves its GPU idle is flagged, one that uses it is not" {
  [ -n "${COLMET_FAKE_NVML_LIB:-}" ] && [ -f "$COLMET_FAKE_NVML_LIB" ] ||
    skip "COLMET_FAKE_NVML_LIB does not name the NVML test double (CTest sets it)"
  start_collector "$URI" "$OUT" --flush-interval 0.5 --flag-window 1 --flag-cpu-efficiency 0
  for util in 2 90; do
    printf 'gpu 0 GPU-aaaa 0 util=%s memutil=1 used=1000 total=8000 power=50000 energy=5000000 temp=40 sm=1000 mem=5000\n' \
      "$util" > "$BATS_TEST_TMPDIR/nvml-$util.txt"
    workload "gpu$util" sleep 30
    COLMET_FAKE_NVML="$BATS_TEST_TMPDIR/nvml-$util.txt" sampler "gpu$util-$$" "/colmet-test/flags-$$-gpu$util" \
      --enable-gpu --gpus 0 --nvml-library "$COLMET_FAKE_NVML_LIB"
    eval "node_$util=\$NODE_PID"
  done
  sleep 1.8
  stop_pid "$node_2" 5
  stop_pid "$node_90" 5
  wait_for_file_attr "$OUT/gpu2-$$.h5" "'summary' in f"
  wait_for_file_attr "$OUT/gpu90-$$.h5" "'summary' in f"
  run h5 "$OUT/gpu2-$$.h5" "f['flags'].attrs['gpu_idle']"
  echo "$output"
  [[ "$output" =~ ^GPU\ utilisation\ 2\.0\ %\ on\ average ]]
  run flags "$OUT/gpu90-$$.h5"
  [ "$output" = "-" ]
}
