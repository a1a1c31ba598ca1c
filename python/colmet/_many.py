"""colmet.open_many(): one row per job file with its summary.

Reading 20 attributes through h5py's high-level API costs about 2.5 ms per
file, through its low-level API with fixed memory types about 1.4 ms. This
module reads the known /summary attributes through the HDF5 C library
(_capi, about 0.5 ms; h5py's low-level API when that is unavailable, and for
any file it cannot read, so that the error says why), and splits long lists
over the CPUs, so that an administrator lists thousands of jobs a second.
"""

import glob
import multiprocessing
import os

import h5py
import numpy as np
import pandas as pd
from h5py import h5a, h5f, h5g, h5t

from colmet import _capi
from colmet._job import CONTEXT, CONTEXT_COUNTS, CONTEXT_TIMES, SUPPORTED_LAYOUT_VERSIONS, _reason, plain

# The /summary attributes of layout version 1 (docs/hdf5-layout.md), by type.
SUMMARY_FLOATS = ("duration_s", "cpus", "cpu_time_s", "user_time_s", "system_time_s", "cpu_efficiency",
                  "peak_memory_bytes", "read_bytes", "write_bytes", "read_chars", "write_chars", "energy_j",
                  "job_energy_j")
SUMMARY_INTS = ("samples_received", "samples_lost", "rows_dropped", "tsdb_points_dropped", "hosts",
                "hosts_without_job_end", "started_ns", "ended_ns")

# The columns of open_many()'s rows, in order.
COLUMNS = ("path", "job_id", "user") + CONTEXT + ("hosts", "start", "end", "duration_s", "cpus", "cpu_time_s", "user_time_s",
           "system_time_s", "cpu_efficiency", "cpus_used", "peak_memory_bytes", "read_bytes", "write_bytes",
           "read_chars", "write_chars", "energy_j", "energy_kwh", "job_energy_j",
           "job_energy_kwh", "samples_received", "samples_lost", "rows_dropped",
           "tsdb_points_dropped", "hosts_without_job_end", "has_summary", "cgroup_warning", "layout_version", "error")

_F8 = h5t.py_create(np.dtype("<f8"))
_I8 = h5t.py_create(np.dtype("<i8"))


def _attr(gid, name, mtype, buf):
    if not h5a.exists(gid, name):   # much cheaper than the KeyError of h5a.open
        return None
    attr = h5a.open(gid, name)
    attr.read(buf, mtype=mtype)
    return buf[()]


_STR = h5py.string_dtype("utf-8")
_VLEN = h5t.py_create(_STR)


def _string(gid, name):
    if not h5a.exists(gid, name):
        return None
    buf = np.zeros((), dtype=_STR)
    try:   # the collector writes scalar variable-length strings
        h5a.open(gid, name).read(buf, mtype=_VLEN)
    except (OSError, TypeError, ValueError):
        return plain(h5py.AttributeManager(h5py.Group(gid))[name.decode()])
    return plain(buf[()])


def _row(path):
    row = {"path": path}
    try:
        fid = h5f.open(os.fsencode(path), h5f.ACC_RDONLY)
    except (OSError, ValueError) as e:
        row["error"] = f"not a readable HDF5 file ({_reason(e)})"
        return row
    try:
        root = h5g.open(fid, b"/")
        i8 = np.empty((), dtype="<i8")
        version = _attr(root, b"colmet_layout_version", _I8, i8)
        if version is None:
            row["error"] = "not a colmet job file (no colmet_layout_version attribute)"
            return row
        row["layout_version"] = int(version)
        if version not in SUPPORTED_LAYOUT_VERSIONS:
            row["error"] = f"layout version {int(version)} is not supported"
            return row
        row["job_id"] = _string(root, b"job_id")
        if root.links.exists(b"hosts"):
            hosts = h5g.open(root, b"hosts")
            row["hosts"] = hosts.get_num_objs()
            if row["hosts"]:
                first = h5g.open(hosts, hosts.get_objname_by_idx(0))
                for name in ("user",) + CONTEXT:
                    row[name] = _string(first, name.encode())
        f8 = np.empty((), dtype="<f8")
        summary = h5g.open(root, b"summary") if root.links.exists(b"summary") else None
        row["has_summary"] = summary is not None
        if summary is not None:
            for name in SUMMARY_FLOATS:
                value = _attr(summary, name.encode(), _F8, f8)
                row[name] = float(value) if value is not None else np.nan
            for name in SUMMARY_INTS:
                value = _attr(summary, name.encode(), _I8, i8)
                if value is not None:
                    row[name] = int(value)
            row["cgroup_warning"] = _string(summary, b"cgroup_warning")
    except (OSError, KeyError, ValueError, RuntimeError) as e:
        row["error"] = f"damaged colmet job file ({_reason(e)})"
    finally:
        fid.close()
    return row


def _rows(paths, fast=True):
    c = _capi.reader() if fast else None
    if c is None:
        return [_row(p) for p in paths]
    floats = [n.encode() for n in SUMMARY_FLOATS]
    ints = [n.encode() for n in SUMMARY_INTS]
    host_strings = [n.encode() for n in ("user",) + CONTEXT]
    return [c.row(p, floats, ints, host_strings, SUPPORTED_LAYOUT_VERSIONS) or _row(p) for p in paths]


def _paths(where):
    if isinstance(where, (list, tuple)):
        return [os.fspath(p) for p in where]
    where = os.fspath(where)
    if os.path.isdir(where):
        return sorted(glob.glob(os.path.join(glob.escape(where), "*.h5")))
    return sorted(glob.glob(where, recursive=True))


def open_many(where, processes=None):
    """One row per job file: its path, id, user, the job's context as its
    scheduler gave it (job_name, account, partition, queue, project,
    time_limit_s, job_nodes, job_cpus, host_gpus, host_memory_mib,
    submit_time, start_time: None, <NA> or NaT where not given), number of
    hosts, start and end, the /summary figures (see docs/hdf5-layout.md; cpus_used is
    cpu_time_s / duration_s, the mean number of CPUs busy; energy_kwh is
    energy_j / 3.6e6, the whole node's; job_energy_kwh is job_energy_j /
    3.6e6, the job's share) and has_summary (False while the job runs or
    when its end was lost: the summary figures are then NaN). hosts_without_job_end
    above 0 marks a summary written without every host's job_end: the job
    still runs on some host, or the collector gave up waiting (incomplete).

    `where` is a directory (its *.h5 files), a glob pattern ("**" recurses)
    or a list of paths. A file that cannot be read gets a row whose `error`
    says why; nothing is raised for it. `processes`: worker processes for
    long lists (default: one per CPU from 512 files on; 1 = none).

    Example, the jobs that used less than a quarter of their CPUs:
        jobs = colmet.open_many("/var/lib/colmet")
        jobs[jobs.cpu_efficiency < 0.25].sort_values("cpu_time_s")
    """
    paths = _paths(where)
    if processes is None:
        processes = min(os.cpu_count() or 1, 8) if len(paths) >= 512 else 1
    if processes > 1 and len(paths) > 1:
        chunks = [paths[i::processes] for i in range(processes)]
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(processes) as pool:
            parts = pool.map(_rows, chunks)
        order = {p: i for i, p in enumerate(paths)}
        rows = sorted((r for part in parts for r in part), key=lambda r: order[r["path"]])
    else:
        rows = _rows(paths)
    frame = pd.DataFrame.from_records(rows, columns=[c for c in COLUMNS if c not in ("start", "end")]
                                      + ["started_ns", "ended_ns"])
    frame["start"] = pd.to_datetime(frame.pop("started_ns"), unit="ns", utc=True)
    frame["end"] = pd.to_datetime(frame.pop("ended_ns"), unit="ns", utc=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["cpus_used"] = frame["cpu_time_s"] / frame["duration_s"].where(frame["duration_s"] > 0)
    frame["energy_kwh"] = frame["energy_j"] / 3.6e6
    frame["job_energy_kwh"] = frame["job_energy_j"] / 3.6e6
    frame["has_summary"] = frame["has_summary"].fillna(False).astype(bool)
    for col in CONTEXT_COUNTS:
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype("Int64")
    for col in CONTEXT_TIMES:
        frame[col] = pd.to_datetime(pd.to_numeric(frame[col], errors="coerce"), unit="s", utc=True)
    for col in ("hosts", "samples_received", "samples_lost", "rows_dropped", "tsdb_points_dropped",
                "hosts_without_job_end", "layout_version"):
        frame[col] = frame[col].astype("Int64")
    return frame[list(COLUMNS)]
