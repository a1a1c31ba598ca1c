#!/usr/bin/env bats
# colmet-collector's time-series sink against a real VictoriaMetrics (Debian's
# victoria-metrics, on a free port with its own storage): a colmet-job run
# through a collector with both sinks must leave in the store every value
# its HDF5 file holds, at the same times (tsdb/compare_store.py), in either
# protocol; an outage of the store loses nothing; a full queue, refused
# requests, errors, a slow store and a TLS mismatch are logged and counted
# and block nothing.

load helpers

setup() {
  require_root
  require_h5py
  command -v victoria-metrics >/dev/null || skip "victoria-metrics is not installed (scripts/install-deps.sh test)"
  OUT="$BATS_TEST_TMPDIR/out"
  URI="tcp://127.0.0.1:$(free_port)"
  VM_PORT=$(free_port)
  VM="http://127.0.0.1:$VM_PORT"
  COMPARE="$BATS_TEST_DIRNAME/tsdb/compare_store.py"
}

teardown() {
  [ -n "${JOB_PID:-}" ] && kill -9 "$JOB_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  [ -n "${FAKE_PID:-}" ] && kill -9 "$FAKE_PID" 2>/dev/null || true
  stop_vm
  remove_job_cgroup "/colmet-test/alone-$$" 2>/dev/null || true
  tail -n 15 "$BATS_TEST_TMPDIR"/collector*.log 2>/dev/null || true
}

start_vm() {
  victoria-metrics -storageDataPath "$BATS_TEST_TMPDIR/vm" -httpListenAddr "127.0.0.1:$VM_PORT" \
    -retentionPeriod 100y -search.latencyOffset=0s >>"$BATS_TEST_TMPDIR/vm.log" 2>&1 &
  VM_PID=$!
  for _ in $(seq 100); do curl -sf "$VM/health" >/dev/null && return; sleep 0.1; done
  cat "$BATS_TEST_TMPDIR/vm.log"; false
}

stop_vm() {
  [ -n "${VM_PID:-}" ] || return 0
  kill -TERM "$VM_PID" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$VM_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$VM_PID" 2>/dev/null || true
  VM_PID=
}

# collector ARGS...: both sinks, the log in collector.log.
collector() {
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" --hdf5-dir "$OUT" \
    --flush-interval 1 -v "$@" 2>>"$BATS_TEST_TMPDIR/collector.log" &
  COLLECTOR_PID=$!
  for _ in $(seq 50); do grep -q "listening on" "$BATS_TEST_TMPDIR/collector.log" && return; sleep 0.1; done
  false
}

stop_collector() {
  stop_pid "$COLLECTOR_PID" 30; COLLECTOR_PID=
  grep "stopped:" "$BATS_TEST_TMPDIR/collector.log" | tail -1
}

# job ID [SECONDS]: a colmet-job run of a CPU workload with software perf events.
job() {
  "$COLMET_BIN/colmet-job" run --zeromq-uri "$URI" --job-id "$1" -s 0.5 -q --enable-perfhw \
    --perfhw-list task_clock,page_faults,cpu_cycles -- \
    "$COLMET_BIN/colmet-workload" --cpu-seconds "${2:-1}" --memory-mib 20 >/dev/null
}

# compare JOB [CLUSTER]: the store holds the job's HDF5 file (tsdb/compare_store.py).
# VictoriaMetrics parses line protocol after it answers: a few tries.
compare() {
  for _ in $(seq 20); do
    curl -sf "$VM/internal/force_flush"
    run "$PY" "$COMPARE" "$OUT/$1.h5" "$VM" "$@"
    [ "$status" -eq 0 ] && break
    sleep 0.5
  done
  echo "$output"
  [ "$status" -eq 0 ]
}

complete_file() {  # the HDF5 file has its summary and lost nothing
  [ "$(h5 "$1" 'int("summary" in f)')" = 1 ]
  [ "$(h5 "$1" 'int(f["summary"].attrs["samples_lost"])')" = 0 ]
}

@test "remote write: every value of a job reaches VictoriaMetrics as the HDF5 file holds it" {
  start_vm
  collector --tsdb-url "$VM/api/v1/write" --tsdb-cluster ci
  job "rw-$$" 2
  line=$(stop_collector)
  echo "$line"
  [[ "$line" == *" 0 dropped, 0 rejected"* ]]
  compare "rw-$$" ci
  # perfhw events are one series name with an event label; unsupported events send nothing.
  curl -sf "$VM/api/v1/export" -d "match[]=colmet_perfhw_seconds_total{job_id=\"rw-$$\"}" | grep -q '"event":"task_clock"'
  ! curl -sf "$VM/api/v1/export" -d "match[]={job_id=\"rw-$$\",event=\"cpu_cycles\"}" | grep -q values
}

@test "InfluxDB line protocol, configured in [tsdb] of colmet.conf: the same points" {
  start_vm
  conf="$BATS_TEST_TMPDIR/colmet.conf"
  printf '[collector]\nflush-interval = 1\n[tsdb]\nurl = %s/write\nprotocol = influx\ncluster = ci-influx\n' "$VM" > "$conf"
  "$COLMET_BIN/colmet-collector" --config "$conf" --allow-root --zeromq-bind-uri "$URI" --hdf5-dir "$OUT" -v \
    2>>"$BATS_TEST_TMPDIR/collector.log" &
  COLLECTOR_PID=$!
  for _ in $(seq 50); do grep -q "listening on" "$BATS_TEST_TMPDIR/collector.log" && break; sleep 0.1; done
  grep -q "(influx, cluster ci-influx)" "$BATS_TEST_TMPDIR/collector.log"
  job "lp-$$" 2
  line=$(stop_collector)
  [[ "$line" == *" 0 dropped, 0 rejected"* ]]
  compare "lp-$$" ci-influx
}

@test "the store stopped for 20 s during a job and started again: no point missing, the HDF5 file unaffected" {
  start_vm
  collector --tsdb-url "$VM/api/v1/write"
  job "outage-$$" 24 &
  JOB_PID=$!
  sleep 2
  stop_vm
  sleep 20
  start_vm
  wait "$JOB_PID"; JOB_PID=
  line=$(stop_collector)
  echo "$line"
  [[ "$line" == *" 0 dropped, 0 rejected"* ]]
  [[ "$line" != *" 0 retried"* ]]   # the outage was seen
  grep -q "will retry" "$BATS_TEST_TMPDIR/collector.log"
  complete_file "$OUT/outage-$$.h5"
  compare "outage-$$"
}

@test "a tiny queue with the store away: points dropped and counted, the collector alive, the HDF5 file complete" {
  # Nothing listens on VM_PORT.
  collector --tsdb-url "$VM/api/v1/write" --tsdb-queue 0.01 --tsdb-batch-points 50
  job "overflow-$$" 2
  kill -0 "$COLLECTOR_PID"
  line=$(stop_collector)
  echo "$line"
  dropped=$(sed -n 's/.* \([0-9]*\) dropped, 0 rejected.*/\1/p' <<<"$line")
  [ "$dropped" -gt 0 ]
  [[ "$line" == *"tsdb: 0 points sent"* ]]
  grep -q "Couldn't connect to server; will retry" "$BATS_TEST_TMPDIR/collector.log"
  complete_file "$OUT/overflow-$$.h5"
  # Every point the queue took and later dropped (nothing was delivered) is
  # recorded as the time-series sink's loss in the job's file.
  [[ "$line" == *"$dropped undelivered time-series points recorded in files (0 not recordable)"* ]]
  [ "$(h5 "$OUT/overflow-$$.h5" 'int(f["summary"].attrs["tsdb_points_dropped"])')" -eq "$dropped" ]
}

@test "the time-series sink alone, its queue filled while the store is away: nothing is acknowledged before the store holds it, and every sample arrives" {
  # No HDF5 sink: no file could record a loss, so points count only once
  # the store answered. Nothing listens on VM_PORT yet. The queue holds
  # about half of what the job sends.
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" -v \
    --tsdb-url "$VM/api/v1/write" --tsdb-queue 0.03 --tsdb-batch-points 20 2>>"$BATS_TEST_TMPDIR/collector.log" &
  COLLECTOR_PID=$!
  for _ in $(seq 50); do grep -q "listening on" "$BATS_TEST_TMPDIR/collector.log" && break; sleep 0.1; done
  job_id="alone-$$"
  rel="/colmet-test/$job_id"
  spool="$BATS_TEST_TMPDIR/spool"
  make_job_cgroup "$rel"
  "$COLMET_BIN/colmet-node" --config /dev/null --job-id "$job_id" --cgroup "$rel" --zeromq-uri "$URI" \
    --sample-period 0.1 --spool-dir "$spool" --hostname alone-host --control-dir "" -v \
    2>"$BATS_TEST_TMPDIR/node.log" &
  JOB_PID=$!
  sleep 5
  stop_pid "$JOB_PID" 10; JOB_PID=
  remove_job_cgroup "$rel"
  ended=$(grep "job $job_id ended:" "$BATS_TEST_TMPDIR/node.log")
  echo "$ended"
  sent=$(sed -n 's/.* ended: \([0-9]*\) messages sent, \([0-9]*\) acknowledged.*/\1/p' <<<"$ended")
  acked=$(sed -n 's/.* ended: \([0-9]*\) messages sent, \([0-9]*\) acknowledged.*/\2/p' <<<"$ended")
  [ "$sent" -gt 30 ] && [ "$acked" -eq 0 ]      # received, queued, not stored: not acknowledged
  [ "$(find "$spool" -name '*.spool' | wc -l)" -eq 1 ]
  kill -HUP "$COLLECTOR_PID"; sleep 0.5   # its log line counts what the full queue dropped
  grep "received SIGHUP" "$BATS_TEST_TMPDIR/collector.log" | grep "tsdb: 0 points sent, [1-9][0-9]* queued, [1-9][0-9]* dropped"
  # The store comes and the queue drains (after the sender's back-off).
  start_vm
  for _ in $(seq 40); do
    kill -HUP "$COLLECTOR_PID"; sleep 1
    grep "received SIGHUP" "$BATS_TEST_TMPDIR/collector.log" | tail -1 | grep -q "tsdb: [1-9][0-9]* points sent, 0 queued" && break
  done
  # The spool's flush is the sender resending: what the queue dropped is
  # written again, and acknowledged once stored.
  "$COLMET_BIN/colmet-job" flush-spool --config /dev/null --spool-dir "$spool" --wait 30
  [ "$(find "$spool" -name '*.spool' | wc -l)" -eq 0 ]
  line=$(stop_collector)
  echo "$line"
  for _ in $(seq 20); do
    curl -sf "$VM/internal/force_flush"
    stored=$(curl -sf "$VM/api/v1/export" -d "match[]=colmet_cgroup_cpu_usage_seconds_total{job_id=\"$job_id\"}" |
      "$PY" -c 'import json, sys; t = [x for l in sys.stdin if l.strip() for x in json.loads(l)["timestamps"]]; print(len(t), len(set(t)))')
    [ "$stored" = "$sent $sent" ] && break
    sleep 0.5
  done
  echo "stored (points, distinct times): $stored; sent $sent"
  [ "$stored" = "$sent $sent" ]                  # every sample once, none lost to the full queue
  # The job's summary came too, counting every message once.
  curl -sf "$VM/api/v1/export" -d "match[]=colmet_job_samples_received{job_id=\"$job_id\"}" | grep -q "\[$sent\]"
}

@test "bad endpoints (400, 500, slow, TLS mismatch) are logged and counted, and block nothing; bearer and basic credentials are sent" {
  FAKE_PORT=$(free_port)
  # A store that answers by path: /400 and /500 with that status, /slow after
  # 3 s, /bearer and /basic 401 without the right credentials.
  "$PY" - "$FAKE_PORT" <<'PYEOF' &
import base64, http.server, sys, time
AUTH = {"/bearer": "Bearer s3cret-token", "/basic": "Basic " + base64.b64encode(b"colmet:pa ss").decode()}
class Store(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/slow":
            time.sleep(3)
        status = {"/400": 400, "/500": 500}.get(self.path, 204)
        if self.path in AUTH and self.headers.get("Authorization") != AUTH[self.path]:
            status = 401
        self.send_response(status)
        body = b"cannot parse the request: bad line" if status == 400 else b""
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Store).serve_forever()
PYEOF
  FAKE_PID=$!
  sleep 0.5
  printf 's3cret-token\n' > "$BATS_TEST_TMPDIR/token"
  printf 'colmet:pa ss\n' > "$BATS_TEST_TMPDIR/basic"
  chmod 600 "$BATS_TEST_TMPDIR/token" "$BATS_TEST_TMPDIR/basic"
  for case in 400 500 slow tls bearer basic; do
    url="http://127.0.0.1:$FAKE_PORT/$case"
    [ "$case" = tls ] && url="https://127.0.0.1:$FAKE_PORT/tls"
    extra=()
    [ "$case" = bearer ] && extra=(--tsdb-bearer-token-file "$BATS_TEST_TMPDIR/token")
    [ "$case" = basic ] && extra=(--tsdb-basic-auth-file "$BATS_TEST_TMPDIR/basic")
    : > "$BATS_TEST_TMPDIR/collector.log"
    start=$(date +%s)
    collector --tsdb-url "$url" --tsdb-timeout 1 "${extra[@]}"
    job "bad-$case-$$" 1
    line=$(stop_collector)
    echo "$case: $line"
    [ $(( $(date +%s) - start )) -lt 25 ]     # nothing waited on the store for long
    complete_file "$OUT/bad-$case-$$.h5"
    log="$BATS_TEST_TMPDIR/collector.log"
    case $case in
      400) grep -q "HTTP 400 cannot parse the request: bad line; [0-9]* points dropped" "$log"
           [[ "$line" =~ \ 0\ dropped,\ [1-9][0-9]*\ rejected ]] ;;
      500) grep -q "HTTP 500 ; will retry" "$log"
           [[ "$line" =~ tsdb:\ 0\ points\ sent,\ 0\ queued,\ [1-9][0-9]*\ dropped ]] ;;
      slow) grep -q "Timeout was reached; will retry" "$log" ;;
      tls) grep -q -i "ssl\|tls" "$log"
           [[ "$line" =~ tsdb:\ 0\ points\ sent ]] ;;
      bearer|basic)   # the credentials were right: everything accepted
           [[ "$line" =~ tsdb:\ [1-9][0-9]*\ points\ sent,\ 0\ queued,\ 0\ dropped,\ 0\ rejected ]] ;;
    esac
  done
}

@test "bad time-series settings are refused at start with a clear message" {
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --tsdb-url ftp://store/write
  [ "$status" -eq 64 ]
  [[ "$output" == *"http:// or https://"* ]]
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --tsdb-url "$VM/write" --tsdb-protocol graphite
  [ "$status" -eq 64 ]
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --tsdb-url "$VM/write" \
    --tsdb-bearer-token-file "$BATS_TEST_TMPDIR/no-such-token"
  [ "$status" -eq 78 ]
  [[ "$output" == *"bearer token file"*"no-such-token"* ]]
  conf="$BATS_TEST_TMPDIR/bad.conf"
  printf '[tsdb]\nurl = %s/write\nbatch-size = 10\n' "$VM" > "$conf"
  run "$COLMET_BIN/colmet-collector" --config "$conf" --allow-root
  [ "$status" -eq 64 ]
  [[ "$output" == *"tsdb-batch-size"* ]]
}

@test "every PromQL expression of the dashboards and alert rules (contrib/) runs on the store and returns data for a job" {
  start_vm
  collector --tsdb-url "$VM/api/v1/write" --tsdb-cluster ci
  job "dash-$$" 2
  at=$(( $(date +%s) + 1 ))   # after the summary points (the job end, to the ns)
  stop_collector
  # New series become searchable a moment after they are stored: a few tries.
  for _ in $(seq 20); do
    curl -sf "$VM/internal/force_flush"
    run "$PY" "$BATS_TEST_DIRNAME/tsdb/check_queries.py" "$BATS_TEST_DIRNAME/../../contrib" "$VM" "dash-$$" ci "$at"
    [ "$status" -eq 0 ] && break
    sleep 0.5
  done
  echo "$output"
  [ "$status" -eq 0 ]
  # Both dashboards and the rules were read.
  [[ "$output" == *"colmet-cluster.json"* && "$output" == *"colmet-job.json"* && "$output" == *"colmet-rules.yml"* ]]
}

@test "the energy, GPU and flag panels and rules return data for a job with RAPL and GPUs (fixture RAPL, the NVML test double)" {
  [ -n "${COLMET_FAKE_NVML_LIB:-}" ] || skip "COLMET_FAKE_NVML_LIB does not name the NVML test double (CTest sets it)"
  start_vm
  # Windows of a second: the job's idle GPU (3 %) is flagged gpu_idle.
  collector --tsdb-url "$VM/api/v1/write" --tsdb-cluster ci --flag-window 1 --flag-cpu-efficiency 0
  sys="$BATS_TEST_TMPDIR/sys"
  mkdir -p "$sys/class/powercap/intel-rapl:0"
  echo package-0 > "$sys/class/powercap/intel-rapl:0/name"
  printf '%015d\n' 0 > "$sys/class/powercap/intel-rapl:0/energy_uj"
  echo 262143328850 > "$sys/class/powercap/intel-rapl:0/max_energy_range_uj"
  export COLMET_FAKE_NVML="$BATS_TEST_TMPDIR/nvml.txt"
  echo "gpu 0 GPU-aaaa 0 util=3 memutil=1 used=1000000 total=8000000000 power=60000 energy=1000 temp=45 sm=300 mem=5000" \
    > "$COLMET_FAKE_NVML"
  job_id="dash-gpu-$$"
  rel="/colmet-test/$job_id"
  make_job_cgroup "$rel"
  in_cgroup "$rel" sh -c 'while :; do :; done' &
  JOB_PID=$!
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir none --job-id "$job_id" --cgroup "$rel" --zeromq-uri "$URI" \
    -s 0.5 --hostname dash-host --sysfs-root "$sys" --enable-RAPL --enable-gpu --gpus GPU-aaaa -v \
    --enable-perfhw --perfhw-list task_clock,page_faults \
    --nvml-library "$COLMET_FAKE_NVML_LIB" 2>"$BATS_TEST_TMPDIR/node.log" &
  node=$!
  for i in $(seq 1 8); do   # 20 W of package energy while the job runs
    sleep 0.5
    printf '%015d\n' $((i * 10000000)) > "$sys/class/powercap/intel-rapl:0/energy_uj"
  done
  stop_pid "$node"
  cat "$BATS_TEST_TMPDIR/node.log"
  kill -9 "$JOB_PID"; JOB_PID=
  remove_job_cgroup "$rel"
  at=$(( $(date +%s) + 1 ))
  stop_collector
  for _ in $(seq 20); do
    curl -sf "$VM/internal/force_flush"
    run "$PY" "$BATS_TEST_DIRNAME/tsdb/check_queries.py" "$BATS_TEST_DIRNAME/../../contrib" "$VM" "$job_id" ci "$at" \
      '(?i)gpu|energy|power|flagged'
    [ "$status" -eq 0 ] && break
    sleep 0.5
  done
  echo "$output"
  [ "$status" -eq 0 ]
  # The GPU panels and rule were among those that had to return data.
  [[ "$output" == *"ok   colmet-job.json: GPU utilisation [A]: 1 series"* ]]
  [[ "$output" == *"ok   colmet-rules.yml: ColmetJobGpuIdle: 1 series"* ]]
  [[ "$output" == *"ok   colmet-rules.yml: ColmetJobFlagged: 1 series"* ]]
  [[ "$output" == *"ok   colmet-job.json: Energy: the job's share and its nodes' (W) [A]: 1 series"* ]]
}
