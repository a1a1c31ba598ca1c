#!/usr/bin/env python3
"""The time-series sink's cost in the collector, as issue 17's target states it.

Runs collector_ingest_bench with the HDF5 sink alone and with the HDF5 and
time-series sinks, REPETITIONS times each, interleaved at random (a VM's
speed drifts; one pair of runs says little), and prints the medians of the
messages per CPU-second of the whole collector process and their ratio (the
target: at most 1.3x), for the steady phase and for the whole run.

    bench/tsdb_ingest_ratio.py [--bench build/bin/collector_ingest_bench]
                               [--repetitions 8] [--discard]

--discard makes and drops each batch instead of posting it (no sender
thread, no store process): the sink's work on the receiving thread alone.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

FILTER = "ingest/1000/500/100/0/[01]/0"
FIGURES = (("steady phase", "msgs_per_process_cpu_s"), ("whole run", "msgs_per_process_cpu_s_all"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", default="build/bin/collector_ingest_bench")
    parser.add_argument("--repetitions", type=int, default=8)
    parser.add_argument("--discard", action="store_true", help="batches made and dropped, not posted")
    args = parser.parse_args()
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    if not os.access(args.bench, os.X_OK):
        parser.error(f"{args.bench}: not an executable (scripts/build.sh release builds it)")
    env = dict(os.environ)
    if args.discard:
        env["COLMET_BENCH_TSDB_DISCARD"] = "1"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        print(f"running {args.bench}: {2 * args.repetitions} runs of about 30 s each", file=sys.stderr)
        done = subprocess.run(
            [args.bench, f"--benchmark_filter={FILTER}", f"--benchmark_repetitions={args.repetitions}",
             "--benchmark_enable_random_interleaving=true", f"--benchmark_out={out.name}",
             "--benchmark_out_format=json"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            print(f"{args.bench} failed (exit {done.returncode})", file=sys.stderr)
            return 1
        report = json.load(open(out.name, encoding="utf-8"))
    runs = {"0": [], "1": []}  # time-series sink off / on
    for b in report["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        runs[b["name"].split("/")[5]].append(b)
    if not runs["0"] or not runs["1"]:
        print("no successful run of one of the two configurations", file=sys.stderr)
        return 1
    sink = "time-series sink (batches dropped)" if args.discard else "time-series sink (posting)"
    print(f"{len(runs['0'])} + {len(runs['1'])} runs; thousand messages per CPU-second of the collector, medians")
    print(f"{'figure':<14} {'HDF5 alone':>11} {'+ ' + sink:>36} {'ratio':>6}")
    for label, key in FIGURES:
        alone = statistics.median(b[key] for b in runs["0"])
        both = statistics.median(b[key] for b in runs["1"])
        print(f"{label:<14} {alone / 1000:>11.1f} {both / 1000:>36.1f} {alone / both:>5.2f}x")
    # The single runs' spread: on a VM it is wide, which is why medians.
    for label, key in FIGURES:
        spread = [f"{min(b[key] for b in runs[c]) / 1000:.1f}-{max(b[key] for b in runs[c]) / 1000:.1f}"
                  for c in ("0", "1")]
        print(f"{label:<14} single runs: {spread[0]} / {spread[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
