#!/usr/bin/env bats
# colmet-collector's signals as a daemon's: SIGHUP writes what is buffered,
# keeps the files open and re-opens the log file (log rotation); the
# collector goes on receiving. A real colmet-node over TCP feeds it.

load helpers

setup() {
  require_root
  require_h5py
  JOB="sig-$$-$BATS_TEST_NUMBER"
  REL="/colmet-test/$JOB"
  OUT="$BATS_TEST_TMPDIR/out"
  LOG="$BATS_TEST_TMPDIR/collector.log"
  URI="tcp://127.0.0.1:$(free_port)"
}

teardown() {
  [ -n "${NODE_PID:-}" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  remove_job_cgroup "$REL"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
  cat "$LOG"* 2>/dev/null || true
}

# rows FILE: samples stored for the job's host so far (0 when not readable).
rows() {
  HDF5_USE_FILE_LOCKING=FALSE "$PY" - "$1" <<'PYEOF' 2>/dev/null || echo 0
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    host = f["hosts"][list(f["hosts"])[0]]
    print(host["cgroup_cpu"]["segment_0"]["time"].shape[0])
PYEOF
}

@test "SIGHUP writes the buffered rows, re-opens the log file, and the collector goes on" {
  # The longest flush interval (5 s): rows reach the file on SIGHUP first.
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" --hdf5-dir "$OUT" \
    --flush-interval 5 --log-file "$LOG" -v &
  COLLECTOR_PID=$!
  make_job_cgroup "$REL"
  t0=$(date +%s%N)
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.2 --control-dir "" 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 2
  file=$OUT/$JOB.h5
  before=$(rows "$file")

  for _ in $(seq 50); do [ -f "$LOG" ] && break; sleep 0.1; done
  mv "$LOG" "$LOG.1"           # log rotation
  sent=$(( ($(date +%s%N) - t0) / 200000000 ))
  kill -HUP "$COLLECTOR_PID"
  for _ in $(seq 50); do grep -q "received SIGHUP" "$LOG" 2>/dev/null && break; sleep 0.1; done
  grep -q "received SIGHUP: buffered rows written, log file re-opened" "$LOG"
  ! grep -q "received SIGHUP" "$LOG.1"
  kill -0 "$COLLECTOR_PID"     # still running
  after=$(rows "$file")
  echo "rows before SIGHUP: $before, after: $after, about $sent sent"
  # Everything received so far is in the file (allowing for start-up and
  # the samples still on their way).
  at_least "$after" $(( sent * 6 / 10 ))
  [ "$after" -gt "$before" ]

  # Still receiving and storing: SIGTERM to the node, then to the collector.
  stop_pid "$NODE_PID" 5; NODE_PID=
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  final=$(rows "$file")
  echo "rows at the end: $final"
  [ "$final" -gt "$after" ]
  [ "$(h5 "$file" 'int("summary" in f)')" = 1 ]
}
