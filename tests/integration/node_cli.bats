#!/usr/bin/env bats
# colmet-node and colmet-collector command lines: checks made at start-up,
# the configuration file, and --stdout.

load helpers

@test "colmet-node lists its backends" {
  run "$COLMET_BIN/colmet-node" --list-backends
  [ "$status" -eq 0 ]
  for b in cgroup_cpu cgroup_memory cgroup_io processes; do [[ "$output" == *"$b"* ]]; done
}

@test "colmet-node refuses bad metadata, host names and cgroups with exit 64" {
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup / --meta "Bad-Key=1"
  [ "$status" -eq 64 ]
  [[ "$output" == *"--meta key 'Bad-Key'"* ]]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup / --meta "user=x"
  [ "$status" -eq 64 ]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup / --hostname "a/b"
  [ "$status" -eq 64 ]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup /../../etc
  [ "$status" -eq 64 ]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup /colmet-no-such-job-$$
  [ "$status" -eq 69 ]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup / --disable-backend nope
  [ "$status" -eq 64 ]
  run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "a/b" --cgroup /
  [ "$status" -eq 64 ]
  # --cgroup-leaves: patterns below the job's directory only.
  for leaves in "../other" "step_*/user,../../etc" "a//b" "."; do
    run "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id 1 --cgroup / \
      --cgroup-leaves "$leaves"
    echo "$leaves: $status $output"
    [ "$status" -eq 64 ]
    [[ "$output" == *"--cgroup-leaves"*"must be path components"* ]]
  done
}

@test "the collector reads its section of the configuration file and rejects unknown keys" {
  conf="$BATS_TEST_TMPDIR/colmet.conf"
  printf '[node]\nsample-period = 2\n\n[collector]\nallow-root = yes\nstdout = true\nzeromq-bind-uri = "ipc://%s/c.sock"\n' \
    "$BATS_TEST_TMPDIR" > "$conf"
  "$COLMET_BIN/colmet-collector" -c "$conf" >"$BATS_TEST_TMPDIR/out.txt" 2>"$BATS_TEST_TMPDIR/err.txt" &
  pid=$!
  for i in $(seq 50); do [ -S "$BATS_TEST_TMPDIR/c.sock" ] && break; sleep 0.1; done
  [ -S "$BATS_TEST_TMPDIR/c.sock" ]
  stop_pid "$pid"
  printf '[collector]\nstdout = true\nstdot = true\n' > "$conf"
  run "$COLMET_BIN/colmet-collector" -c "$conf"
  [ "$status" -eq 64 ]
  [[ "$output" == *"stdot"* ]]
  run "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root
  [ "$status" -eq 64 ]
  [[ "$output" == *"--hdf5-dir"* ]]
}

@test "the collector refuses to run as root unless allowed, and works as an unprivileged user" {
  require_root
  run "$COLMET_BIN/colmet-collector" --config /dev/null --hdf5-dir "$BATS_TEST_TMPDIR/out"
  [ "$status" -eq 78 ]
  [[ "$output" == *"refusing to run as root"*"--allow-root"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/out" ]
  # As an unprivileged user (nobody here; the package's colmet user on a
  # site), from a copy it can run (a clone made by mktemp -d is 0700).
  bin=$(mktemp -d /tmp/colmet-unpriv.XXXXXX)
  chmod 755 "$bin"
  cp "$COLMET_BIN/colmet-collector" "$COLMET_BIN/colmet-forge" "$bin/"
  mkdir "$bin/out" && chown nobody "$bin/out"
  port=$(free_port)
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$bin/colmet-collector" --config /dev/null \
    --zeromq-bind-uri "tcp://127.0.0.1:$port" --hdf5-dir "$bin/out" --flush-interval 0.2 -v \
    2>"$BATS_TEST_TMPDIR/unpriv.log" &
  pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$BATS_TEST_TMPDIR/unpriv.log" && break; sleep 0.1; done
  "$bin/colmet-forge" --uri "tcp://127.0.0.1:$port" --host node1 --job unpriv --kind job_start --meta user=root
  for _ in $(seq 100); do [ -f "$bin/out/unpriv.h5" ] && break; sleep 0.1; done
  stop_pid "$pid"
  cat "$BATS_TEST_TMPDIR/unpriv.log"
  owner=$(stat -c %U "$bin/out/unpriv.h5")
  rm -rf "$bin"
  [ "$owner" = nobody ]
}

@test "colmet-collector --stdout prints what a real colmet-node sends" {
  require_root
  sock="ipc://$BATS_TEST_TMPDIR/s.sock"
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$sock" --stdout \
    >"$BATS_TEST_TMPDIR/out.txt" 2>"$BATS_TEST_TMPDIR/err.txt" &
  cpid=$!
  rel="/colmet-test/cli-$$"
  make_job_cgroup "$rel"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "cli-$$" --cgroup "$rel" --zeromq-uri "$sock" -s 0.2 \
    --hostname clihost --meta step=3 --enable-perfhw --perfhw-list task_clock --perfhw-mapping-dir "$BATS_TEST_TMPDIR" &
  npid=$!
  sleep 1
  stop_pid "$npid"
  sleep 0.3
  stop_pid "$cpid"
  remove_job_cgroup "$rel"
  cat "$BATS_TEST_TMPDIR/out.txt"
  grep -q "job=cli-$$ host=clihost job_start seq=0" "$BATS_TEST_TMPDIR/out.txt"
  grep -q "meta step = 3" "$BATS_TEST_TMPDIR/out.txt"
  grep -q "cgroup_cpu.usage = .* s (counter)" "$BATS_TEST_TMPDIR/out.txt"
  grep -q "job_end" "$BATS_TEST_TMPDIR/out.txt"
  grep -q "perfhw.task_clock = .* s (counter)" "$BATS_TEST_TMPDIR/out.txt"
  # The original tool's mapping file, next to the data.
  map=$(ls "$BATS_TEST_TMPDIR"/perfhw_mapping.*.csv)
  [ "$(cat "$map")" = "$(printf 'counter_1,task_clock\ncounter_2,task_clock.scaling')" ]
}

# cap_mask NAMES...: the /proc/<pid>/status mask of those capabilities.
cap_mask() {
  local m=0 n
  for n in "$@"; do m=$((m | (1 << n))); done
  printf '%016x' "$m"
}

@test "a running sampler keeps only the capabilities it needs, and still reads another user's process I/O" {
  require_root
  require_h5py
  sock="ipc://$BATS_TEST_TMPDIR/p.sock"
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$sock" --hdf5-dir "$BATS_TEST_TMPDIR/out" \
    --flush-interval 0.2 2>"$BATS_TEST_TMPDIR/collector.log" &
  cpid=$!
  rel="/colmet-test/priv-$$"
  make_job_cgroup "$rel"
  perf=(); want=(2 19)  # CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE: the processes backend reads other users' /proc/<pid>/io
  if have_perf; then perf=(--enable-perfhw --perfhw-list task_clock); want+=(38); fi  # CAP_PERFMON
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "priv-$$" --cgroup "$rel" \
    --zeromq-uri "$sock" -s 0.2 --hostname privhost "${perf[@]}" -v 2>"$BATS_TEST_TMPDIR/node.log" &
  npid=$!
  wait_for_text "$BATS_TEST_TMPDIR/node.log" "privileges: every capability dropped but"
  grep "privileges:" "$BATS_TEST_TMPDIR/node.log"
  grep -E "^Cap|^NoNewPrivs" "/proc/$npid/status"
  mask=$(cap_mask "${want[@]}")
  [ "$(awk '/^CapEff/ {print $2}' "/proc/$npid/status")" = "$mask" ]
  [ "$(awk '/^CapPrm/ {print $2}' "/proc/$npid/status")" = "$mask" ]
  [ "$(awk '/^CapBnd/ {print $2}' "/proc/$npid/status")" = "$mask" ]
  [ "$(awk '/^CapInh/ {print $2}' "/proc/$npid/status")" = 0000000000000000 ]
  [ "$(awk '/^CapAmb/ {print $2}' "/proc/$npid/status")" = 0000000000000000 ]
  [ "$(awk '/^NoNewPrivs/ {print $2}' "/proc/$npid/status")" = 1 ]
  # Work of another user in the job: its I/O is still read.
  in_cgroup "$rel" setpriv --reuid=nobody --regid=nogroup --clear-groups \
    sh -c 'dd if=/dev/zero of=/dev/null bs=1M count=16 status=none; sleep 1'
  sleep 0.3
  stop_pid "$npid"
  for _ in $(seq 50); do [ "$(h5 "$BATS_TEST_TMPDIR/out/priv-$$.h5" "'summary' in f" 2>/dev/null)" = True ] && break; sleep 0.1; done
  stop_pid "$cpid"
  remove_job_cgroup "$rel"
  read=$(h5 "$BATS_TEST_TMPDIR/out/priv-$$.h5" "col('privhost', 'processes', 'read_chars').max()")
  echo "read_chars $read"
  at_least "$read" $((16 * 1024 * 1024))
  if have_perf; then
    at_least "$(h5 "$BATS_TEST_TMPDIR/out/priv-$$.h5" "last('privhost', 'perfhw', 'task_clock')")" 0
  fi
}

@test "a sampler with neither perf counters nor the processes backend keeps no capability" {
  require_root
  rel="/colmet-test/priv0-$$"
  make_job_cgroup "$rel"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir none --job-id "priv0-$$" --cgroup "$rel" \
    --zeromq-uri "ipc://$BATS_TEST_TMPDIR/none.sock" -s 0.2 --disable-backend processes -v 2>"$BATS_TEST_TMPDIR/node.log" &
  npid=$!
  wait_for_text "$BATS_TEST_TMPDIR/node.log" "sampling job priv0-$$"
  sleep 0.3
  status=$(cat "/proc/$npid/status")
  stop_pid "$npid"
  remove_job_cgroup "$rel"
  grep -E "^Cap|^NoNewPrivs" <<<"$status"
  for f in CapEff CapPrm CapBnd CapInh CapAmb; do [ "$(awk "/^$f/ {print \$2}" <<<"$status")" = 0000000000000000 ]; done
  [ "$(awk '/^NoNewPrivs/ {print $2}' <<<"$status")" = 1 ]
}
