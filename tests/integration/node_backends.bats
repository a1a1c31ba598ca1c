#!/usr/bin/env bats
# The node-level backends (rapl, temperature, infiniband, lustre) in the real
# colmet-node and colmet-collector: on this machine, which has none of the
# devices, each reports "not available" once and the rest of the sample is
# intact; on fixture trees (tests/fixtures/node) their data reach the HDF5
# file with scope "node", and the job summary has the RAPL energy.

load helpers

FIXTURES="$BATS_TEST_DIRNAME/../fixtures/node"

setup() {
  require_root
  JOB="nb-$$-$BATS_TEST_NUMBER"
  REL="/colmet-test/$JOB"
  OUT="$BATS_TEST_TMPDIR/out"
  URI="ipc://$BATS_TEST_TMPDIR/c.sock"
}

teardown() {
  [ -n "${NODE_PID:-}" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  [ -n "${FEED_PID:-}" ] && kill -9 "$FEED_PID" 2>/dev/null || true
  remove_job_cgroup "$REL"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
}

# has_device NAME: the real machine has what backend NAME reads.
has_device() {
  case $1 in
    rapl) compgen -G "/sys/class/powercap/intel-rapl:*" >/dev/null || [ -d /sys/bus/event_source/devices/power ] ;;
    temperature) compgen -G "/sys/class/thermal/thermal_zone*" >/dev/null ||
                 compgen -G "/sys/class/hwmon/hwmon*/temp*_input" >/dev/null ||
                 compgen -G "/sys/class/hwmon/hwmon*/device/temp*_input" >/dev/null ;;
    infiniband) compgen -G "/sys/class/infiniband/*/ports/*" >/dev/null ;;
    lustre) compgen -G "/proc/fs/lustre/llite/*/stats" >/dev/null ||
            compgen -G "/sys/kernel/debug/lustre/llite/*/stats" >/dev/null ;;
  esac
}

@test "colmet-node lists the node-level backends with their options" {
  run "$COLMET_BIN/colmet-node" --list-backends
  [ "$status" -eq 0 ]
  [[ "$output" == *"rapl "*"(node; --enable-RAPL)"* ]]
  [[ "$output" == *"temperature "*"(node; --enable-temperature)"* ]]
  [[ "$output" == *"infiniband "*"(node; --enable-infiniband)"* ]]
  [[ "$output" == *"lustre "*"(node; --enable-lustre)"* ]]
}

@test "on this machine each absent node backend says so once and the rest of the sample is intact" {
  "$COLMET_BIN/colmet-collector" --config /dev/null --allow-root --zeromq-bind-uri "$URI" --stdout \
    >"$BATS_TEST_TMPDIR/out.txt" 2>"$BATS_TEST_TMPDIR/collector.log" &
  COLLECTOR_PID=$!
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" -s 0.2 \
    --hostname nbhost --enable-RAPL --enable-temperature --enable-infiniband --enable-lustre \
    --rapl-mapping-dir "$BATS_TEST_TMPDIR" --temperature-mapping-dir "$BATS_TEST_TMPDIR" \
    2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 1
  stop_pid "$NODE_PID"
  node_status=$?
  NODE_PID=
  sleep 0.3
  stop_pid "$COLLECTOR_PID"; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  [ "$node_status" -eq 0 ]
  absent=0
  for b in rapl temperature infiniband lustre; do
    if has_device "$b"; then
      echo "# this machine has $b: not checked" >&3
      continue
    fi
    absent=$((absent + 1))
    [ "$(grep -c "backend $b not available: " "$BATS_TEST_TMPDIR/node.log")" -eq 1 ]
    # No data columns: no metric of that backend in any message.
    ! grep -q "^  $b\." "$BATS_TEST_TMPDIR/out.txt"
  done
  [ "$absent" -gt 0 ] || skip "this machine has every device"
  # Nothing else was logged for them, and no mapping file was written for an absent backend.
  [ "$(grep -c "not available" "$BATS_TEST_TMPDIR/node.log")" -eq "$absent" ]
  has_device rapl || ! compgen -G "$BATS_TEST_TMPDIR/RAPL_mapping.*" >/dev/null
  # The job's own backends are all there, from job_start to job_end.
  grep -q "job=$JOB host=nbhost job_start seq=0" "$BATS_TEST_TMPDIR/out.txt"
  grep -q "cgroup_cpu.usage = .* s (counter)" "$BATS_TEST_TMPDIR/out.txt"
  grep -q "cgroup_memory.current = " "$BATS_TEST_TMPDIR/out.txt"
  grep -q "processes.processes = " "$BATS_TEST_TMPDIR/out.txt"
  grep -q "job_end" "$BATS_TEST_TMPDIR/out.txt"
}

@test "node backends on fixture trees: scope node in the HDF5 file, mapping files, energy in the summary" {
  require_h5py
  sys="$BATS_TEST_TMPDIR/sys"
  proc="$BATS_TEST_TMPDIR/proc"
  mkdir -p "$sys" "$proc" "$BATS_TEST_TMPDIR/maps"
  for f in intel-2s thermal infiniband; do cp -r "$FIXTURES/$f/sys/." "$sys/"; done
  cp -r "$FIXTURES/lustre/proc/." "$proc/"
  cp -r "$FIXTURES/lustre/sys/." "$sys/"
  # package-0 uses 10 J per 0.1 s while the job runs. The value keeps its 12 digits and is
  # overwritten in place (no truncation), so a reading never sees an empty file.
  e=123456789012
  ( while :; do e=$((e + 10000000))
      printf '%d\n' "$e" | dd of="$sys/class/powercap/intel-rapl:0/energy_uj" conv=notrunc status=none
      sleep 0.1; done ) &
  FEED_PID=$!
  start_collector "$URI" "$OUT" --flush-interval 0.2
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir "$BATS_TEST_TMPDIR/spool" --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" -s 0.2 \
    --hostname nbhost --sysfs-root "$sys" --proc-root "$proc" --disable-backend processes \
    --enable-RAPL --enable-temperature --enable-infiniband --enable-lustre \
    --rapl-mapping-dir "$BATS_TEST_TMPDIR/maps" --temperature-mapping-dir "$BATS_TEST_TMPDIR/maps" \
    2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  # At least 5 rows stored (a slow machine or a sanitizer build starts slowly).
  for i in $(seq 100); do
    rows=$(h5 "$OUT/$JOB.h5" "len(seg('nbhost', 'rapl')[2])" 2>/dev/null || echo 0)
    [ "$rows" -ge 5 ] && break
    sleep 0.2
  done
  stop_pid "$NODE_PID"; NODE_PID=
  kill "$FEED_PID"; wait "$FEED_PID" 2>/dev/null || true; FEED_PID=
  for i in $(seq 50); do [ "$(h5 "$OUT/$JOB.h5" "'summary' in f" 2>/dev/null)" = "True" ] && break; sleep 0.1; done
  stop_pid "$COLLECTOR_PID"; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  ! grep -q "not available" "$BATS_TEST_TMPDIR/node.log"
  file="$OUT/$JOB.h5"
  for b in rapl temperature infiniband lustre; do
    [ "$(h5 "$file" "f['hosts/nbhost/$b'].attrs['scope']")" = "node" ]
  done
  [ "$(h5 "$file" "f['hosts/nbhost/cgroup_cpu'].attrs['scope']")" = "job" ]
  [ "$(h5 "$file" "seg('nbhost', 'rapl')[0]")" = \
    "['package_0_package', 'package_0_core', 'package_0_dram', 'package_1_package', 'package_1_core', 'package_1_dram']" ]
  [ "$(h5 "$file" "list(f['hosts/nbhost/rapl/segment_0'].attrs['units'])")" = "['J', 'J', 'J', 'J', 'J', 'J']" ]
  [ "$(h5 "$file" "last('nbhost', 'temperature', 'coretemp1.core_0')")" = "44.0" ]
  [ "$(h5 "$file" "list(f['hosts/nbhost/temperature/segment_0'].attrs['units'])[0]")" = "degC" ]
  [ "$(h5 "$file" "last('nbhost', 'infiniband', 'mlx4_0.1.xmit_bytes')")" = "4000000000000.0" ]
  [ "$(h5 "$file" "last('nbhost', 'lustre', 'read_bytes')")" = "2148536320.0" ]
  # The energy of the job: package-0 grew by 10 J every 0.1 s (the other domains stood still), from
  # its first row (job_start) to its last (job_end).
  energy=$(h5 "$file" "f['summary'].attrs['energy_j']")
  pkg=$(h5 "$file" "(lambda c: float(c[-1] - c[0]))(col('nbhost', 'rapl', 'package_0_package'))")
  [ "$(h5 "$file" "int(np.isnan(col('nbhost', 'rapl', 'package_0_package')).sum())")" = "0" ]
  others=$(h5 "$file" "float(sum(col('nbhost', 'rapl', m)[-1] for m in ['package_0_dram', 'package_1_package', 'package_1_dram']))")
  echo "energy_j=$energy package_0_package: +$pkg, other package and dram domains: $others"
  at_least "$energy" 30
  [ "$energy" = "$pkg" ]
  [ "$others" = "0.0" ]
  # The original tool's mapping files, next to the data.
  [ "$(head -1 "$BATS_TEST_TMPDIR"/maps/RAPL_mapping.*.csv)" = "counter_1,energy_microjoule,package-0,zone_package" ]
  [ "$(wc -l < "$(ls "$BATS_TEST_TMPDIR"/maps/RAPL_mapping.*.csv)")" -eq 24 ]
  [ "$(head -1 "$BATS_TEST_TMPDIR"/maps/temperature_mapping.*.csv)" = "counter_1, acpitz_0" ]
}
