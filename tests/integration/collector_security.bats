#!/usr/bin/env bats
# A collector exposed to a cluster, attacked as a user on a compute node
# would: CURVE keys (colmet-keygen), the ZAP check of every connection, the
# binding of a key to its host, the loopback-only default, connection
# limits, frame limits, SIGHUP key reload. A throw-away unprivileged user
# plays the attacker; colmet-forge (tests/tools/forge.cpp) is its plain
# ZeroMQ client.

load helpers

setup() {
  require_root
  require_h5py
  KEYS="$BATS_TEST_TMPDIR/keys"
  OUT="$BATS_TEST_TMPDIR/out"
  LOG="$BATS_TEST_TMPDIR/collector.log"
  PORT=$(free_port)
  URI="tcp://127.0.0.1:$PORT"
  mkdir -p "$KEYS/nodes.d" "$OUT"
  MALLORY="colmet-mallory-$$"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$MALLORY"
  chmod 755 "$BATS_TEST_TMPDIR"
  # Her programs, where she can run them whatever the mode of the build's
  # directories (a clone made by mktemp -d is 0700).
  MALLORY_BIN=$(mktemp -d /tmp/colmet-mallory-bin.XXXXXX)
  chmod 755 "$MALLORY_BIN"
  cp "$COLMET_BIN/colmet-forge" "$COLMET_BIN/colmet-node" "$MALLORY_BIN/"
}

teardown() {
  [ -n "${NODE_PID:-}" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  # userdel refuses a user who still has a process: wait for the kills
  # (they are asynchronous), or every run would leave a user behind.
  pkill -9 -u "$MALLORY" 2>/dev/null || true
  for _ in $(seq 50); do
    pgrep -u "$MALLORY" >/dev/null 2>&1 || break
    sleep 0.1
  done
  userdel "$MALLORY" 2>/dev/null || userdel --force "$MALLORY" 2>/dev/null || true
  rm -rf "$MALLORY_BIN"
  [ -n "${REL:-}" ] && remove_job_cgroup "$REL"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
  cat "$LOG" 2>/dev/null | tail -40 || true
}

# keys: a collector key pair and node keys for node042 and node043.
make_keys() {
  "$COLMET_BIN/colmet-keygen" --secret-key "$KEYS/collector.key" --public-key "$KEYS/collector.pub" --host collector
  for n in node042 node043; do
    "$COLMET_BIN/colmet-keygen" --secret-key "$KEYS/$n.key" --public-key "$KEYS/nodes.d/$n.pub" --host "$n"
  done
}

start_secure_collector() {
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" --hdf5-dir "$OUT" \
    --curve-secret-key "$KEYS/collector.key" --nodes-dir "$KEYS/nodes.d" --flush-interval 0.2 -v "$@" \
    2>>"$LOG" &
  COLLECTOR_PID=$!
  wait_for_log "listening on"
}

wait_for_log() { wait_for_text "$LOG" "$1" "${2:-10}"; }  # wait_for_log TEXT [SECONDS]

as_mallory() { setpriv --reuid="$MALLORY" --regid=nogroup --clear-groups "$@"; }

forge() { "$COLMET_BIN/colmet-forge" --uri "$URI" "$@"; }

# stopped_stats: the collector's last statistics line, after SIGTERM.
stop_collector() {
  stop_pid "$COLLECTOR_PID" 30; COLLECTOR_PID=   # ASan on a busy machine closes 600 files slowly
  grep "stopped:" "$LOG" | tail -1
}

@test "colmet-keygen makes a private key pair and a public line; it never overwrites without --force" {
  make_keys
  [ "$(stat -c %a "$KEYS/node042.key")" = 600 ]
  [ "$(stat -c %a "$KEYS/nodes.d/node042.pub")" = 644 ]
  grep -Eq '^node042 .{40}$' "$KEYS/nodes.d/node042.pub"
  # --public-of prints the same line again from the key pair.
  [ "$("$COLMET_BIN/colmet-keygen" --public-of "$KEYS/node042.key" --host node042)" = \
    "$(grep -v '^#' "$KEYS/nodes.d/node042.pub")" ]
  run "$COLMET_BIN/colmet-keygen" --secret-key "$KEYS/node042.key" --host node042
  [ "$status" -eq 73 ]
  [[ "$output" == *"exists; give --force to replace it"* ]]
  run "$COLMET_BIN/colmet-keygen"
  [ "$status" -eq 64 ]
  # A user cannot read a node's secret key.
  run as_mallory cat "$KEYS/node042.key"
  [ "$status" -ne 0 ]
}

@test "with CURVE a real colmet-node's samples are stored; a forged host, another node's key or no key are refused" {
  make_keys
  start_secure_collector
  REL="/colmet-test/sec-$$"
  make_job_cgroup "$REL"
  # The real node: its own key, its own host name.
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 77 --cgroup "$REL" --hostname node042 \
    --zeromq-uri "$URI" --curve-server-key "$KEYS/collector.pub" --curve-secret-key "$KEYS/node042.key" \
    --sample-period 0.2 --control-dir "" --user alice -v 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 1.5

  # Mallory on node042 cannot read its key: a plain ZeroMQ client, no key.
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --host evilhost --job 77 --meta user=mallory \
    --kind job_start --linger 1000
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --host node042 --job 77 --kind job_end --value 1e12 \
    --linger 1000
  # The same, as her own colmet-node: it cannot read the node's key either.
  run as_mallory "$MALLORY_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 77 --cgroup "$REL" --hostname node042 \
    --zeromq-uri "$URI" --curve-server-key "$KEYS/collector.pub" --curve-secret-key "$KEYS/node042.key" \
    --control-dir ""
  [ "$status" -eq 64 ]
  [[ "$output" == *"node key: read key-pair file $KEYS/node042.key: Permission denied"* ]]
  # Root on node043 (trusted for node043 only) speaking for node042.
  forge --server-key "$KEYS/collector.pub" --secret-key "$KEYS/node043.key" --host node042 --job 77 \
    --kind job_end --count 3
  # A key nobody registered.
  "$COLMET_BIN/colmet-keygen" --secret-key "$BATS_TEST_TMPDIR/stranger.key" --host node042 >/dev/null
  forge --server-key "$KEYS/collector.pub" --secret-key "$BATS_TEST_TMPDIR/stranger.key" --host node042 \
    --job 77 --kind job_end --linger 1000
  wait_for_log "refused a connection from 127.0.0.1: unknown node key" 30
  stop_pid "$NODE_PID" 5; NODE_PID=
  stats=$(stop_collector)
  echo "$stats"
  # The acknowledgements came back over CURVE too: every message confirmed.
  grep "ended:" "$BATS_TEST_TMPDIR/node.log"
  grep -Eq "ended: ([0-9]+) messages sent, \1 acknowledged, .* 0 unacknowledged" "$BATS_TEST_TMPDIR/node.log"

  # Only node042's real samples are in job 77's file; nothing else was made.
  [ "$(ls "$OUT" | tr '\n' ' ')" = "77.h5 77.json " ]
  [ "$(h5 "$OUT/77.h5" 'sorted(f["hosts"])')" = "['node042']" ]
  [ "$(h5 "$OUT/77.h5" 'f["hosts"]["node042"].attrs["user"]')" = alice ]
  [ "$(h5 "$OUT/77.h5" 'int(f["summary"].attrs["samples_lost"])')" = 0 ]
  [ "$(h5 "$OUT/77.h5" 'int(f["hosts"]["node042"]["cgroup_cpu"]["segment_0"]["time"].shape[0] >= 5)')" = 1 ]
  # Counted: 3 messages under node043's key; connections without a key
  # (mallory's two, and her colmet-node never got that far) fail their
  # handshake; the stranger's key is refused by the ZAP handler.
  [[ "$stats" == *"unauthorized 3"* ]]
  [[ "$stats" =~ ([0-9]+)\ failed\ handshakes ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]
  [[ "$stats" =~ node\ keys:\ [0-9]+\ accepted,\ ([0-9]+)\ refused ]] && [ "${BASH_REMATCH[1]}" -ge 1 ]
  grep -q "refused a connection from 127.0.0.1: unknown node key" "$LOG"
  grep -q "host 'node042' (job 77) sent under key .*, which is not registered for that host" "$LOG"
}

@test "without keys the collector listens on the loopback only, unless allow-unauthenticated says yes" {
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" --zeromq-bind-uri "tcp://0.0.0.0:$PORT"
  [ "$status" -eq 64 ]
  [[ "$output" == *"refusing to listen on tcp://0.0.0.0:$PORT without authentication"* ]]
  # The default address without keys is the loopback.
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  wait_for_log "listening on tcp://127.0.0.1:5556 (no authentication)" || wait_for_log "Address already in use"
  stop_pid "$COLLECTOR_PID" 5; COLLECTOR_PID=
  # Explicitly open: it runs, with a warning at every start.
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" --zeromq-bind-uri "tcp://0.0.0.0:$PORT" \
    --allow-unauthenticated -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  wait_for_log "listening on tcp://0.0.0.0:$PORT"
  grep -q "WITHOUT AUTHENTICATION (allow-unauthenticated)" "$LOG"
  # And from the configuration file, as a site would set it.
  printf '[collector]\nallow-unauthenticated = yes\n' > "$BATS_TEST_TMPDIR/colmet.conf"
  stop_pid "$COLLECTOR_PID" 5; COLLECTOR_PID=
  : > "$LOG"
  "$COLMET_BIN/colmet-collector" --config "$BATS_TEST_TMPDIR/colmet.conf" --allow-root --hdf5-dir "$OUT" \
    --zeromq-bind-uri "tcp://0.0.0.0:$PORT" -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  wait_for_log "listening on tcp://0.0.0.0:$PORT"
  grep -q "WITHOUT AUTHENTICATION" "$LOG"
}

@test "bad key set-ups stop the collector at start with the reason" {
  make_keys
  chmod 644 "$KEYS/collector.key"
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" --zeromq-bind-uri "$URI" \
    --curve-secret-key "$KEYS/collector.key" --nodes-dir "$KEYS/nodes.d"
  [ "$status" -eq 78 ]
  [[ "$output" == *"must be readable by its owner only (mode 644); run: chmod 600"* ]]
  chmod 600 "$KEYS/collector.key"
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" --zeromq-bind-uri "$URI" \
    --curve-secret-key "$KEYS/collector.key" --nodes-dir "$BATS_TEST_TMPDIR/none"
  [ "$status" -eq 78 ]
  [[ "$output" == *"read nodes directory $BATS_TEST_TMPDIR/none: No such file or directory"* ]]
  echo "node044 not-a-key" > "$KEYS/nodes.d/node044.pub"
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --hdf5-dir "$OUT" --zeromq-bind-uri "$URI" \
    --curve-secret-key "$KEYS/collector.key" --nodes-dir "$KEYS/nodes.d"
  [ "$status" -eq 78 ]
  [[ "$output" == *"node044.pub:1: 'not-a-key' is not a 40-character Z85 CURVE public key"* ]]
}

@test "SIGHUP reloads the node keys: a new node gets in, a removed one is refused, a broken directory changes nothing" {
  make_keys
  mv "$KEYS/nodes.d/node043.pub" "$KEYS/node043.pub"
  start_secure_collector
  send43() {
    forge --server-key "$KEYS/collector.pub" --secret-key "$KEYS/node043.key" --host node043 --job "$1" \
      --kind job_start --linger 1500
  }
  cp "$KEYS/node043.pub" "$KEYS/nodes.d/"
  kill -HUP "$COLLECTOR_PID"
  wait_for_log "node keys reloaded"
  grep -q "node keys: 2 key(s) from 2 file(s)" "$LOG"
  send43 b
  sleep 0.5
  [ -f "$OUT/b.h5" ]
  # A broken file: the keys in force stay.
  echo "garbage" > "$KEYS/nodes.d/zz-broken"
  kill -HUP "$COLLECTOR_PID"
  wait_for_log "SIGHUP: keeping the 2 node key(s) in force"
  rm "$KEYS/nodes.d/zz-broken" "$KEYS/nodes.d/node043.pub"
  kill -HUP "$COLLECTOR_PID"
  for _ in $(seq 50); do [ "$(grep -c "node keys reloaded" "$LOG")" -ge 3 ] && break; sleep 0.1; done
  # The refusal is awaited, not slept for: an ASan sender on a loaded CI
  # machine took over 3 s to start.
  send43 c
  wait_for_log "refused a connection from 127.0.0.1: unknown node key" 30
  stop_collector
  [ ! -e "$OUT/c.h5" ]
}

# sanitized: the binaries are built with AddressSanitizer, whose shadow
# memory and quarantine make resident-memory figures meaningless.
sanitized() { grep -q __asan_init "$COLMET_BIN/colmet-collector"; }

# vm_hwm PID: the process's peak resident memory, in MiB.
vm_hwm() { awk '/^VmHWM/ { printf "%d\n", $2 / 1024 }' "/proc/$1/status"; }

@test "frames above the protocol's 1 MiB limit are cut off by ZeroMQ before they take memory" {
  start_collector "$URI" "$OUT" --flush-interval 0.2
  wait_for_log "listening on"
  base=$(vm_hwm "$COLLECTOR_PID")
  # 60 frames of 15 MB (the attack measured 1.04 GB of RSS).
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --raw-bytes 15000000 --count 60 --linger 0 &
  forge_pid=$!
  sleep 3
  kill "$forge_pid" 2>/dev/null || true
  # A frame just within the limit still arrives (and, not being colmet's, is counted as invalid).
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --raw-bytes 1000000 --count 1
  sleep 0.5
  peak=$(vm_hwm "$COLLECTOR_PID")
  stats=$(stop_collector)
  echo "VmHWM: $base MiB at start, $peak MiB after the attack; $stats"
  [[ "$stats" =~ connections:\ 0\ open,\ ([0-9]+)\ accepted ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]
  sanitized || [ "$peak" -lt $((base + 64)) ]
  [[ "$stats" == *"invalid 1"* ]]
}

@test "idle connections that fill the descriptors are cut: a real sender still gets through" {
  # A small descriptor limit, as the attack found it: 3,000 idle TCP
  # connections took every descriptor and a real message was never stored.
  prlimit --nofile=512:512 "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" \
    --hdf5-dir "$OUT" --max-open-files 32 --idle-timeout 2 --flush-interval 0.2 -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  wait_for_log "listening on"
  grep -q "max-connections 16384 does not fit the descriptor limit 512 (with --max-open-files 32, for each of the two sockets): using 208" "$LOG"
  # Raw TCP connections that never send a greeting (dropped by the
  # handshake timeout), and ZeroMQ connections that never send a message
  # (beyond max-connections: cut at once; the others after --idle-timeout).
  as_mallory prlimit --nofile=4096:4096 "$MALLORY_BIN/colmet-forge" --uri "$URI" --idle-connections 3000 --hold 20 \
    > "$BATS_TEST_TMPDIR/idle.out" &
  as_mallory prlimit --nofile=4096:4096 "$MALLORY_BIN/colmet-forge" --uri "$URI" --idle-zmq 1000 --hold 20 \
    > "$BATS_TEST_TMPDIR/idle-zmq.out" &
  for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/idle-zmq.out" ] && break; sleep 0.1; done
  sleep 1
  t0=$(date +%s%N)
  forge --host node042 --job real --kind job_start
  for _ in $(seq 200); do [ -f "$OUT/real.h5" ] && break; sleep 0.1; done
  t1=$(date +%s%N)
  echo "the real job's file appeared after $(( (t1 - t0) / 1000000 )) ms"
  [ -f "$OUT/real.h5" ]
  pkill -9 -u "$MALLORY" 2>/dev/null || true
  # Once the flood is over: five ZeroMQ connections that never send are cut
  # after --idle-timeout (2 s).
  forge --idle-zmq 5 --hold 4
  stats=$(stop_collector)
  echo "$stats"
  [[ "$stats" =~ cut\ ([0-9]+)\ over\ the\ limit\ and\ ([0-9]+)\ idle\;\ ([0-9]+)\ failed ]]
  [ "${BASH_REMATCH[1]}" -gt 0 ]   # beyond 208: connections that never sent a message made room
  [ "${BASH_REMATCH[2]}" -ge 5 ]   # idle for 2 s
  [ "${BASH_REMATCH[3]}" -gt 0 ]   # raw connections without a greeting
}

@test "subscribers that fill the acknowledgement socket are cut: the files and the receiving socket keep their descriptors" {
  # Without a limit of its own, 1,000 SUB connections to the acknowledgement
  # socket took the descriptors the job's file and the senders need.
  ACK_URI="tcp://127.0.0.1:$(free_port)"
  prlimit --nofile=512:512 "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" \
    --ack-bind-uri "$ACK_URI" --hdf5-dir "$OUT" --max-open-files 32 --flush-interval 0.2 -v 2>>"$LOG" &
  COLLECTOR_PID=$!
  wait_for_log "listening on"
  grep -q "(with --max-open-files 32, for each of the two sockets): using 208" "$LOG"
  as_mallory prlimit --nofile=4096:4096 "$MALLORY_BIN/colmet-forge" --uri "$ACK_URI" --idle-sub 1000 --hold 6 \
    > "$BATS_TEST_TMPDIR/idle-sub.out" &
  FLOOD_PID=$!
  for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/idle-sub.out" ] && break; sleep 0.1; done
  # All made within the handshake time: the oldest still in it makes room.
  wait_for_log "connections are open to the acknowledgement socket (max-connections): cutting the oldest still in its handshake" 30
  forge --host node042 --job real --kind job_start
  forge --host node042 --job real --kind sample --seq 2
  for _ in $(seq 200); do [ -f "$OUT/real.h5" ] && break; sleep 0.1; done
  [ -f "$OUT/real.h5" ]
  # The flood runs its course (its connections are made asynchronously:
  # killed as soon as the file appears, some were not even tried yet).
  wait "$FLOOD_PID" || true
  stats=$(stop_collector)
  echo "$stats"
  [[ "$stats" =~ acknowledgement\ subscribers:\ ([0-9]+)\ open,\ ([0-9]+)\ accepted,\ ([0-9]+)\ cut\ over\ the\ limit ]]
  [ "${BASH_REMATCH[2]}" -ge 1000 ]  # every subscriber was accepted, then...
  [ "${BASH_REMATCH[3]}" -ge 792 ]   # ...those beyond 208 were cut at once
  [ "$(h5 "$OUT/real.h5" 'sorted(f["hosts"])')" = "['node042']" ]
}

@test "colmet-job start (as the OAR and Slurm hooks call it) gives the sampler the node's keys from colmet.conf" {
  make_keys
  start_secure_collector
  job="sec$$"
  REL="/oar/alice_$job"
  make_job_cgroup "$REL"
  RUN="$BATS_TEST_TMPDIR/run"
  cat > "$BATS_TEST_TMPDIR/colmet.conf" <<CONF
[node]
zeromq-uri = $URI
hostname = node042
curve-server-key = $KEYS/collector.pub
curve-secret-key = $KEYS/node042.key
CONF
  "$COLMET_BIN/colmet-job" start --job-id "$job" --user alice --scheduler oar -s 0.2 \
    --config "$BATS_TEST_TMPDIR/colmet.conf" --run-dir "$RUN" --log-file "$BATS_TEST_TMPDIR/job.log"
  pid=$(sed -n 's/^pid=//p' "$RUN/$job.pid")
  [[ "$(tr '\0' ' ' < /proc/$pid/cmdline)" == *"--config $BATS_TEST_TMPDIR/colmet.conf"* ]]
  sleep 1.5
  "$COLMET_BIN/colmet-job" stop --job-id "$job" --run-dir "$RUN" --log-file "$BATS_TEST_TMPDIR/job.log"
  cat "$BATS_TEST_TMPDIR/job.log"
  grep -q "(CURVE)" "$BATS_TEST_TMPDIR/job.log"
  stats=$(stop_collector)
  echo "$stats"
  [ "$(h5 "$OUT/$job.h5" 'sorted(f["hosts"])')" = "['node042']" ]
  [ "$(h5 "$OUT/$job.h5" 'int("summary" in f)')" = 1 ]
  [[ "$stats" == *"unauthorized 0"* ]]
}

# seconds_until FILE: wait up to 20 s for FILE; print the seconds it took.
seconds_until() {
  local t0 i
  t0=$(date +%s%N)
  for ((i = 0; i < 400; i++)); do [ -e "$1" ] && break; sleep 0.05; done
  [ -e "$1" ] || { echo "never: $1"; return 1; }
  "$PY" -c "print(round(($(date +%s%N) - $t0) / 1e9, 3))"
}

@test "a flood of 3,000 new jobs from one host makes at most the new-jobs cap of files, in bounded memory" {
  start_collector "$URI" "$OUT" --flush-interval 0.2
  wait_for_log "listening on"
  t0=$(date +%s%N)
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --host node042 --job flood --jobs 3000 --kind job_start
  sleep 1.5
  peak=$(vm_hwm "$COLLECTOR_PID")
  stats=$(stop_collector)
  # 60 new jobs at once per host (--max-new-jobs-per-minute), then one more
  # per second (the allowance refills at 60 a minute): at most 60 plus the
  # seconds the flood was being read (ASan reads it over more than a second).
  cap=$(( 60 + ($(date +%s%N) - t0 + 999999999) / 1000000000 ))
  files=$(find "$OUT" -name "*.h5" | wc -l)
  echo "files: $files (at most $cap); VmHWM $peak MiB; $stats"
  [ "$files" -le "$cap" ]
  [[ "$stats" =~ new_jobs\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge $((3000 - cap)) ]
  sanitized || [ "$peak" -lt 100 ]
}

@test "near-limit frames for many jobs: the collector's memory stays under the sink's budget plus a stated margin" {
  # Caps off, so that the HDF5 sink's budget alone bounds the memory; ZeroMQ
  # may hold --zeromq-hwm frames of at most 1 MiB per connection on top.
  start_collector "$URI" "$OUT" --flush-interval 0.2 --memory-budget 64 --zeromq-hwm 10 \
    --max-new-jobs-per-minute 0 --max-jobs-per-host 0
  wait_for_log "listening on"
  base=$(vm_hwm "$COLLECTOR_PID")
  # 250 messages of 38 backends x 1,024 metrics (~1 MiB each), one job each:
  # the attack once made 1.2 GB on disk and 3.4 GB of resident memory.
  # Each is a new file of 38 datasets of 1,024 columns (about 0.1 s of the
  # collector's time): the sender waits until all are taken.
  jobs=250
  sanitized && jobs=40   # ASan: the memory is not measured, only that nothing breaks
  as_mallory timeout 300 "$MALLORY_BIN/colmet-forge" --uri "$URI" --host node042 --job big --jobs "$jobs" \
    --kind sample --backends 38 --metrics 1024 --linger -1
  sleep 1
  peak=$(vm_hwm "$COLLECTOR_PID")
  stats=$(stop_collector)
  echo "VmHWM: $base MiB at start, $peak MiB at the peak; $stats"
  # Budget 64 MiB, ZeroMQ's queue 10 MiB, and 64 MiB for HDF5's and the
  # allocator's own (measured: about 40).
  sanitized || [ "$peak" -lt $((base + 64 + 10 + 64)) ]
  [[ "$stats" == *"stored $jobs"* ]]
  [ "$(find "$OUT" -name "*.h5" | wc -l)" -eq "$jobs" ]
}

@test "600 jobs on one host do not hold up a real job: its data arrives within 1 s of the time it takes alone" {
  start_collector "$URI" "$OUT" --flush-interval 0.2 --max-new-jobs-per-minute 0 --max-jobs-per-host 0
  wait_for_log "listening on"
  forge --host node001 --job alone --kind job_start
  alone=$(seconds_until "$OUT/alone.h5")
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --host node042 --job many --jobs 600 --kind job_start
  as_mallory "$MALLORY_BIN/colmet-forge" --uri "$URI" --host node042 --job many --jobs 600 --kind sample --seq 1
  forge --host node001 --job probe --kind job_start
  loaded=$(seconds_until "$OUT/probe.h5")
  stats=$(stop_collector)
  echo "a job's file appeared after $alone s alone, $loaded s behind 600 jobs on one host; $stats"
  "$PY" -c "import sys; sys.exit(0 if $loaded <= $alone + 1.0 else 1)"
  [ "$(find "$OUT" -name "*.h5" | wc -l)" -eq 602 ]
  # No job's file lists the 599 others: overlaps are recorded, each file once.
  [ "$(h5 "$OUT/many-0.h5" 'len(f["hosts"]["node042"].attrs.get("overlapping_jobs", []))')" -le 600 ]
}
