#!/usr/bin/env bash
# Run each libFuzzer target for a while (default 60 s each) on a copy of its
# seed corpus: fuzz_decode (one frame into the wire decoder), fuzz_sink
# (sequences of frames through the collector into HDF5 files and
# time-series request bodies), fuzz_control
# (control requests, answers, legacy configure messages and frames), then,
# for half the time (their parsers are small), fuzz_spool (a node spool file
# into its reader), fuzz_keys (CURVE key files) and fuzz_node_inputs
# (/proc/stat, a devices.list, a GPU list) and fuzz_summary_json (a job's
# summary JSON into its reader). Fails when a
# fuzzer finds a crash, leak or timeout; the reproducers are copied to
# ./fuzz-artifacts/<target>/. As many run at once as there are CPUs
# (COLMET_FUZZ_JOBS).
#   scripts/fuzz.sh [seconds per target]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
work=$(mktemp -d /tmp/colmet-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

# run_fuzzer TARGET CORPUS MAX_LEN WHAT [SECONDS]
run_fuzzer() {
  local target=$1 corpus=$2 max_len=$3 what=$4 seconds=${5:-$seconds}
  local fuzzer=build-fuzz/bin/$target dir=$work/$target
  [ -x "$fuzzer" ] || { echo "fuzz: $fuzzer not built (scripts/build.sh fuzz)" >&2; return 1; }
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/tmp"
  cp "$corpus"/* "$dir/corpus/"
  echo "fuzz: $target: $what for ${seconds} s ($(ls "$dir/corpus" | wc -l) seeds)"
  # fuzz_sink writes its HDF5 files under $TMPDIR: inside the work directory,
  # removed with it even after a crash.
  TMPDIR=$dir/tmp "$fuzzer" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus" 2>"$dir/fuzz.log" || {
    tail -50 "$dir/fuzz.log"
    echo "fuzz: $target FAILED; reproducer(s):" >&2
    ls -l "$dir/artifacts" >&2
    mkdir -p fuzz-artifacts
    cp -r "$dir/artifacts" "fuzz-artifacts/$target" 2>/dev/null || true
    return 1
  }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$dir/fuzz.log" | tail -4
  echo "fuzz: $target: no crash in ${seconds} s"
}

# One fuzzer per CPU at a time (COLMET_FUZZ_JOBS sets how many): each is
# one process, so on 2 CPUs they take half the time they take in turn.
# Each one's lines are printed together when it ends.
parallel=${COLMET_FUZZ_JOBS:-$(nproc)}
pids=()
start_fuzzer() {
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  {
    rc=0
    run_fuzzer "$@" || rc=1
    echo "$rc" >"$work/$1.rc"
  } >"$work/$1.out" 2>&1 &
  pids+=("$!:$1")
}
half=$(( (seconds + 1) / 2 ))
start_fuzzer fuzz_decode tests/fuzz/corpus/decode 8192 "decoding random messages"
start_fuzzer fuzz_sink tests/fuzz/corpus/sink 32768 "random message sequences into HDF5 files and time-series bodies"
start_fuzzer fuzz_control tests/fuzz/corpus/control 8192 "random control messages and frames"
start_fuzzer fuzz_spool tests/fuzz/corpus/spool 16384 "random spool files" "$half"
start_fuzzer fuzz_keys tests/fuzz/corpus/keys 4096 "random key files" "$half"
start_fuzzer fuzz_node_inputs tests/fuzz/corpus/node_inputs 4096 "random /proc/stat, devices.list and GPU lists" "$half"
start_fuzzer fuzz_summary_json tests/fuzz/corpus/summary_json 8192 "random summaries' JSON" "$half"
status=0
wait || true
for entry in "${pids[@]}"; do
  cat "$work/${entry#*:}.out"
  [ "$(cat "$work/${entry#*:}.rc" 2>/dev/null)" = 0 ] || status=1
done
exit "$status"
