#!/usr/bin/env bats
# Several collectors, one output directory (colmet-collector(8), "Several
# collectors"): samplers given a list of collectors pick one by the job id, so
# every host of a job reaches the same collector and each job's file is
# written by one collector only; a collector that gets a job by mistake
# leaves the other collector's file alone. Real colmet-node processes (two
# hosts per job via --hostname) and two real collectors over TCP.

load helpers

setup() {
  require_root
  require_h5py
  REL="/colmet-test/shard-$$-$BATS_TEST_NUMBER"
  OUT="$BATS_TEST_TMPDIR/shared"
  URI_A="tcp://127.0.0.1:$(free_port)"
  URI_B="tcp://127.0.0.1:$(free_port)"
  NODE_PIDS=()
}

teardown() {
  for p in "${NODE_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ -n "${PID_A:-}" ] && kill -9 "$PID_A" 2>/dev/null || true
  [ -n "${PID_B:-}" ] && kill -9 "$PID_B" 2>/dev/null || true
  remove_job_cgroup "$REL"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
  tail -n 20 "$BATS_TEST_TMPDIR"/collector-*.log 2>/dev/null || true
}

# start_named NAME URI: a collector named NAME on URI writing into $OUT.
start_named() {
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$2" --hdf5-dir "$OUT" \
    --name "$1" --flush-interval 1 -v 2>"$BATS_TEST_TMPDIR/collector-$1.log" &
  eval "PID_$1=$!"
  for _ in $(seq 50); do grep -q "listening on" "$BATS_TEST_TMPDIR/collector-$1.log" && return; sleep 0.1; done
  false
}

# node JOB HOST URI...: a sampler of the shared cgroup, in the background.
node() {
  local job=$1 host=$2 uri=$3
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$job" --hostname "$host" --cgroup "$REL" \
    --zeromq-uri "$uri" --sample-period 0.5 --control-dir "" -v 2>"$BATS_TEST_TMPDIR/node-$job-$host.log" &
  NODE_PIDS+=($!)
}

stop_nodes() {
  for p in "${NODE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${NODE_PIDS[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  NODE_PIDS=()
}

@test "two collectors, one directory: every job lands whole in one file, the jobs are split, nothing is lost" {
  start_named A "$URI_A"
  start_named B "$URI_B"
  make_job_cgroup "$REL"
  for j in $(seq 20); do
    node "shard-$$-$j" h1 "$URI_A,$URI_B"
    node "shard-$$-$j" h2 " $URI_B , $URI_A"   # blanks and order do not change the choice
  done
  # Every sampler started (40 of them take a while under ASan), then a few samples.
  for _ in $(seq 300); do
    [ "$(cat "$BATS_TEST_TMPDIR"/node-shard-*.log | grep -c "sampling job")" -eq 40 ] && break
    sleep 0.1
  done
  sleep 2
  stop_nodes
  stop_pid "$PID_A" 30; PID_A=
  stop_pid "$PID_B" 30; PID_B=

  # Each host's sampler said where it sent the job and how much; both hosts
  # of a job chose the same collector.
  expected="$BATS_TEST_TMPDIR/expected.tsv"
  : > "$expected"
  for j in $(seq 20); do
    job="shard-$$-$j"
    for h in h1 h2; do
      log="$BATS_TEST_TMPDIR/node-$job-$h.log"
      uri=$(sed -n "s/.*every 0.5 s to \(tcp:[^ ]*\) (the job's collector of those in --zeromq-uri).*/\1/p" "$log")
      # Every message acknowledged, none given up.
      sent=$(sed -n "s/.*job $job ended: \([0-9]*\) messages sent, \1 acknowledged, .* 0 spooled, 0 dropped, 0 unacknowledged.*/\1/p" "$log")
      [ -n "$uri" ] && [ -n "$sent" ] || { cat "$log"; false; }
      if [ "$uri" = "$URI_A" ]; then name=A; else name=B; fi
      printf '%s\t%s\t%s\t%s\n' "$job" "$h" "$name" "$sent" >> "$expected"
    done
    [ "$(awk -v j="$job" '$1 == j {print $3}' "$expected" | sort -u | wc -l)" = 1 ]
  done

  # Every job has exactly one file, written by the collector its hosts chose,
  # with both hosts, every message sent (job_start and job_end carry a sample
  # too: one row each), none lost, and its summary.
  "$PY" - "$OUT" "$expected" "shard-$$-" <<'PYEOF'
import collections, glob, os, sys, h5py
out, expected, prefix = sys.argv[1:]
want = collections.defaultdict(dict)
for line in open(expected):
    job, host, name, sent = line.split("\t")
    want[job][host] = (name, int(sent))
files = sorted(glob.glob(os.path.join(out, "*.h5")))
assert len(files) == 20, files
per_collector = collections.Counter()
for path in files:
    with h5py.File(path, "r") as f:
        job = f.attrs["job_id"].decode() if isinstance(f.attrs["job_id"], bytes) else f.attrs["job_id"]
        writer = f.attrs["collector"].decode() if isinstance(f.attrs["collector"], bytes) else f.attrs["collector"]
        assert job in want, job
        assert set(f["hosts"]) == {"h1", "h2"}, (job, list(f["hosts"]))
        for host, (name, sent) in want[job].items():
            assert writer == name, (job, writer, name)
            g = f["hosts"][host]
            rows = g["cgroup_cpu"]["segment_0"]["time"].shape[0]
            assert int(g.attrs["samples_lost"]) == 0, (job, host, int(g.attrs["samples_lost"]))
            assert int(g.attrs["samples_received"]) == sent, (job, host, int(g.attrs["samples_received"]), sent)
            assert rows == sent and rows >= 3, (job, host, rows, sent)
        assert "summary" in f, job
        per_collector[writer] += 1
print("jobs per collector:", dict(per_collector))
assert set(per_collector) == {"A", "B"}, per_collector
PYEOF
}

@test "a job sent to another collector is refused there: the file of the collector that has it is left alone" {
  start_named A "$URI_A"
  start_named B "$URI_B"
  make_job_cgroup "$REL"
  job="misrouted-$$"
  node "$job" h1 "$URI_A"
  sleep 2
  stop_nodes
  file="$OUT/$job.h5"
  for _ in $(seq 50); do [ "$(h5 "$file" 'int("summary" in f)' 2>/dev/null)" = 1 ] && break; sleep 0.1; done
  [ "$(h5 "$file" 'f.attrs["collector"]')" = A ]
  before=$(sha256sum "$file")

  # A node that lists only B sends the same job there.
  node "$job" h2 "$URI_B"
  sleep 2
  stop_nodes
  grep -q "is written by the collector 'A', not by this one ('B')" "$BATS_TEST_TMPDIR/collector-B.log"
  stop_pid "$PID_B" 30; PID_B=
  [ "$(sha256sum "$file")" = "$before" ]
  [ "$(h5 "$file" 'sorted(f["hosts"])')" = "['h1']" ]
  [ "$(ls "$OUT" | tr '\n' ' ')" = "$job.h5 $job.json " ]
}

@test "malformed collector lists are refused before anything starts" {
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id x --cgroup /nowhere --zeromq-uri "tcp://a:1,,tcp://b:1"
  [ "$status" -eq 64 ]
  [[ "$output" == *"empty address"* ]]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id x --cgroup /nowhere --zeromq-uri "$URI_A,$URI_A"
  [ "$status" -eq 64 ]
  [[ "$output" == *"listed twice"* ]]
  # One key file per collector, or one for all.
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id x --cgroup /nowhere --zeromq-uri "$URI_A,$URI_B" \
    --curve-server-key /k/a,/k/b,/k/c --curve-secret-key /k/node
  [ "$status" -eq 64 ]
  [[ "$output" == *"3 key files for 2 collectors"* ]]
  run "$COLMET_BIN/colmet-job" start --job-id x --cgroup /nowhere --zeromq-uri "tcp://a:1 tcp://b:1"
  [ "$status" -eq 64 ]
  [[ "$output" == *"not a ZeroMQ endpoint"* ]]
  run "$COLMET_BIN/colmet-job" run --zeromq-uri "http://a:1,tcp://b:1,tcp://b:1" -- true
  [ "$status" -eq 64 ]
  [[ "$output" == *"listed twice"* ]]
}

@test "a list in colmet.conf's [node] zeromq-uri is read whole" {
  start_named A "$URI_A"
  start_named B "$URI_B"
  make_job_cgroup "$REL"
  conf="$BATS_TEST_TMPDIR/colmet.conf"
  printf '[node]\nzeromq-uri = %s, %s\nspool-dir = %s\n' "$URI_A" "$URI_B" "$BATS_TEST_TMPDIR/spool" > "$conf"
  "$COLMET_BIN/colmet-node" --config "$conf" --job-id "conf-$$" --cgroup "$REL" --sample-period 0.5 \
    --control-dir "" -v 2>"$BATS_TEST_TMPDIR/node-conf.log" &
  NODE_PIDS+=($!)
  sleep 1.5
  stop_nodes
  grep -E "to tcp://127.0.0.1:[0-9]+ \(the job's collector of those in --zeromq-uri\)" "$BATS_TEST_TMPDIR/node-conf.log"
  stop_pid "$PID_A" 30; PID_A=
  stop_pid "$PID_B" 30; PID_B=
  [ "$(ls "$OUT" | tr '\n' ' ')" = "conf-$$.h5 conf-$$.json " ]
  writer=$(h5 "$OUT/conf-$$.h5" 'f.attrs["collector"]')
  uri=$(sed -n "s/.*every 0.5 s to \(tcp:[^ ]*\) .*/\1/p" "$BATS_TEST_TMPDIR/node-conf.log")
  if [ "$uri" = "$URI_A" ]; then [ "$writer" = A ]; else [ "$writer" = B ]; fi
}
