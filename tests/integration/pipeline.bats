#!/usr/bin/env bats
# The real colmet-node and colmet-collector over TCP on loopback, sampling a
# real cgroup in which a real workload burns about 2 s of CPU and touches
# 200 MiB of memory. The HDF5 file is read back with h5py and h5dump.

load helpers

setup() {
  require_root
  require_h5py
  JOB="it-$$-$BATS_TEST_NUMBER"
  REL="/colmet-test/$JOB"
  OUT="$BATS_TEST_TMPDIR/out"
  PORT=$(free_port)
  URI="tcp://127.0.0.1:$PORT"
  HOSTNAME_TAG="itest-host"
}

teardown() {
  [ -n "${NODE_PID:-}" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  remove_job_cgroup "$REL"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
  if mountpoint -q "$BATS_TEST_TMPDIR/disk" 2>/dev/null; then umount -l "$BATS_TEST_TMPDIR/disk"; fi
  if [ -f "$BATS_TEST_TMPDIR/collector.log" ]; then sed 's/^/# collector: /' "$BATS_TEST_TMPDIR/collector.log" >&3; fi
}

@test "node and collector over tcp store a real workload's CPU time and memory" {
  start_collector "$URI" "$OUT"
  make_job_cgroup "$REL"
  # A memory limit, as the schedulers set one: it is stored with the samples.
  if cgroup_is_v2; then limit_file="$CGROOT$REL/memory.max"; else limit_file="$CGROOT/memory$REL/memory.limit_in_bytes"; fi
  echo $((1024 * 1024 * 1024)) > "$limit_file"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.5 --hostname "$HOSTNAME_TAG" --user tester -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!

  # The cgroup holds in_cgroup's sh, which execs colmet-cputime, and the
  # workload: exactly what colmet-cputime's whole-life figure covers.
  in_cgroup "$REL" "$COLMET_BIN/colmet-cputime" --output "$BATS_TEST_TMPDIR/cputime.json" -- \
    "$COLMET_BIN/colmet-workload" --cpu-seconds 2 --memory-mib 200 >"$BATS_TEST_TMPDIR/workload.json"
  sleep 0.7   # one more sample after the workload ended

  start=$(date +%s%N)
  stop_pid "$NODE_PID" 5
  elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  NODE_PID=
  echo "node stopped in ${elapsed_ms} ms"
  [ "$elapsed_ms" -lt 1000 ]

  stop_pid "$COLLECTOR_PID" 10
  COLLECTOR_PID=

  file="$OUT/$JOB.h5"
  [ -f "$file" ]
  workload_cpu=$(cputime_of "$BATS_TEST_TMPDIR/cputime.json")
  stored_cpu=$(h5 "$file" "last('$HOSTNAME_TAG', 'cgroup_cpu', 'usage')")
  echo "the workload used $workload_cpu s of CPU over its whole life, colmet stored $stored_cpu s"
  within_pct "$stored_cpu" "$workload_cpu" "$CPU_PCT"

  peak=$(h5 "$file" "float(np.nanmax(col('$HOSTNAME_TAG', 'cgroup_memory', 'peak')))")
  echo "peak memory $peak B"
  at_least "$peak" $((200 * 1024 * 1024))
  limit=$(h5 "$file" "int(np.nanmin(col('$HOSTNAME_TAG', 'cgroup_memory', 'limit')))")
  echo "memory limit $limit B (the cgroup's: $(cat "$limit_file"))"
  [ "$limit" -eq $((1024 * 1024 * 1024)) ]

  # The summary agrees, and plain h5dump reads the file without colmet.
  summary_cpu=$(h5 "$file" "f['summary'].attrs['cpu_time_s']")
  echo "summary cpu_time_s $summary_cpu s"
  within_pct "$summary_cpu" "$workload_cpu" "$CPU_PCT"
  run h5dump -A "$file"
  [ "$status" -eq 0 ]
  [[ "$output" == *"cpu_time_s"* ]]
  [[ "$output" == *"tester"* ]]

  # Units and kinds travel with the data.
  [ "$(h5 "$file" "[str(u) for u in f['hosts']['$HOSTNAME_TAG']['cgroup_cpu']['segment_0'].attrs['units']][0]")" = "s" ]
  [ "$(h5 "$file" "len(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2]) >= 4")" = "True" ]
}

@test "the collector keeps files of ended jobs intact after SIGKILL and reopens open ones" {
  start_collector "$URI" "$OUT" --flush-interval 0.5
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.2 --hostname "$HOSTNAME_TAG" 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 2
  kill -KILL "$COLLECTOR_PID"; wait "$COLLECTOR_PID" 2>/dev/null || true
  file="$OUT/$JOB.h5"
  # Readable up to its last flush, without any repair step.
  rows=$(h5 "$file" "len(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2])")
  echo "rows after SIGKILL: $rows"
  [ "$rows" -ge 3 ]
  # A new collector picks the same file up again and appends to it.
  start_collector "$URI" "$OUT" --flush-interval 0.5
  sleep 1.5
  stop_pid "$NODE_PID" 5; NODE_PID=
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  more=$(h5 "$file" "len(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2])")
  echo "rows after restart: $more"
  [ "$more" -gt "$rows" ]
  [ "$(h5 "$file" "'summary' in f")" = "True" ]
}

# The file's figures for the host: rows of cgroup_cpu, distinct times among
# them, samples_received, samples_lost and last_seq.
file_figures() {
  h5 "$1" "' '.join(map(str, [len(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2]), len(set(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2])), int(f['summary'].attrs['samples_received']), int(f['summary'].attrs['samples_lost']), int(f['hosts']['$HOSTNAME_TAG'].attrs['last_seq'])]))"
}

# kill_and_restart_collector ACK_URI: a job at a 0.2 s period; the collector
# is SIGKILLed 2.5 s after its first flush (so that about 12 messages it had
# received die with it) and restarted 10 s later.
kill_and_restart_collector() {
  start_collector "$URI" "$OUT" --flush-interval 5
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --ack-uri "$1" --sample-period 0.2 --hostname "$HOSTNAME_TAG" -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 7.5
  kill -KILL "$COLLECTOR_PID"; wait "$COLLECTOR_PID" 2>/dev/null || true
  flushed=$(h5 "$OUT/$JOB.h5" "int(f['hosts']['$HOSTNAME_TAG'].attrs['last_seq'])")
  sleep 10
  start_collector "$URI" "$OUT" --flush-interval 5
  sleep 2
  stop_pid "$NODE_PID" 5; NODE_PID=
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
}

@test "with acknowledgements, a collector SIGKILLed and restarted 10 s later loses no sample" {
  kill_and_restart_collector ""   # the default: acknowledgements on port + 1
  read -r sent acked resent unacked <<<"$(sed -n 's/.* ended: \([0-9]*\) messages sent, \([0-9]*\) acknowledged, \([0-9]*\) resent, 0 spooled, 0 dropped, \([0-9]*\) unacknowledged.*/\1 \2 \3 \4/p' "$BATS_TEST_TMPDIR/node.log")"
  [ -n "$sent" ]
  read -r rows unique received lost last <<<"$(file_figures "$OUT/$JOB.h5")"
  echo "sent $sent, acknowledged $acked, resent $resent; last seq flushed before the kill $flushed; rows $rows ($unique distinct times), received $received, lost $lost, last seq $last"
  [ "$acked" -eq "$sent" ] && [ "$unacked" -eq 0 ]
  [ "$resent" -gt 0 ]                  # what died with the collector came again
  [ "$rows" -eq "$sent" ]              # every message stored ...
  [ "$unique" -eq "$rows" ]            # ... once
  [ "$received" -eq "$sent" ]
  [ "$lost" -eq 0 ]                    # and, truthfully, nothing lost
  [ "$last" -eq $((sent - 1)) ]        # seq counts from 0
  # In order: the stored times only grow.
  [ "$(h5 "$OUT/$JOB.h5" "bool(all(np.diff(seg('$HOSTNAME_TAG', 'cgroup_cpu')[2]) > 0))")" = "True" ]
}

@test "without acknowledgements, samples_lost after a collector SIGKILL is exactly what the file misses" {
  kill_and_restart_collector none
  sent=$(sed -n 's/.* ended: \([0-9]*\) messages sent, 0 dropped.*/\1/p' "$BATS_TEST_TMPDIR/node.log")
  [ -n "$sent" ]
  read -r rows unique received lost last <<<"$(file_figures "$OUT/$JOB.h5")"
  echo "sent $sent; last seq flushed before the kill $flushed; rows $rows ($unique distinct times), received $received, lost $lost, last seq $last"
  [ "$rows" -eq "$received" ]          # one cgroup_cpu row per message stored
  [ "$unique" -eq "$rows" ]            # no message stored twice
  [ "$last" -eq $((sent - 1)) ]        # seq counts from 0
  [ "$lost" -gt 0 ]                    # the rows that died with the collector ...
  [ $((received + lost)) -eq "$sent" ] # ... are counted, exactly
}

@test "with acknowledgements, a sampler started before its collector keeps every message for it" {
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.1 --zeromq-hwm 2 --hostname "$HOSTNAME_TAG" -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 1.5            # ~15 samples in the outbox, whatever ZeroMQ's queue holds
  start_collector "$URI" "$OUT"
  sleep 1.5
  stop_pid "$NODE_PID" 5; NODE_PID=
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  read -r sent acked <<<"$(sed -n 's/.* ended: \([0-9]*\) messages sent, \([0-9]*\) acknowledged, .*/\1 \2/p' "$BATS_TEST_TMPDIR/node.log")"
  read -r rows unique received lost last <<<"$(file_figures "$OUT/$JOB.h5")"
  echo "sent $sent, acknowledged $acked; rows $rows, lost $lost"
  [ "$sent" -ge 25 ] && [ "$acked" -eq "$sent" ]
  [ "$rows" -eq "$sent" ] && [ "$unique" -eq "$rows" ] && [ "$lost" -eq 0 ]
}

@test "without acknowledgements, a sampler whose collector is away never blocks, counts its drops and reports them later" {
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --ack-uri none --sample-period 0.1 --zeromq-hwm 2 --hostname "$HOSTNAME_TAG" -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 1.5            # ~15 samples, the queue holds 2: the rest are dropped
  start_collector "$URI" "$OUT"
  sleep 1.5
  start=$(date +%s%N)
  stop_pid "$NODE_PID" 5
  elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  NODE_PID=
  stop_pid "$COLLECTOR_PID" 10
  COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  echo "node stopped in ${elapsed_ms} ms"
  [ "$elapsed_ms" -lt 1000 ]
  grep -q "messages dropped" "$BATS_TEST_TMPDIR/node.log"
  file="$OUT/$JOB.h5"
  lost=$(h5 "$file" "int(f['summary'].attrs['samples_lost'])")
  echo "samples lost according to the file: $lost"
  [ "$lost" -ge 5 ]
  # Samples are aligned to the period on the wall clock: taken at most 30 ms
  # after a multiple of it, all but a few (a busy machine may wake the
  # sampler late now and then; how late is a benchmark's business).
  [ "$(h5 "$file" "bool(((seg('$HOSTNAME_TAG', 'cgroup_cpu')[2][1:-1] % 100000000) < 30000000).mean() >= 0.8)")" = "True" ]
}

@test "with acknowledgements, a full disk at the collector acknowledges nothing, loses nothing, and the file is complete once space returns" {
  # The collector writes into a 16 MiB tmpfs that a filler leaves 2 MiB
  # free, below --min-free-space 4: writing pauses from the start.
  disk="$BATS_TEST_TMPDIR/disk"
  mkdir -p "$disk"
  mount -t tmpfs -o size=16m tmpfs "$disk" || skip "cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?)"
  dd if=/dev/zero of="$disk/filler" bs=1M count=14 status=none
  start_collector "$URI" "$disk/out" --min-free-space 4 --flush-interval 1
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    --sample-period 0.2 --hostname "$HOSTNAME_TAG" -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 4
  # Paused: SIGHUP's flush writes nothing, so nothing was acknowledged.
  kill -HUP "$COLLECTOR_PID"
  sleep 0.5
  grep -q "writing paused" "$BATS_TEST_TMPDIR/collector.log"
  hup=$(grep "received SIGHUP" "$BATS_TEST_TMPDIR/collector.log")
  echo "$hup"
  [[ "$hup" == *"hdf5: 0 rows written"* ]]
  [[ "$hup" != *"acknowledgements"* ]]
  # Space returns: the rows the collector held are written and acknowledged.
  rm "$disk/filler"
  sleep 3
  stop_pid "$NODE_PID" 5; NODE_PID=
  stop_pid "$COLLECTOR_PID" 10; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  grep -q "writing resumed" "$BATS_TEST_TMPDIR/collector.log"
  read -r sent acked <<<"$(sed -n 's/.* ended: \([0-9]*\) messages sent, \([0-9]*\) acknowledged, .*/\1 \2/p' "$BATS_TEST_TMPDIR/node.log")"
  read -r rows unique received lost last <<<"$(file_figures "$disk/out/$JOB.h5")"
  umount "$disk"
  echo "sent $sent, acknowledged $acked; rows $rows ($unique distinct), received $received, lost $lost"
  [ "$sent" -ge 30 ] && [ "$acked" -eq "$sent" ]
  [ "$rows" -eq "$sent" ] && [ "$unique" -eq "$rows" ] && [ "$lost" -eq 0 ] && [ "$last" -eq $((sent - 1)) ]
}
