#!/usr/bin/python3
"""Compare a job's HDF5 file with what a VictoriaMetrics holds for it.

usage: compare_store.py FILE.h5 VM_URL JOB_ID [CLUSTER]

Every finite value of every job-scope metric of every host in the file must
be in the store as one point of the series colmet's naming rule gives
(collector/sinks/tsdb/Naming.hpp, written out again here as the test's
oracle), at the same millisecond, with the same number; and the store must
hold no other point for the job. Prints a summary; exits 1 on a mismatch.
"""
import json
import math
import re
import sys
import urllib.parse
import urllib.request

import h5py

UNITS = {"s": "seconds", "B": "bytes", "J": "joules", "W": "watts", "degC": "celsius", "1": "", "": ""}


def sanitise(text):
    return re.sub(r"[^a-z0-9]", "_", text.lower())


def series(backend, name, unit, kind):
    """(metric name, event label or None) as Naming.hpp makes them."""
    word = UNITS.get(unit, sanitise(unit))
    counter = kind == "counter"
    if backend == "perfhw":
        if name.endswith(".scaling"):
            return "colmet_perfhw_scaling_ratio", name[: -len(".scaling")]
        return "colmet_perfhw_" + (word or "count") + ("_total" if counter else ""), name
    field = sanitise(name)
    if word and not field.endswith("_" + word):
        field += "_" + word
    if counter and not field.endswith("_total"):
        field += "_total"
    return "colmet_" + sanitise(backend) + "_" + field, None


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


SUMMARY = {"duration_seconds": "duration_s", "cpu_time_seconds": "cpu_time_s", "user_time_seconds": "user_time_s",
           "system_time_seconds": "system_time_s", "cpus": "cpus", "cpu_efficiency_ratio": "cpu_efficiency",
           "peak_memory_bytes": "peak_memory_bytes", "read_bytes": "read_bytes", "write_bytes": "write_bytes",
           "read_chars_bytes": "read_chars", "write_chars_bytes": "write_chars", "energy_joules": "energy_j",
           "job_energy_joules": "job_energy_j",
           "samples_received": "samples_received", "samples_lost": "samples_lost", "rows_dropped": "rows_dropped",
           "tsdb_points_dropped": "tsdb_points_dropped", "hosts": "hosts", "hosts_without_job_end": "hosts_without_job_end"}


def expected_points(path):
    want = {}
    with h5py.File(path, "r") as f:
        # The summary: one point per field at the job's end, no host label.
        summary = f["summary"].attrs
        for field, attr in SUMMARY.items():
            v = float(summary[attr])
            if math.isfinite(v):
                want[(None, "colmet_job_" + field, None)] = {int(summary["ended_ns"]) // 1_000_000: v}
        for host in f["hosts"]:
            h = f["hosts"][host]
            hostname = text(h.attrs["hostname"])
            # The job's CPUs on the host, with every message (every row time).
            if "cpus" in h.attrs:
                cpus = float(text(h.attrs["cpus"]))
                times = set()
                for bname in h:
                    for seg in h[bname]:
                        times.update(int(t) // 1_000_000 for t in h[bname][seg]["time"][:])
                want[(hostname, "colmet_job_host_cpus", None)] = {t: cpus for t in times}
            for bname in h:
                b = h[bname]
                if text(b.attrs.get("scope", "job")) != "job":
                    continue
                backend = text(b.attrs["name"])
                for seg in b:
                    s = b[seg]
                    names = [text(x) for x in s.attrs["names"]]
                    units = [text(x) for x in s.attrs["units"]]
                    kinds = [text(x) for x in s.attrs["kinds"]]
                    times = s["time"][:]
                    values = s["values"][:]
                    for i, name in enumerate(names):
                        key = (hostname,) + series(backend, name, units[i], kinds[i])
                        for row, t in enumerate(times):
                            v = float(values[row, i])
                            if math.isfinite(v):
                                want.setdefault(key, {})[int(t) // 1_000_000] = v
    return want


def stored_points(url, job_id):
    query = urllib.parse.urlencode({"match[]": '{job_id="%s"}' % job_id})
    got, labels = {}, {}
    with urllib.request.urlopen(url + "/api/v1/export?" + query) as answer:
        for line in answer:
            s = json.loads(line)
            m = s["metric"]
            key = (m.get("host"), m["__name__"], m.get("event"))
            points = got.setdefault(key, {})
            for t, v in zip(s["timestamps"], s["values"]):
                assert t not in points, f"two points at {t} for {key}"
                points[t] = v
            labels[key] = m
    return got, labels


def main():
    path, url, job_id = sys.argv[1:4]
    cluster = sys.argv[4] if len(sys.argv) > 4 else None
    want = expected_points(path)
    got, labels = stored_points(url, job_id)
    problems = []
    for key in sorted(set(want) | set(got), key=str):
        w, g = want.get(key, {}), got.get(key, {})
        if set(w) != set(g):
            problems.append(f"{key}: times differ: {len(w)} in the file, {len(g)} in the store; "
                            f"only in the file {sorted(set(w) - set(g))[:3]}, only in the store {sorted(set(g) - set(w))[:3]}")
            continue
        for t in w:
            # VictoriaMetrics keeps about 12 significant digits (it stores a
            # decimal mantissa); colmet sends the exact double (unit tests).
            if not math.isclose(w[t], g[t], rel_tol=1e-11, abs_tol=1e-300):
                problems.append(f"{key} at {t}: {w[t]!r} in the file, {g[t]!r} in the store")
                break
        if key in labels:
            m = labels[key]
            if m.get("job_id") != job_id or (cluster and m.get("cluster") != cluster):
                problems.append(f"{key}: labels {m}")
    n = sum(len(v) for v in want.values())
    print(f"{len(want)} series, {n} points in the file; {len(got)} series, "
          f"{sum(len(v) for v in got.values())} points in the store")
    for p in problems[:20]:
        print("MISMATCH", p)
    if problems or n == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
