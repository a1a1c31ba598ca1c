"""Synthetic colmet job files, written with h5py in the collector's layout
(docs/hdf5-layout.md, layout version 1): same groups, attributes, types,
chunking and filters. For the unit tests and bench/report_bench.py; the
pipeline tests use files made by the real collector."""

import time

import h5py
import numpy as np

STR = h5py.string_dtype("utf-8")
PERIOD_NS = 1_000_000_000


def segment(names, units, kinds, t, values, last_status=None):
    return {"names": list(names), "units": list(units), "kinds": list(kinds),
            "time": np.asarray(t, dtype=np.int64), "values": np.asarray(values, dtype=np.float64),
            "last_status": last_status}


def backend(scope, *segments):
    return {"scope": scope, "segments": list(segments)}


def _values_chunk_rows(n):
    return int(min(4096, max(32, 8192 // (8 * max(n, 1)))))


def write_job(path, job_id, hosts, summary=None, version=1, compression=1, flags=None):
    """hosts: {hostname: {"attrs": {...}, "backends": {name: backend(...)}}};
    flags: {name: text}, written to /flags as the collector does."""
    with h5py.File(path, "w", libver="earliest") as f:
        f.attrs.create("colmet_layout_version", version, dtype=np.int32)
        f.attrs["job_id"] = job_id
        f.attrs.create("created_ns", time.time_ns(), dtype=np.int64)
        hg = f.create_group("hosts")
        for host, spec in hosts.items():
            g = hg.create_group(host)
            g.attrs["hostname"] = host
            for k, v in spec.get("attrs", {}).items():
                if isinstance(v, str):
                    g.attrs[k] = v
                elif isinstance(v, (list, tuple)):
                    g.attrs[k] = np.array(v, dtype=STR)
                elif isinstance(v, (int, np.integer)) and k.endswith("_ns"):
                    g.attrs.create(k, v, dtype=np.int64)
                elif isinstance(v, (int, np.integer)):
                    g.attrs.create(k, v, dtype=np.uint64)
                else:
                    g.attrs[k] = v
            for name, b in spec.get("backends", {}).items():
                bg = g.create_group(name)
                bg.attrs["name"] = name
                bg.attrs["scope"] = b["scope"]
                bg.attrs.create("segments", len(b["segments"]), dtype=np.uint64)
                for n, s in enumerate(b["segments"]):
                    sg = bg.create_group(f"segment_{n}")
                    sg.attrs["names"] = np.array(s["names"], dtype=STR)
                    sg.attrs["units"] = np.array(s["units"], dtype=STR)
                    sg.attrs["kinds"] = np.array(s["kinds"], dtype=STR)
                    sg.attrs.create("started_ns", int(s["time"][0]) if len(s["time"]) else 0, dtype=np.int64)
                    if s.get("last_status"):
                        sg.attrs["last_status"] = s["last_status"]
                    filt = {"compression": "gzip", "compression_opts": compression, "shuffle": True} \
                        if compression else {}
                    ts = sg.create_dataset("time", data=s["time"], maxshape=(None,), chunks=(1024,), **filt)
                    ts.attrs["unit"] = "ns since 1970-01-01 UTC"
                    ncol = len(s["names"])
                    sg.create_dataset("values", data=s["values"].reshape(len(s["time"]), ncol),
                                      maxshape=(None, ncol), chunks=(_values_chunk_rows(ncol), ncol),
                                      fillvalue=np.nan, **filt)
        if flags:
            fg = f.create_group("flags")
            for name, text in flags.items():
                fg.attrs[name] = text
                fg.attrs.create(name + "_since_ns", 1_800_000_000_000_000_000, dtype=np.int64)
        if summary is not None:
            sm = f.create_group("summary")
            for k, v in summary.items():
                if isinstance(v, str):
                    sm.attrs[k] = v
                elif k in ("samples_received", "samples_lost", "hosts"):
                    sm.attrs.create(k, v, dtype=np.uint64)
                elif k.endswith("_ns"):
                    sm.attrs.create(k, v, dtype=np.int64)
                else:
                    sm.attrs.create(k, v, dtype=np.float64)


def times(start_ns, rows, period_ns=PERIOD_NS):
    return start_ns + np.arange(rows, dtype=np.int64) * period_ns


def standard_backends(t, rng, cpus=4, busy=2.0, memory=2 << 30, perfhw=True, node=True, period_s=None,
                      memory_limit=None):
    """A host's backends over the times t: cgroup_cpu, cgroup_memory,
    cgroup_io, processes, perfhw (instructions, cpu_cycles, cache_misses,
    page_faults), rapl and temperature. Counters grow by random rates.
    memory_limit: the cgroup's memory limit column (NaN: none)."""
    n = t.size
    dt = np.diff(t, prepend=t[0]) / 1e9 if period_s is None else np.full(n, period_s)
    dt[0] = 0.0

    def counter(mean, spread=0.2):
        rate = np.abs(rng.normal(mean, spread * mean + 1e-12, n))
        return np.cumsum(rate * dt)

    usage = counter(busy, 0.1)
    user = usage * 0.95
    cpu = np.column_stack([usage, user, usage - user, counter(10.0, 0.01), np.zeros(n), np.zeros(n)])
    current = np.clip(memory * (0.6 + 0.4 * np.sin(np.linspace(0, 6, n)) ** 2), 0, None)
    mem = np.column_stack([current, np.maximum.accumulate(current), current * 0.9, current * 0.1, counter(1.0),
                           np.full(n, np.nan if memory_limit is None else float(memory_limit))])
    io = np.column_stack([counter(1e6), counter(2e6), counter(10.0), counter(20.0)])
    proc = np.column_stack([np.full(n, 4.0), np.full(n, 16.0), counter(3e6), counter(4e6), counter(100.0),
                            counter(100.0), counter(1e6), counter(2e6), np.zeros(n)])
    out = {
        "cgroup_cpu": backend("job", segment(
            ["usage", "user", "system", "nr_periods", "nr_throttled", "throttled_time"],
            ["s", "s", "s", "1", "1", "s"], ["counter"] * 6, t, cpu)),
        "cgroup_memory": backend("job", segment(
            ["current", "peak", "anon", "file", "major_faults", "limit"], ["B", "B", "B", "B", "1", "B"],
            ["gauge"] * 4 + ["counter", "gauge"], t, mem)),
        "cgroup_io": backend("job", segment(
            ["read_bytes", "write_bytes", "read_ops", "write_ops"], ["B", "B", "1", "1"], ["counter"] * 4, t, io)),
        "processes": backend("job", segment(
            ["processes", "threads", "read_chars", "write_chars", "read_syscalls", "write_syscalls", "read_bytes",
             "write_bytes", "cancelled_write_bytes"], ["1", "1", "B", "B", "1", "1", "B", "B", "B"],
            ["gauge", "gauge"] + ["counter"] * 7, t, proc)),
    }
    if perfhw:
        cycles = counter(busy * 2.5e9, 0.1)
        ins = cycles * rng.uniform(0.8, 2.0)
        perf = np.column_stack([ins, cycles, counter(1e6), counter(50.0), np.ones((n, 4))])
        out["perfhw"] = backend("job", segment(
            ["instructions", "cpu_cycles", "cache_misses", "page_faults", "instructions.scaling",
             "cpu_cycles.scaling", "cache_misses.scaling", "page_faults.scaling"],
            ["1"] * 8, ["counter"] * 4 + ["gauge"] * 4, t, perf))
    if node:
        rapl = np.column_stack([counter(120.0), counter(15.0), counter(110.0), counter(14.0)])
        out["rapl"] = backend("node", segment(
            ["package_0_package", "package_0_dram", "package_1_package", "package_1_dram"], ["J"] * 4,
            ["counter"] * 4, t, rapl))
        temp = np.column_stack([50 + 10 * rng.random(n), 55 + 10 * rng.random(n)])
        out["temperature"] = backend("node", segment(
            ["coretemp0.core_0", "coretemp1.core_0"], ["degC"] * 2, ["gauge"] * 2, t, temp))
    return out


def summary_for(hosts_backends, t_first, t_last, cpus_per_host, received):
    """A /summary as the collector computes it, from standard_backends data."""
    cpu = sum(float(b["cgroup_cpu"]["segments"][-1]["values"][-1, 0]) for b in hosts_backends)
    user = sum(float(b["cgroup_cpu"]["segments"][-1]["values"][-1, 1]) for b in hosts_backends)
    system = sum(float(b["cgroup_cpu"]["segments"][-1]["values"][-1, 2]) for b in hosts_backends)
    peak = max(float(np.nanmax(b["cgroup_memory"]["segments"][-1]["values"][:, 1])) for b in hosts_backends)

    def last(name, col):
        return sum(float(b[name]["segments"][-1]["values"][-1, col]) for b in hosts_backends if name in b)

    energy = np.nan
    if all("rapl" in b for b in hosts_backends):
        energy = sum(float(np.sum(v[-1] - v[0])) for v in (b["rapl"]["segments"][-1]["values"]
                                                            for b in hosts_backends))
    duration = (t_last - t_first) / 1e9
    cpus = float(cpus_per_host * len(hosts_backends))
    return {"duration_s": duration, "cpu_time_s": cpu, "user_time_s": user, "system_time_s": system,
            "cpus": cpus, "cpu_efficiency": cpu / (duration * cpus) if duration > 0 else np.nan,
            "peak_memory_bytes": peak, "read_bytes": last("cgroup_io", 0), "write_bytes": last("cgroup_io", 1),
            "read_chars": last("processes", 2), "write_chars": last("processes", 3), "energy_j": energy,
            "samples_received": received, "samples_lost": 0, "hosts": len(hosts_backends),
            "started_ns": int(t_first), "ended_ns": int(t_last)}
