#!/usr/bin/python3
"""Benchmarks of colmet's Python package (not run by the tests):

1. colmet-report on a day-long job of 64 hosts sampled every 5 s (17,280
   rows per host and backend, about 1.1 M rows per metric family), written
   in the collector's layout by python/tests/synth.py: wall time and peak
   RSS of the colmet-report process (targets: < 10 s, < 1 GiB).
2. colmet.open_many over 10,000 job files: files listed per second
   (target: >= 1,000).

    bench/report_bench.py [--dir DIR] [--keep] [--hosts 64] [--hours 24] [--period 5] [--files 10000]

The files are generated once into DIR (default: a temporary directory,
removed unless --keep) and reused by later runs with the same --dir. Run
it on an idle machine; results go to stdout (and docs/performance.md by hand).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SOURCE, "python"))
sys.path.insert(0, os.path.join(SOURCE, "python", "tests"))

import h5py  # noqa: E402
import numpy as np  # noqa: E402

import colmet  # noqa: E402
import synth  # noqa: E402

T0 = 1_800_000_000_000_000_000
GIB = 1 << 30


def big_job(path, hosts, hours, period_s):
    rows = int(hours * 3600 / period_s)
    t = synth.times(T0, rows, int(period_s * 1e9))
    rng = np.random.default_rng(16)
    spec = {}
    per_host = []
    for i in range(hosts):
        name = f"node-{i:03d}"
        b = synth.standard_backends(t, rng, cpus=32, busy=rng.uniform(2, 30), memory=int(rng.uniform(4, 60) * GIB))
        spec[name] = {"attrs": {"user": "alice", "cpus": "32", "cgroup": "/slurm/uid_1000/job_4242",
                                "first_ns": int(t[0]), "last_ns": int(t[-1]), "job_start_ns": int(t[0]),
                                "job_end_ns": int(t[-1]), "samples_received": rows, "samples_lost": 0},
                      "backends": b}
        per_host.append(b)
    summary = synth.summary_for(per_host, t[0], t[-1], 32, rows * hosts)
    synth.write_job(path, "4242", spec, summary=summary)
    return rows


def run_measured(argv):
    """(wall seconds, CPU seconds, peak RSS in bytes, exit status) of a child
    process (CPU: user + system, its worker processes included)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, proc.returncode


def load():
    return "load average %.1f" % os.getloadavg()[0]


def many_jobs(where, files):
    os.makedirs(where, exist_ok=True)
    t = synth.times(T0, 720, 5 * 10**9)   # one hour at 5 s, one host
    rng = np.random.default_rng(7)
    template = os.path.join(where, "template.h5.tmp")
    b = synth.standard_backends(t, rng, cpus=16, busy=4)
    synth.write_job(template, "t", {"n001": {"attrs": {"user": "bob", "cpus": "16"}, "backends": b}},
                    summary=synth.summary_for([b], t[0], t[-1], 16, 720))
    for i in range(files):
        path = os.path.join(where, f"{100000 + i}.h5")
        if os.path.exists(path):
            continue
        shutil.copyfile(template, path)
        with h5py.File(path, "r+") as f:
            f.attrs["job_id"] = str(100000 + i)
            f["summary"].attrs["cpu_time_s"] = float(rng.uniform(0, 16 * 3600))
    os.remove(template)


def bench_report(args, where):
    big = os.path.join(where, f"big-{args.hosts}h-{args.hours:g}h-{args.period:g}s.h5")
    if not os.path.exists(big):
        t = time.perf_counter()
        rows = big_job(big, args.hosts, args.hours, args.period)
        print(f"generated {big}: {args.hosts} hosts x {rows} rows = {args.hosts * rows:,} rows per backend, "
              f"{os.path.getsize(big) / GIB:.2f} GiB, in {time.perf_counter() - t:.1f} s")
    job = colmet.open(big)
    rows = len(job.frame(job.hosts[0], "cgroup_cpu"))
    print(f"big job: {len(job.hosts)} hosts, {rows * len(job.hosts):,} rows per metric family, "
          f"{os.path.getsize(big) / GIB:.2f} GiB")
    report = args.report if os.access(args.report, os.X_OK) else None
    argv = [report] if report else [sys.executable, "-m", "colmet.report"]
    out = os.path.join(where, "big.html")
    for i in range(args.repeat):
        before = load()
        wall, cpu, rss, rc = run_measured(argv + [big, "-o", out])
        print(f"colmet-report run {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss / (1 << 20):.0f} "
              f"MiB, exit {rc}, report {os.path.getsize(out) / 1024:.0f} KiB ({before}; targets: < 10 s, "
              "< 1024 MiB)")


def bench_many(args, where):
    jobs_dir = os.path.join(where, "many")
    t = time.perf_counter()
    many_jobs(jobs_dir, args.files)
    print(f"{args.files} job files ready in {time.perf_counter() - t:.1f} s")
    for processes in (None, 1):
        for i in range(args.repeat):
            before = load()
            t, c0 = time.perf_counter(), os.times()
            frame = colmet.open_many(jobs_dir, processes=processes)
            dt, c1 = time.perf_counter() - t, os.times()
            cpu = (c1.user + c1.system + c1.children_user + c1.children_system
                   - c0.user - c0.system - c0.children_user - c0.children_system)
            assert len(frame) == args.files and frame["error"].isna().all()
            label = "default (one process per CPU)" if processes is None else "one process"
            print(f"open_many {label}, run {i + 1}: {len(frame) / dt:,.0f} files/s ({dt:.2f} s, "
                  f"{cpu / len(frame) * 1e6:.0f} us CPU per file, {len(frame)} files; {before}; "
                  "target >= 1,000 files/s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--period", type=float, default=5)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--report", default=os.path.join(SOURCE, "build", "bin", "colmet-report"),
                    help="colmet-report to run (default: build/bin/colmet-report)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=("report", "many"), help="run one of the two benchmarks")
    args = ap.parse_args()
    where = args.dir or tempfile.mkdtemp(prefix="colmet-report-bench.")
    os.makedirs(where, exist_ok=True)
    try:
        if args.only != "many":
            bench_report(args, where)
        if args.only != "report":
            bench_many(args, where)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
