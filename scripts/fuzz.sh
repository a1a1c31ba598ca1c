#!/usr/bin/env bash
# Run the decoder's libFuzzer target for a while (default 60 s) on a copy of
# the seed corpus. Fails when the fuzzer finds a crash, leak or timeout.
#   scripts/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
fuzzer=build-fuzz/bin/fuzz_decode
[ -x "$fuzzer" ] || { echo "fuzz: $fuzzer not built (scripts/build.sh fuzz)" >&2; exit 1; }
work=$(mktemp -d /tmp/colmet-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp tests/fuzz/corpus/decode/* "$work/"
mkdir -p "$work/artifacts"
echo "fuzz: decoding random messages for ${seconds} s ($(ls "$work" | wc -l) seeds)"
"$fuzzer" -max_total_time="$seconds" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work" 2>"$work/fuzz.log" || {
  tail -50 "$work/fuzz.log"
  echo "fuzz: FAILED; reproducer(s):" >&2
  ls -l "$work/artifacts" >&2
  cp -r "$work/artifacts" ./fuzz-artifacts 2>/dev/null || true
  exit 1
}
grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$work/fuzz.log" | tail -4
echo "fuzz: no crash in ${seconds} s"
