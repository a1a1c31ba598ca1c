#!/usr/bin/env bats
# Backend gpu (colmet-node --enable-gpu) in the real colmet-node and
# collector: with a test double of NVML (tests/support/fake_nvml.c, not
# NVIDIA's library) its values reach the job's HDF5 file with their units
# and the GPUs chosen by the job's list; on this machine, which has no
# NVIDIA driver, the real libnvidia-ml.so.1 is absent and the backend costs
# one log line, the rest of the sample intact. scripts/gpu-check.sh checks
# against nvidia-smi on a machine with a real GPU.

load helpers

setup() {
  require_root
  require_h5py
  [ -n "${COLMET_FAKE_NVML_LIB:-}" ] && [ -f "$COLMET_FAKE_NVML_LIB" ] ||
    skip "COLMET_FAKE_NVML_LIB does not name the NVML test double (CTest sets it)"
  JOB="gpu-$$-$BATS_TEST_NUMBER"
  REL="/colmet-test/$JOB"
  OUT="$BATS_TEST_TMPDIR/out"
  URI="ipc://$BATS_TEST_TMPDIR/c.sock"
  export COLMET_FAKE_NVML="$BATS_TEST_TMPDIR/nvml.txt"
}

teardown() {
  [ -n "${NODE_PID:-}" ] && kill -9 "$NODE_PID" 2>/dev/null || true
  [ -n "${COLLECTOR_PID:-}" ] && kill -9 "$COLLECTOR_PID" 2>/dev/null || true
  [ -n "${WORK_PID:-}" ] && kill -9 "$WORK_PID" 2>/dev/null || true
  remove_job_cgroup "$REL"
  rmdir "$CGROOT"/*/colmet-test "$CGROOT/colmet-test" 2>/dev/null || true
}

@test "the job's GPUs reach its file in SI units, with the job's own processes' memory and energy" {
  start_collector "$URI" "$OUT" --flush-interval 1
  make_job_cgroup "$REL"
  in_cgroup "$REL" sleep 60 &
  WORK_PID=$!
  sleep 0.2
  pid=$(cat "$(if cgroup_is_v2; then echo "$CGROOT$REL"; else echo "$CGROOT/cpuacct$REL"; fi)/cgroup.procs" | head -1)
  # Two GPUs; the job's list names the second by UUID. Its process holds
  # 300 MB of the 400 MB in use; energy grows by 100 J between readings.
  cat > "$COLMET_FAKE_NVML" <<EOF2
gpu 0 GPU-aaaa 0 util=99 memutil=50 used=1000 total=8000 power=250000 energy=5000000 temp=70 sm=1800 mem=5000
gpu 1 GPU-bbbb 1 util=40 memutil=10 used=400000000 total=16000000000 power=120000 energy=1000000 temp=55 sm=1200 mem=5000
proc 1 $pid 300000000
proc 1 1 100000000
EOF2
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir none --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    -s 0.2 --hostname gpuhost --enable-gpu --gpus GPU-bbbb --nvml-library "$COLMET_FAKE_NVML_LIB" -v \
    2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 0.5
  sed -i 's/energy=1000000/energy=1100000/' "$COLMET_FAKE_NVML"
  sleep 0.5
  stop_pid "$NODE_PID"; NODE_PID=
  stop_pid "$COLLECTOR_PID" 30; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  grep -q "backend gpu: 1 GPU(s) (1:GPU-bbbb), chosen by --gpus" "$BATS_TEST_TMPDIR/node.log"
  run h5 "$OUT/$JOB.h5" "' '.join(str(x) for x in [f['hosts/gpuhost'].attrs['gpus'].decode() if isinstance(f['hosts/gpuhost'].attrs['gpus'], bytes) else f['hosts/gpuhost'].attrs['gpus'], last('gpuhost','gpu','gpu1_utilisation'), last('gpuhost','gpu','gpu1_memory_used'), last('gpuhost','gpu','gpu1_job_memory'), last('gpuhost','gpu','gpu1_power'), last('gpuhost','gpu','gpu1_energy'), last('gpuhost','gpu','gpu1_job_energy'), last('gpuhost','gpu','gpu1_sm_clock'), 'gpu0_utilisation' in seg('gpuhost','gpu')[0]])"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "1:GPU-bbbb 0.4 400000000.0 300000000.0 120.0 100.0 75.0 1200000000.0 False" ]
}

@test "without NVIDIA's library the backend says so once and the rest of the sample is intact" {
  ! ldconfig -p | grep -q libnvidia-ml.so.1 || skip "this machine has NVIDIA's NVML: scripts/gpu-check.sh checks it"
  start_collector "$URI" "$OUT" --flush-interval 1
  make_job_cgroup "$REL"
  "$COLMET_BIN/colmet-node" --config /dev/null --spool-dir none --job-id "$JOB" --cgroup "$REL" --zeromq-uri "$URI" \
    -s 0.2 --hostname gpuhost --enable-gpu 2>"$BATS_TEST_TMPDIR/node.log" &
  NODE_PID=$!
  sleep 0.6
  stop_pid "$NODE_PID"; NODE_PID=
  stop_pid "$COLLECTOR_PID" 30; COLLECTOR_PID=
  cat "$BATS_TEST_TMPDIR/node.log"
  [ "$(grep -c "backend gpu not available: NVML (libnvidia-ml.so.1) cannot be loaded" "$BATS_TEST_TMPDIR/node.log")" -eq 1 ]
  [ "$(grep -c "gpu" "$BATS_TEST_TMPDIR/node.log")" -eq 1 ]
  [ "$(h5 "$OUT/$JOB.h5" "int('gpu' in f['hosts/gpuhost'] and True)")" = 0 ]
  [ "$(h5 "$OUT/$JOB.h5" "int(len(seg('gpuhost','cgroup_cpu')[2]) >= 2)")" = 1 ]
}

@test "colmet-job run and the job spec take the gpu backend" {
  run "$COLMET_BIN/colmet-job" run --help
  [[ "$output" == *"--enable-gpu"* ]]
  run "$COLMET_BIN/colmet-node" --list-backends
  [[ "$output" == *"gpu "*"(job's devices; --enable-gpu)"* ]]
}

# fake_smi DIR POWER_W: an nvidia-smi that answers like the driver would for
# the NVML double's GPU 0 (40 %, 1024 MiB used), drawing POWER_W.
fake_smi() {
  mkdir -p "$1"
  cat > "$1/nvidia-smi" <<EOF2
#!/bin/sh
case "\$1" in
  -L) echo "GPU 0: Fake GPU (UUID: GPU-aaaa)"; exit 0 ;;
esac
while :; do
  echo "\$(date '+%Y/%m/%d %H:%M:%S.000'), GPU-aaaa, 40, 1024, $2"
  sleep 1
done
EOF2
  chmod +x "$1/nvidia-smi"
}

@test "scripts/gpu-check.sh: PASS when colmet agrees with nvidia-smi, FAIL when it does not, SKIP without a driver" {
  run env PATH=/usr/sbin:/usr/bin:/sbin:/bin "$BATS_TEST_DIRNAME/../../scripts/gpu-check.sh" 2
  [ "$status" -eq 77 ]
  [[ "$output" == "gpu-check: SKIP: nvidia-smi not found"* ]]
  # The NVML double as the driver's library, and an nvidia-smi that agrees with it.
  lib="$BATS_TEST_TMPDIR/lib"
  mkdir -p "$lib"
  ln -s "$COLMET_FAKE_NVML_LIB" "$lib/libnvidia-ml.so.1"
  echo "gpu 0 GPU-aaaa 0 util=40 memutil=10 used=1073741824 total=8589934592 power=150000 energy=1000 temp=50 sm=1500 mem=5000" \
    > "$COLMET_FAKE_NVML"
  fake_smi "$BATS_TEST_TMPDIR/smi" 150.00
  run env PATH="$BATS_TEST_TMPDIR/smi:$PATH" LD_LIBRARY_PATH="$lib" COLMET_BIN="$COLMET_BIN" \
    "$BATS_TEST_DIRNAME/../../scripts/gpu-check.sh" 3
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == "gpu-check: PASS: "*"gpu0 (util 40.0/40.0 %, mem 1024.0/1024.0 MiB, power 150.0/150.0 W)"* ]]
  fake_smi "$BATS_TEST_TMPDIR/smi" 300.00
  run env PATH="$BATS_TEST_TMPDIR/smi:$PATH" LD_LIBRARY_PATH="$lib" COLMET_BIN="$COLMET_BIN" \
    "$BATS_TEST_DIRNAME/../../scripts/gpu-check.sh" 3
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == "gpu-check: FAIL: "*"power 150.0/300.0 W OFF"* ]]
}
