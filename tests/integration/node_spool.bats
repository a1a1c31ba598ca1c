#!/usr/bin/env bats
# The node spool (issue 14): a job that ends while its collector is down
# leaves its unacknowledged messages on the node's disk, and colmet-job stop
# does not wait; a later colmet-job (start of the next job, or flush-spool)
# delivers them once the collector is back, and the job's file is complete.
# The spool's bound drops the oldest, counted exactly in the file; a torn or
# damaged spool file loses those records alone, and the file says so.
# Real colmet-job, colmet-node and colmet-collector over TCP, real cgroups.

load helpers

setup() {
  require_root
  require_h5py
  JOB="sp-$$-$BATS_TEST_NUMBER"
  REL="/colmet-test/$JOB"
  OUT="$BATS_TEST_TMPDIR/out"
  SPOOL="$BATS_TEST_TMPDIR/spool"
  RUN="$BATS_TEST_TMPDIR/run"
  LOG="$BATS_TEST_TMPDIR/colmet-job.log"
  PORT=$(free_port)
  URI="tcp://127.0.0.1:$PORT"
  HOSTNAME_TAG="spool-host"
  JOBS=()
}

teardown() {
  for j in "${JOBS[@]}"; do
    "$COLMET_BIN/colmet-job" stop --hook --job-id "$j" --run-dir "$RUN" --spool-dir none --log-file "$LOG" || true
  done
  [ -n "${NODE_PID:-}" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  remove_job_cgroup "$REL"
  remove_job_cgroup "$REL-next"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
  for f in collector.log colmet-job.log node.log; do
    [ -f "$BATS_TEST_TMPDIR/$f" ] && sed "s/^/# $f: /" "$BATS_TEST_TMPDIR/$f" >&3
  done
  true
}

# The file's figures for the host: rows of cgroup_cpu, distinct times among
# them, samples_received, samples_lost, last_seq (from the host's attributes).
host_figures() {
  h5 "$1" "' '.join(map(str, [len(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2]), len(set(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2])), int(f['hosts']['$HOSTNAME_TAG'].attrs['samples_received']), int(f['hosts']['$HOSTNAME_TAG'].attrs['samples_lost']), int(f['hosts']['$HOSTNAME_TAG'].attrs['last_seq'])]))"
}

# The sampler's last line: sent acknowledged resent spooled dropped unacknowledged.
ended_figures() {
  sed -n "s/.*job $2 ended: \([0-9]*\) messages sent, \([0-9]*\) acknowledged, \([0-9]*\) resent, \([0-9]*\) spooled, \([0-9]*\) dropped, \([0-9]*\) unacknowledged.*/\1 \2 \3 \4 \5 \6/p" "$1"
}

spool_files() { find "$SPOOL" -name '*.spool' 2>/dev/null | wc -l; }

# start_listening_collector ARGS...: a collector, once it listens (a flush
# that finds no collector keeps its file for the next one).
start_listening_collector() {
  local before
  before=$(grep -c "listening on" "$BATS_TEST_TMPDIR/collector.log" 2>/dev/null || true)
  start_collector "$URI" "$OUT" "$@"
  for _ in $(seq 100); do
    [ "$(grep -c "listening on" "$BATS_TEST_TMPDIR/collector.log" 2>/dev/null || true)" -gt "${before:-0}" ] && return 0
    sleep 0.1
  done
  echo "the collector did not start listening"; return 1
}

# job_while_the_collector_is_away SECONDS: a sampler at a 0.2 s period, its
# collector never there: at its end everything goes to the spool.
job_while_the_collector_is_away() {
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.2 --spool-dir "$SPOOL" --hostname "$HOSTNAME_TAG" --control-dir "" -v \
    2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep "$1"
  stop_pid "$NODE_PID" 5; NODE_PID=
}

@test "a job that ends while its collector is down for 30 s: stop does not wait, and the next job's start delivers the spool" {
  start_collector "$URI" "$OUT" --flush-interval 2
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-job" start --job-id "$JOB" --user root --cgroup "$REL" --zeromq-uri "$URI" -s 0.5 \
    --run-dir "$RUN" --spool-dir "$SPOOL" --log-file "$LOG" -- --hostname "$HOSTNAME_TAG"
  JOBS+=("$JOB")
  sleep 4
  kill -KILL "$COLLECTOR_PID"; wait "$COLLECTOR_PID" 2>/dev/null || true
  down=$(date +%s)
  sleep 5
  t0=$(date +%s%N)
  "$COLMET_BIN/colmet-job" stop --job-id "$JOB" --run-dir "$RUN" --spool-dir "$SPOOL" --log-file "$LOG" --timeout 5
  stop_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  JOBS=()
  read -r sent acked resent spooled dropped unacked <<<"$(ended_figures "$LOG" "$JOB")"
  echo "stop took $stop_ms ms; sent $sent, acknowledged $acked, spooled $spooled, dropped $dropped, unacknowledged $unacked"
  [ "$stop_ms" -lt 2000 ]                       # well within the stop timeout: nothing waited for the collector
  [ "$spooled" -gt 5 ] && [ "$dropped" -eq 0 ] && [ "$unacked" -eq 0 ]
  [ $((acked + spooled)) -eq "$sent" ]
  [ "$(spool_files)" -eq 1 ]
  [ "$(stat -c %a "$SPOOL")" = 700 ] && [ "$(stat -c %a "$SPOOL"/*.spool)" = 600 ]
  grep -q "the spool .* keeps them until a flush" "$LOG"
  # The stop's own background flush found the collector down and kept the file.
  sleep $((30 - ($(date +%s) - down)))
  start_listening_collector --flush-interval 2
  # The next job's start flushes the spool in the background.
  make_job_cgroup "$REL-next"
  "$COLMET_BIN/colmet-job" start --job-id "$JOB-next" --user root --cgroup "$REL-next" --zeromq-uri "$URI" -s 0.5 \
    --run-dir "$RUN" --spool-dir "$SPOOL" --log-file "$LOG" -- --hostname "$HOSTNAME_TAG"
  JOBS+=("$JOB-next")
  grep -q "flushing it in the background" "$LOG"
  for _ in $(seq 100); do [ "$(spool_files)" -eq 0 ] && break; sleep 0.1; done
  [ "$(spool_files)" -eq 0 ]
  grep -q "messages of .* delivered to $URI; spool file removed" "$LOG"
  "$COLMET_BIN/colmet-job" stop --job-id "$JOB-next" --run-dir "$RUN" --spool-dir "$SPOOL" --log-file "$LOG"
  JOBS=()
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  file="$OUT/$JOB.h5"
  read -r rows unique received lost last <<<"$(host_figures "$file")"
  echo "file: rows $rows ($unique distinct), received $received, lost $lost, last seq $last"
  [ "$rows" -eq "$sent" ] && [ "$unique" -eq "$rows" ]   # every sample, once
  [ "$received" -eq "$sent" ] && [ "$lost" -eq 0 ] && [ "$last" -eq $((sent - 1)) ]
  # The job_end arrived: the summary is there and final.
  [ "$(h5 "$file" "int(f['summary'].attrs['hosts_without_job_end'])")" -eq 0 ]
  [ "$(h5 "$file" "'job_end_ns' in f['hosts']['$HOSTNAME_TAG'].attrs")" = "True" ]
}

@test "a tiny spool bound drops the oldest messages, and the job's file counts exactly those as lost" {
  make_job_cgroup "$REL"
  # No collector at all while the job runs: 10 KiB of memory, 40 KiB of spool.
  "$COLMET_BIN/colmet-node" --config /dev/null --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.1 --outbox-size 0.01 --spool-dir "$SPOOL" --spool-size 0.04 --hostname "$HOSTNAME_TAG" \
    --control-dir "" -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 6
  stop_pid "$NODE_PID" 5; NODE_PID=
  read -r sent acked resent spooled dropped unacked <<<"$(ended_figures "$BATS_TEST_TMPDIR/node.log" "$JOB")"
  echo "sent $sent, spooled $spooled, dropped $dropped, unacknowledged $unacked"
  grep -q "the spool is full" "$BATS_TEST_TMPDIR/node.log"
  [ "$dropped" -gt 0 ] && [ "$unacked" -eq 0 ] && [ $((spooled + dropped)) -eq "$sent" ]
  [ "$(stat -c %s "$SPOOL"/*.spool)" -le 41943 ]   # 0.04 MiB
  start_listening_collector
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"1 files: 1 delivered"* ]]
  [ "$(spool_files)" -eq 0 ]
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  read -r rows unique received lost last <<<"$(host_figures "$OUT/$JOB.h5")"
  echo "file: rows $rows, received $received, lost $lost, last seq $last"
  [ "$rows" -eq "$spooled" ] && [ "$received" -eq "$spooled" ]
  [ "$lost" -eq "$dropped" ]            # exactly what the sampler gave up
  [ "$last" -eq $((sent - 1)) ]
  [ "$(h5 "$OUT/$JOB.h5" "int(f['summary'].attrs['samples_lost'])")" -eq "$dropped" ]
}

@test "a torn and damaged spool file: the sound records are delivered, the damaged one is counted lost, the missing job_end is flagged" {
  job_while_the_collector_is_away 3
  read -r sent acked resent spooled dropped unacked <<<"$(ended_figures "$BATS_TEST_TMPDIR/node.log" "$JOB")"
  [ "$spooled" -eq "$sent" ] && [ "$sent" -ge 10 ]
  file=$(ls "$SPOOL"/*.spool)
  # Flip a byte inside the fourth message (seq 3), and tear the last one (job_end).
  "$PY" - "$file" <<'PYEOF'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
marks = [i for i in range(len(data)) if data[i:i + 4] == b"CSPR"]
fourth_message = marks[1 + 3]
data[fourth_message + 40] ^= 0x5A
del data[-7:]
open(path, "wb").write(data)
PYEOF
  start_listening_collector --idle-close 2
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"2 damaged records skipped"* ]]
  [ "$(spool_files)" -eq 0 ]
  sleep 4   # idle-close: the job's summary, from what arrived
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  read -r rows unique received lost last <<<"$(host_figures "$OUT/$JOB.h5")"
  echo "sent $sent; file: rows $rows, received $received, lost $lost, last seq $last"
  [ "$rows" -eq $((sent - 2)) ] && [ "$unique" -eq "$rows" ]
  [ "$lost" -eq 1 ]                      # seq 3: the collector was told it will not come
  [ "$last" -eq $((sent - 2)) ]          # the torn job_end never came ...
  [ "$(h5 "$OUT/$JOB.h5" "int(f['summary'].attrs['hosts_without_job_end'])")" -eq 1 ]   # ... and the file says so
}

@test "flush-spool: nothing to do, a file that is not a spool, a collector still away, a directory others may write to" {
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL"
  [ "$status" -eq 0 ]
  mkdir -m 700 "$SPOOL"
  echo "junk" > "$SPOOL/x.0000000000000000.spool"
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"not a colmet spool file"* ]]
  [ -f "$SPOOL/x.0000000000000000.spool.damaged" ]
  # A job's spool while the collector is away: kept, exit 75 (try again later).
  job_while_the_collector_is_away 1.5
  before=$(md5sum < "$SPOOL"/*.spool)
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL" --wait 2
  echo "$output"
  [ "$status" -eq 75 ]
  [[ "$output" == *"kept for the next flush"* ]]
  [ "$(md5sum < "$SPOOL"/*.spool)" = "$before" ]
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL" --hook
  [ "$status" -eq 0 ]
  # A spool directory others may write to is refused.
  chmod 777 "$SPOOL"
  run "$COLMET_BIN/colmet-job" flush-spool --spool-dir "$SPOOL" --wait 1
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"writable by others"* ]]
}
