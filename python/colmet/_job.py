"""colmet.open(): one job's HDF5 file (docs/hdf5-layout.md) as a Job."""

import contextlib
import os
import re

import h5py
import numpy as np
import pandas as pd

from colmet._errors import FileError, LayoutVersionError
from colmet._frame import MetricFrame

# Every layout version the collector has written. A file of another version
# is refused (LayoutVersionError), never guessed at.
SUPPORTED_LAYOUT_VERSIONS = (1,)


def _reason(exc):
    """The useful part of an h5py/HDF5 error: 'Unable to open file (truncated
    file: eof = ...)' gives 'truncated file: eof = ...'."""
    text = str(exc).strip() or type(exc).__name__
    m = re.search(r"\(([^()]*)\)\s*$", text)
    return (m.group(1) if m else text).replace("\n", " ")


def open_h5(path):
    """h5py.File(path, "r"), with a FileError of one line when that fails."""
    if not os.path.exists(path):
        raise FileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise FileError(f"{path}: is a directory, not a job file")
    if not os.access(path, os.R_OK):
        raise FileError(f"{path}: permission denied: a job's file is readable by the job's user and the "
                        "collector's group only (see colmet(7))")
    try:
        return h5py.File(path, "r", locking=False)
    except (OSError, ValueError) as e:
        raise FileError(f"{path}: not a readable HDF5 file ({_reason(e)}): truncated, damaged or not HDF5") from None


def check_layout(f, path):
    """The file's layout version, after checking that colmet can read it."""
    if "colmet_layout_version" not in f.attrs:
        raise FileError(f"{path}: an HDF5 file, but not a colmet job file (no colmet_layout_version attribute)")
    try:
        version = int(f.attrs["colmet_layout_version"])
    except (TypeError, ValueError):
        raise FileError(f"{path}: colmet_layout_version is not a number") from None
    if version not in SUPPORTED_LAYOUT_VERSIONS:
        known = ", ".join(str(v) for v in SUPPORTED_LAYOUT_VERSIONS)
        newer = " (written by a newer colmet: update colmet's Python package)" if version > max(
            SUPPORTED_LAYOUT_VERSIONS) else ""
        raise LayoutVersionError(f"{path}: layout version {version} is not supported; this colmet reads "
                                 f"version {known}{newer}")
    return version


def plain(value):
    """An attribute value as a plain Python value (str, int, float, list)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return plain(value[()])
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def read_attrs(obj):
    return {k: plain(v) for k, v in obj.attrs.items()}


def timestamp(ns):
    return None if ns is None else pd.Timestamp(int(ns), unit="ns", tz="UTC")


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class Backend:
    """What a host's backend group says about itself (no data)."""

    def __init__(self, name, group, scope, segments):
        self.name = name          # as the sampler sent it
        self.group = group        # the HDF5 group name (object_name(name))
        self.scope = scope        # "job" or "node"
        self.segments = segments  # segment group names, in order

    def __repr__(self):
        return f"Backend({self.name!r}, scope={self.scope!r}, segments={len(self.segments)})"


class Host:
    """One host of a job: its attributes, and a DataFrame per backend
    (host["cgroup_cpu"], or job.frame(host, backend))."""

    def __init__(self, job, group, attrs, backends):
        self._job = job
        self.group = group
        self.attrs = attrs
        self.name = str(attrs.get("hostname", group))
        self.backends = backends  # name -> Backend

    def __repr__(self):
        return f"Host({self.name!r}, backends={sorted(self.backends)})"

    def __getitem__(self, backend):
        return self._job.frame(self.name, backend)

    def __contains__(self, backend):
        return backend in self.backends

    @property
    def user(self):
        return self.attrs.get("user")

    @property
    def cpus(self):
        """CPUs allocated on this host (the sampler's last "cpus" value), or None."""
        return _number(self.attrs.get("cpus"))

    @property
    def samples_received(self):
        return int(self.attrs.get("samples_received", 0))

    @property
    def samples_lost(self):
        return int(self.attrs.get("samples_lost", 0))

    @property
    def first(self):
        return timestamp(self.attrs.get("first_ns"))

    @property
    def last(self):
        return timestamp(self.attrs.get("last_ns"))

    @property
    def job_start(self):
        return timestamp(self.attrs.get("job_start_ns"))

    @property
    def job_end(self):
        return timestamp(self.attrs.get("job_end_ns"))

    @property
    def overlapping_jobs(self):
        """Ids of the other jobs that ran on this host at the same time."""
        jobs = self.attrs.get("overlapping_jobs", [])
        return [jobs] if isinstance(jobs, str) else list(jobs)


# The job's context (its scheduler's view: colmet-job start --context), as
# the hosts' metadata holds it: text keys, then whole numbers, then times
# (seconds since the epoch). The keys of src/scheduler/JobContext.cpp, in its
# order (python/tests/test_context.py compares them with colmet-job's).
CONTEXT_TEXT = ("job_name", "account", "partition", "queue", "project")
CONTEXT_COUNTS = ("time_limit_s", "job_nodes", "job_cpus", "host_gpus", "host_memory_mib")
CONTEXT_TIMES = ("submit_time", "start_time")
CONTEXT = CONTEXT_TEXT + CONTEXT_COUNTS + CONTEXT_TIMES


def _scheduler(hosts):
    """The scheduler, from metadata when a sampler sent it, else from the
    job's cgroup path (OAR: /oar/<user>_<id>; Slurm: .../slurm/uid_N/job_N;
    colmet-job run: /colmet/<id>). None when it cannot be told."""
    for h in hosts:
        if h.attrs.get("scheduler"):
            return str(h.attrs["scheduler"])
    for h in hosts:
        paths = " ".join(str(h.attrs.get(k, "")) for k in ("cgroup", "cgroups"))
        if re.search(r"(^|/)oar/", paths):
            return "OAR"
        if "slurm" in paths:
            return "Slurm"
        if str(h.attrs.get("cgroup", "")).startswith("/colmet/"):
            return "colmet-job run"
    return None


class Job:
    """One job's file. Metadata and the summary are read at open; the data
    of a backend is read when asked for (frame(), frames(), host[backend])."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with open_h5(self.path) as f:
            self.layout_version = check_layout(f, self.path)
            try:
                self.attrs = read_attrs(f)
                self._hosts = {}
                hosts = f.get("hosts")
                for group in (hosts.keys() if hosts is not None else []):
                    g = hosts[group]
                    if not isinstance(g, h5py.Group):
                        continue
                    backends = {}
                    for bgroup, b in g.items():
                        if not isinstance(b, h5py.Group):
                            continue
                        segs = sorted((s for s in b.keys() if re.fullmatch(r"segment_\d+", s)),
                                      key=lambda s: int(s.split("_")[1]))
                        battrs = b.attrs
                        name = plain(battrs["name"]) if "name" in battrs else bgroup
                        scope = plain(battrs["scope"]) if "scope" in battrs else "job"
                        backends[name] = Backend(name, bgroup, scope, segs)
                    host = Host(self, group, read_attrs(g), backends)
                    self._hosts[host.name] = host
                self.summary = read_attrs(f["summary"]) if "summary" in f else {}
                raw = read_attrs(f["flags"]) if isinstance(f.get("flags"), h5py.Group) else {}
                self._flags = {name: (str(text), timestamp(raw.get(name + "_since_ns")))
                               for name, text in raw.items() if not name.endswith("_since_ns")}
            except (OSError, KeyError, ValueError, RuntimeError) as e:
                raise FileError(f"{self.path}: damaged colmet job file ({_reason(e)})") from None
        self.job_id = str(self.attrs.get("job_id", os.path.basename(self.path)))
        self.created = timestamp(self.attrs.get("created_ns"))
        self._open = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_open"] = None
        return state

    @contextlib.contextmanager
    def reading(self):
        """Keep the file open while reading many frames:
            with job.reading():
                frames = [job.frame(h, "cgroup_cpu") for h in job.hosts]
        (without it, each frame() opens and closes the file)."""
        if self._open is not None:
            yield self
            return
        self._open = open_h5(self.path)
        try:
            yield self
        finally:
            self._open.close()
            self._open = None

    def _file(self):
        if self._open is not None:
            return contextlib.nullcontext(self._open)
        return open_h5(self.path)

    def __repr__(self):
        return f"colmet.Job({self.job_id!r}, hosts={self.hosts}, path={self.path!r})"

    # --- metadata -----------------------------------------------------
    @property
    def hosts(self):
        """Host names, sorted."""
        return sorted(self._hosts)

    def host(self, name):
        try:
            return self._hosts[name]
        except KeyError:
            raise KeyError(f"job {self.job_id} has no host {name!r} (hosts: {', '.join(self.hosts)})") from None

    def __getitem__(self, name):
        return self.host(name)

    @property
    def has_summary(self):
        """True once the job has ended on its hosts (see /summary in docs/hdf5-layout.md)."""
        return bool(self.summary)

    @property
    def backends(self):
        """The backends of any host, sorted."""
        return sorted({b for h in self._hosts.values() for b in h.backends})

    def _host_values(self, key):
        return [h.attrs[key] for h in self._hosts.values() if key in h.attrs]

    def _one(self, key):
        values = sorted({str(v) for v in self._host_values(key)})
        return ", ".join(values) if values else None

    @property
    def user(self):
        return self._one("user")

    @property
    def command(self):
        return self._one("command")

    @property
    def spec(self):
        """The job's colmet spec (colmet-job start --spec, oarsub -t colmet=SPEC, srun --colmet=SPEC)."""
        return self._one("colmet_spec")

    @property
    def scheduler(self):
        return _scheduler(self._hosts.values())

    @property
    def flags(self):
        """The waste flags the collector raised for the job (its /flags group,
        colmet-collector(8), "Waste flags"): {name: (text, since)} with
        since a UTC pandas Timestamp; {} when none was raised."""
        return dict(self._flags)

    @property
    def context(self):
        """What the scheduler said of the job, {key: value} for the keys it
        gave (see CONTEXT): text as str, counts as int, times as UTC
        pandas Timestamps. host_gpus and host_memory_mib are the first
        host's (sorted by name); a text that differs between hosts is
        joined with ", "."""
        out = {}
        for key in CONTEXT:
            if key in CONTEXT_TEXT:
                value = self._one(key)
                if value:
                    out[key] = value
                continue
            for host in self.hosts:
                raw = self._hosts[host].attrs.get(key)
                if raw is None:
                    continue
                try:
                    number = int(str(raw))
                except ValueError:
                    break
                out[key] = pd.Timestamp(number, unit="s", tz="UTC") if key in CONTEXT_TIMES else number
                break
        return out

    @property
    def exit_status(self):
        """The job's exit status when a sampler recorded one (meta key exit_status), else None."""
        for v in self._host_values("exit_status"):
            try:
                return int(v)
            except (TypeError, ValueError):
                return v
        return None

    @property
    def start(self):
        if "started_ns" in self.summary:
            return timestamp(self.summary["started_ns"])
        firsts = [h.attrs["first_ns"] for h in self._hosts.values() if "first_ns" in h.attrs]
        return timestamp(min(firsts)) if firsts else None

    @property
    def end(self):
        """When the job ended (its last host's job_end), None while it runs."""
        if "ended_ns" in self.summary:
            return timestamp(self.summary["ended_ns"])
        ends = [h.attrs.get("job_end_ns") for h in self._hosts.values()]
        return timestamp(max(ends)) if ends and None not in ends else None

    @property
    def last_data(self):
        lasts = [h.attrs["last_ns"] for h in self._hosts.values() if "last_ns" in h.attrs]
        return timestamp(max(lasts)) if lasts else None

    @property
    def duration_s(self):
        if "duration_s" in self.summary:
            return float(self.summary["duration_s"])
        start, stop = self.start, self.end or self.last_data
        return (stop - start).total_seconds() if start is not None and stop is not None else float("nan")

    @property
    def cpus(self):
        """CPUs allocated over all hosts, None when a host's count is unknown."""
        counts = [h.cpus for h in self._hosts.values()]
        return float(sum(counts)) if counts and None not in counts else None

    @property
    def overlapping_jobs(self):
        """Ids of the jobs that shared a host with this one (all hosts), sorted."""
        return sorted({j for h in self._hosts.values() for j in h.overlapping_jobs})

    @property
    def cgroup_warning(self):
        if self.summary.get("cgroup_warning"):
            return self.summary["cgroup_warning"]
        return self._one("cgroup_warning")

    @property
    def metadata(self):
        """The job's metadata as one dict."""
        return {
            "job_id": self.job_id, "user": self.user, "hosts": self.hosts, "start": self.start,
            "end": self.end, "duration_s": self.duration_s, "exit_status": self.exit_status,
            "scheduler": self.scheduler, "context": self.context, "spec": self.spec, "command": self.command,
            "cpus": self.cpus,
            "overlapping_jobs": self.overlapping_jobs, "cgroup_warning": self.cgroup_warning,
            "layout_version": self.layout_version, "path": self.path,
        }

    # --- data ---------------------------------------------------------
    def frames(self, backend):
        """{host name: MetricFrame} for every host that has the backend."""
        return {name: self.frame(name, backend) for name in self.hosts if backend in self._hosts[name].backends}

    def frame(self, host, backend):
        """All rows of one backend of one host, as a MetricFrame indexed by
        time (UTC). The columns are the metrics of every segment, in order of
        first appearance; a metric absent from a segment is NaN in its rows.
        A metric whose unit or kind changed from one segment to another gets
        a column "<name>@segment_<n>" for the later rows."""
        h = self.host(host)
        if backend not in h.backends:
            raise KeyError(f"host {h.name} of job {self.job_id} has no backend {backend!r} "
                           f"(backends: {', '.join(sorted(h.backends))})")
        b = h.backends[backend]
        segments, times, blocks = [], [], []
        columns, units, kinds = [], {}, {}
        with self._file() as f:
            where = f"/hosts/{h.group}/{b.group}"
            try:
                group = f[where]
                for seg_name in b.segments:
                    sg = group[seg_name]
                    a = sg.attrs
                    names = [str(x) for x in plain(a["names"])] if "names" in a else []
                    seg_units = [str(x) for x in plain(a["units"])] if "units" in a else ["1"] * len(names)
                    seg_kinds = [str(x) for x in plain(a["kinds"])] if "kinds" in a else ["gauge"] * len(names)
                    t = sg["time"][()]
                    v = sg["values"][()]
                    if v.ndim != 2:
                        v = v.reshape(len(t), -1)
                    rows = min(len(t), v.shape[0])
                    t, v = t[:rows].astype(np.int64, copy=False), v[:rows, :len(names)]
                    number = int(seg_name.split("_")[1])
                    cols = []
                    for i, n in enumerate(names):
                        u = seg_units[i] if i < len(seg_units) else "1"
                        k = seg_kinds[i] if i < len(seg_kinds) else "gauge"
                        col = n
                        if n in units and (units[n] != u or kinds[n] != k):
                            col = f"{n}@{seg_name}"
                        if col not in units:
                            columns.append(col)
                            units[col], kinds[col] = u, k
                        cols.append(col)
                    segments.append({
                        "number": number,
                        "start_ns": int(t[0]) if rows else int(plain(a.get("started_ns", 0))),
                        "end_ns": int(t[-1]) if rows else None,
                        "rows": rows,
                        "names": names,
                        "last_status": plain(a["last_status"]) if "last_status" in a else None,
                    })
                    times.append(t)
                    blocks.append((cols, v))
            except (OSError, KeyError, ValueError, RuntimeError) as e:
                raise FileError(f"{self.path}: cannot read {where}: {_reason(e)}") from None
        total = sum(len(t) for t in times)
        if len(blocks) == 1 and blocks[0][0] == columns:
            values = blocks[0][1]
        else:
            values = np.full((total, len(columns)), np.nan)
            col_index = {c: i for i, c in enumerate(columns)}
            row = 0
            for (cols, v), t in zip(blocks, times):
                if cols:
                    values[row:row + len(t), [col_index[c] for c in cols]] = v
                row += len(t)
        t = np.concatenate(times) if times else np.empty(0, dtype=np.int64)
        if t.size > 1 and np.any(np.diff(t) < 0):
            order = np.argsort(t, kind="stable")
            t, values = t[order], values[order]
        index = pd.DatetimeIndex(t.view("M8[ns]"), tz="UTC", name="time")
        frame = MetricFrame(values, index=index, columns=pd.Index(columns), copy=False)
        frame.attrs = {"job_id": self.job_id, "host": h.name, "backend": b.name, "scope": b.scope,
                       "units": units, "kinds": kinds, "segments": segments}
        return frame


def open(path):  # noqa: A001 - colmet.open() is the package's entry point
    """Open one job's HDF5 file. Raises colmet.FileError (missing, not HDF5,
    truncated, not a colmet file) or colmet.LayoutVersionError (a layout
    version this colmet does not read), each with a one-line message."""
    return Job(path)

