"""What colmet-report shows, computed from a Job: the series of every plot
(reduced to a few hundred points per line) and the figures the summary
table and the notes need.

A Digest reads one host's frame of one backend at a time, so a 64-host
day-long job fits in a few hundred MB. The hosts can be split between
processes (Digest(job, hosts=part)) and the parts combined
(Digest.combine); finish() then makes the decisions that need every host.
"""

import contextlib
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from colmet._frame import interval_gaps

BINS = 600   # points per line at most: a plot is about 750 pixels wide


@dataclass
class Line:
    host: str
    x: np.ndarray            # seconds since the job's start
    y: np.ndarray
    style: str = "-"         # "-" or "--"


@dataclass
class Plot:
    id: str
    title: str
    ylabel: str
    kind: str                # how to scale y: "bytes", "bytes/s", "count/s", "plain"
    caption: str = ""
    scope: str = "job"       # "node": the whole node's, not the job's
    styles: list = field(default_factory=list)    # [(style, meaning)] when a plot has two line styles
    lines: list = field(default_factory=list)
    hlines: list = field(default_factory=list)    # [(y, label)]
    gaps: list = field(default_factory=list)      # [(x0, x1)] with no samples
    segments: list = field(default_factory=list)  # x of each new segment (metrics changed)


@dataclass
class HostFigures:
    cpu_time_s: float = np.nan       # last cgroup_cpu usage
    peak_memory: float = np.nan      # max of peak (else current)
    memory_limit: float = np.nan
    nr_periods: float = np.nan       # increase over the job
    nr_throttled: float = np.nan
    rows: int = 0
    gaps: int = 0
    gap_seconds: float = 0.0


@contextlib.contextmanager
def quiet_nan():
    """No 'All-NaN slice' or 'Mean of empty slice' warnings: NaN is expected here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def with_breaks(t, y, gap):
    """(t, y) with a NaN inserted in each gap (gap: the intervals' flags), so
    that a line never bridges one."""
    idx = np.flatnonzero(gap)
    if idx.size == 0:
        return t, y
    mid = t[idx] + (t[idx + 1] - t[idx]) // 2
    return np.insert(t, idx + 1, mid), np.insert(y.astype(float, copy=False), idx + 1, np.nan)


def reduce_line(x, y, how="mean", bins=BINS):
    """At most `bins` points: per run of consecutive points, their mean (a
    rate's mean is the counter's increase over the run) or their maximum (a
    gauge's peak stays visible), at the run's middle. A run that holds a NaN
    is followed by a NaN, so that gaps stay gaps."""
    n = x.size
    if n <= bins:
        return x, y
    k = -(-n // bins)
    m = -(-n // k)
    pad = m * k - n   # repeats of the last point: they change no mean much, no maximum, no NaN test
    xs = np.concatenate([x, np.full(pad, x[-1])]).reshape(m, k)
    ys = np.concatenate([y, np.full(pad, y[-1])]).reshape(m, k)
    with quiet_nan():
        v = np.nanmax(ys, axis=1) if how == "max" else np.nanmean(ys, axis=1)
    has_nan = np.isnan(ys).any(axis=1)
    mid = (xs[:, 0] + xs[:, -1]) / 2
    out_x = np.column_stack([mid, mid]).ravel()
    out_y = np.column_stack([v, np.where(has_nan, np.nan, 0.0)]).ravel()
    keep = np.ones(out_x.size, dtype=bool)
    keep[1::2] = has_nan                 # the NaN only where a run had one
    return out_x[keep], out_y[keep]


def _spans(t, gap, t0):
    idx = np.flatnonzero(gap)
    return [((t[i] - t0) / 1e9, (t[i + 1] - t0) / 1e9) for i in idx]


def merge_spans(spans, limit=400):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    if len(out) > limit:
        out = sorted(sorted(out, key=lambda s: s[1] - s[0], reverse=True)[:limit])
    return out


def _col(frame, name):
    return frame[name].to_numpy(dtype=float) if name in frame.columns else None


def _last_valid(v):
    if v is None:
        return np.nan
    ok = np.flatnonzero(~np.isnan(v))
    return float(v[ok[-1]]) if ok.size else np.nan


def _increase(v):
    if v is None:
        return np.nan
    ok = v[~np.isnan(v)]
    return float(ok[-1] - ok[0]) if ok.size >= 2 else np.nan


def _perf_label(unit):
    """y label and scaling of a perf event's rate, from its unit."""
    if unit in ("1", ""):
        return "events per second", "count/s"
    if unit == "s":
        return "seconds per second (CPUs)", "plain"
    return f"{unit} per second", "plain"


class Digest:
    """Everything the report draws and says, from one pass over the file
    (over the given hosts only, when hosts is given)."""

    def __init__(self, job, hosts=None):
        self.job = job
        self.t0 = job.start.value if job.start is not None else 0
        self.host_names = list(hosts) if hosts is not None else job.hosts
        self.hosts = {h: HostFigures() for h in self.host_names}
        self.plots = {}                # id -> Plot, in order of creation
        self.segment_changes = {}      # backend -> number of new segments (all hosts)
        self.unsupported = {}          # backend -> set of last_status texts
        self.node_backends = set()
        self.totals = {}               # I/O metric -> sum over hosts of its last value
        self.ipc = []                  # per host IPC over the job
        self.gpus = []                 # (host, GPU index, mean utilisation, peak job memory, job's energy J)
        with job.reading():
            self._run()

    # --- helpers -------------------------------------------------------
    def _plot(self, plot_id, *args, **kwargs):
        if plot_id not in self.plots:
            self.plots[plot_id] = Plot(plot_id, *args, **kwargs)
        return self.plots[plot_id]

    def _add(self, plot, host, t, gap, y, how="mean", style="-"):
        tb, yb = with_breaks(t, y, gap)
        x, yr = reduce_line((tb - self.t0) / 1e9, yb, how)
        plot.lines.append(Line(host, x, yr, style))
        plot.gaps.extend(_spans(t, gap, self.t0))

    def _frames(self, backend):
        """(host, frame, times, gap flags) of each host having the backend, one at a time."""
        for host in self.host_names:
            if backend not in self.job.host(host).backends:
                continue
            frame = self.job.frame(host, backend)
            t = frame.index.asi8
            _, gap = interval_gaps(t)
            fig = self.hosts[host]
            if fig.rows == 0:        # the host's timing: from its first backend read (cgroup_cpu if any)
                dt = np.diff(t) / 1e9
                fig.rows, fig.gaps = t.size, int(gap.sum())
                fig.gap_seconds = float(dt[gap].sum()) if gap.any() else 0.0
            for seg in frame.segments:
                if seg.get("last_status"):
                    self.unsupported.setdefault(backend, set()).add(seg["last_status"])
            if len(frame.segments) > 1:
                self.segment_changes[backend] = self.segment_changes.get(backend, 0) + len(frame.segments) - 1
            if frame.attrs.get("scope") == "node":
                self.node_backends.add(backend)
            yield host, frame, t, gap

    # --- the pass --------------------------------------------------------
    def _run(self):
        backends = {b for h in self.host_names for b in self.job.host(h).backends}
        if "cgroup_cpu" in backends:
            self._cpu()
        if "cgroup_memory" in backends:
            self._memory()
        if "cgroup_io" in backends:
            self._io("cgroup_io", "block_io", "Block I/O", "read_bytes", "write_bytes",
                     "bytes read from and written to block devices by the job's cgroup")
        if "processes" in backends:
            self._io("processes", "file_io", "File I/O (read/write calls)", "read_chars", "write_chars",
                     "bytes passed to read and write calls by the job's processes, cache hits included")
        if "perfhw" in backends:
            self._perfhw()
        if "rapl" in backends:
            self._power()
        if "temperature" in backends:
            self._temperature()
        if "gpu" in backends:
            self._gpu()
        if "infiniband" in backends:
            self._sum_io("infiniband", "network", "InfiniBand / Omni-Path", r"\.rcv_bytes$", r"\.xmit_bytes$",
                         "received", "sent")
        if "lustre" in backends:
            self._sum_io("lustre", "lustre", "Lustre client I/O", r"(^|\.)read_bytes$", r"(^|\.)write_bytes$",
                         "read", "written")

    def _cpu(self):
        plot = self._plot("cpu", "CPU use", "CPUs busy", "plain",
                          "CPU time of the job's cgroup per second of wall time (1 = one CPU busy).")
        thr = self._plot("throttling", "CPU throttling", "% of periods throttled", "plain",
                         "Share of the CPU quota's periods in which the job's cgroup was throttled.")
        for host, frame, t, gap in self._frames("cgroup_cpu"):
            fig = self.hosts[host]
            fig.cpu_time_s = _last_valid(_col(frame, "usage"))
            fig.nr_periods = _increase(_col(frame, "nr_periods"))
            fig.nr_throttled = _increase(_col(frame, "nr_throttled"))
            rates = frame.rates(["usage", "nr_periods", "nr_throttled"])
            if "usage" in rates.columns:
                self._add(plot, host, t, gap, rates["usage"].to_numpy())
            if "nr_periods" in rates.columns and "nr_throttled" in rates.columns:
                with np.errstate(invalid="ignore", divide="ignore"):
                    share = 100 * rates["nr_throttled"].to_numpy() / rates["nr_periods"].to_numpy()
                share[~np.isfinite(share)] = np.nan
                self._add(thr, host, t, gap, share)

    def _memory(self):
        plot = self._plot("memory", "Memory", "memory", "bytes",
                          "Memory charged to the job's cgroup (current; the highest value of each stretch of "
                          "samples a pixel wide).")
        for host, frame, t, gap in self._frames("cgroup_memory"):
            fig = self.hosts[host]
            current, peak = _col(frame, "current"), _col(frame, "peak")
            with quiet_nan():
                p = np.nanmax(peak) if peak is not None and peak.size else np.nan
                if np.isnan(p) and current is not None and current.size:
                    p = np.nanmax(current)
                # The cgroup's limit (NaN: none); the lowest, should it change.
                limit = _col(frame, "limit")
                if limit is not None and limit.size:
                    fig.memory_limit = float(np.nanmin(limit))
            fig.peak_memory = float(p)
            if current is not None:
                self._add(plot, host, t, gap, current, how="max")

    def _io(self, backend, plot_id, title, read, write, caption):
        plot = self._plot(plot_id, title, "per second", "bytes/s", f"Rate of {caption}.",
                          styles=[("-", "read"), ("--", "written")])
        for host, frame, t, gap in self._frames(backend):
            rates = frame.rates([read, write])
            for name, style in ((read, "-"), (write, "--")):
                last = _last_valid(_col(frame, name))
                if not np.isnan(last):
                    self.totals[name] = self.totals.get(name, 0.0) + last
                if name in rates.columns:
                    self._add(plot, host, t, gap, rates[name].to_numpy(), style=style)

    def _perfhw(self):
        for host, frame, t, gap in self._frames("perfhw"):
            kinds, units = frame.attrs.get("kinds", {}), frame.attrs.get("units", {})
            rates = frame.rates()
            segments = [(s["start_ns"] - self.t0) / 1e9 for s in frame.segments[1:]]
            touched = []
            for c in (c for c in frame.columns if kinds.get(c) == "counter"):
                r = rates[c].to_numpy()
                if np.isnan(r).all():
                    continue
                ylabel, kind = _perf_label(units.get(c, "1"))
                plot = self._plot(f"perfhw_{re.sub(r'[^A-Za-z0-9_]+', '_', c)}", f"perf event {c}", ylabel, kind,
                                  f"Rate of the perf event {c} in the job's cgroup (scaled for multiplexing); "
                                  "dashed vertical lines: the events changed.")
                self._add(plot, host, t, gap, r)
                touched.append(plot)
            cycles = next((c for c in ("cpu_cycles", "cycles") if c in rates.columns), None)
            if "instructions" in rates.columns and cycles:
                with np.errstate(invalid="ignore", divide="ignore"):
                    ipc = rates["instructions"].to_numpy() / rates[cycles].to_numpy()
                ipc[~np.isfinite(ipc)] = np.nan
                if not np.isnan(ipc).all():
                    plot = self._plot("ipc", "Instructions per cycle (IPC)", "IPC", "plain",
                                      "perfhw instructions / cycles over each sampling interval.")
                    self._add(plot, host, t, gap, ipc)
                    touched.append(plot)
                    cyc = _increase(_col(frame, cycles))
                    if cyc > 0 and len(frame.segments) == 1:
                        self.ipc.append(_increase(_col(frame, "instructions")) / cyc)
            for plot in touched:
                plot.segments.extend(segments)

    def _power(self):
        plot = self._plot("power", "Power (RAPL)", "W", "plain",
                          "The RAPL energy counters of the CPU packages and DRAM (psys when neither exists) per "
                          "second: the whole node's, and (dashed) the job's share of it (backend energy: the idle "
                          "baseline by allocated CPUs, the rest by CPU time).", scope="node")
        shared = False
        for backend, style in (("rapl", "-"), ("energy", "--")):
            for host, frame, t, gap in self._frames(backend):
                cols = [c for c in frame.columns if c.endswith("_package") or c.endswith("_dram")]
                if not cols:
                    cols = [c for c in frame.columns if c.startswith("psys")]
                if cols:
                    power = frame.rates(cols).to_numpy().sum(axis=1)   # NaN when a domain is NaN: unknown
                    self._add(plot, host, t, gap, power, style=style)
                    shared = shared or backend == "energy"
        if shared and not plot.styles:
            plot.styles = [("-", "the node"), ("--", "the job's share")]

    def _gpu(self):
        styles = ["-", "--", ":", "-."]
        util = self._plot("gpu", "GPU utilisation", "%", "plain",
                          "NVML's utilisation of each of the job's GPUs: the share of time a kernel ran on it "
                          "(one line style per GPU).")
        mem = self._plot("gpu_memory", "GPU memory of the job's processes", "bytes", "bytes",
                         "The GPU memory the job's own processes held, from NVML's list of compute processes "
                         "(one line style per GPU).")
        for host, frame, t, gap in self._frames("gpu"):
            for col in frame.columns:
                m = re.fullmatch(r"gpu(\d+)_utilisation", col)
                if not m:
                    continue
                index = int(m.group(1))
                style = styles[index % len(styles)]
                self._add(util, host, t, gap, _col(frame, col) * 100, style=style)
                job_memory = _col(frame, f"gpu{index}_job_memory")
                if job_memory is not None:
                    self._add(mem, host, t, gap, job_memory, how="max", style=style)
                for plot in (util, mem):
                    if (style, f"GPU {index}") not in plot.styles:
                        plot.styles.append((style, f"GPU {index}"))
                busy, energy = _col(frame, col), _col(frame, f"gpu{index}_job_energy")
                with quiet_nan():
                    self.gpus.append((host, index, float(np.nanmean(busy)) if busy.size else np.nan,
                                      float(np.nanmax(job_memory)) if job_memory is not None and job_memory.size
                                      else np.nan,
                                      _last_valid(energy) if energy is not None else np.nan))

    def _temperature(self):
        plot = self._plot("temperature", "Temperature (hottest sensor)", "°C", "plain",
                          "The highest of the node's thermal zone and hwmon temperatures.", scope="node")
        for host, frame, t, gap in self._frames("temperature"):
            values = frame.to_numpy(dtype=float)
            with quiet_nan():
                hottest = np.nanmax(values, axis=1) if values.shape[1] else np.full(t.size, np.nan)
            self._add(plot, host, t, gap, hottest, how="max")

    def _sum_io(self, backend, plot_id, title, in_re, out_re, in_label, out_label):
        plot = self._plot(plot_id, title, "per second", "bytes/s",
                          f"Bytes {in_label} and {out_label} per second, summed over the node's ports or mounts.",
                          scope="node", styles=[("-", in_label), ("--", out_label)])
        for host, frame, t, gap in self._frames(backend):
            rates = frame.rates()
            for pattern, style in ((in_re, "-"), (out_re, "--")):
                cols = [c for c in rates.columns if re.search(pattern, c)]
                if cols:
                    self._add(plot, host, t, gap, rates[cols].to_numpy().sum(axis=1), style=style)

    # --- every host together ---------------------------------------------
    @classmethod
    def combine(cls, job, parts):
        """One Digest from Digests of disjoint sets of hosts (in host order)."""
        out = parts[0]
        for p in parts[1:]:
            out.host_names += p.host_names
            out.hosts.update(p.hosts)
            for pid, plot in p.plots.items():
                if pid in out.plots:
                    mine = out.plots[pid]
                    mine.lines += plot.lines
                    mine.gaps += plot.gaps
                    mine.segments += plot.segments
                else:
                    out.plots[pid] = plot
            for b, n in p.segment_changes.items():
                out.segment_changes[b] = out.segment_changes.get(b, 0) + n
            for b, s in p.unsupported.items():
                out.unsupported.setdefault(b, set()).update(s)
            out.node_backends |= p.node_backends
            for k, v in p.totals.items():
                out.totals[k] = out.totals.get(k, 0.0) + v
            out.ipc += p.ipc
            out.gpus += p.gpus
        return out

    def finish(self):
        """The decisions that need every host: reference lines, merged gap
        spans, which plots to keep. Returns self."""
        cpus = {self.job.host(h).cpus for h in self.host_names}
        if "cpu" in self.plots and len(cpus) == 1 and None not in cpus:
            n = cpus.pop()
            self.plots["cpu"].hlines.append(
                (n, f"{n:g} CPUs allocated" + (" per host" if len(self.host_names) > 1 else "")))
        limits = {f.memory_limit for f in self.hosts.values() if not np.isnan(f.memory_limit)}
        if "memory" in self.plots and len(limits) == 1:
            self.plots["memory"].hlines.append((limits.pop(), "cgroup limit"))
        if not any(f.nr_throttled > 0 for f in self.hosts.values()):
            self.plots.pop("throttling", None)
        order = {h: i for i, h in enumerate(self.job.hosts)}
        for plot in self.plots.values():
            plot.lines.sort(key=lambda line: order.get(line.host, 0))
            plot.gaps = merge_spans(plot.gaps)
            plot.segments = sorted({round(x, 3) for x in plot.segments})
        self.plot_list = [p for p in self.plots.values() if p.lines]
        return self

    # figures of every host
    @property
    def gap_count(self):
        return sum(f.gaps for f in self.hosts.values())

    @property
    def gap_seconds(self):
        return sum(f.gap_seconds for f in self.hosts.values())
