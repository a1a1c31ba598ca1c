"""MetricFrame: the rows of one backend of one host, indexed by time, with
units and kinds, as counters or as per-second rates.

The rules (also in colmet-report(1) and docs/hdf5-layout.md, *Reading the files*):

- A row is one stored sample; NaN is a value that could not be read, never 0.
- A *gap* is an interval between two consecutive rows longer than
  GAP_FACTOR times the local sampling interval (the median of the
  GAP_WINDOW intervals around it): samples are missing there (lost on the
  way, or not stored after a collector crash). Except when the interval and
  one next to it last less than LATE_PAIR local intervals together: that is
  a sample taken late or early (the sampler aligns samples to its period),
  not a missing one.
- rates(): for each counter, (v[i] - v[i-1]) / (t[i] - t[i-1]) in units per
  second. It is NaN for the first row, when either value is NaN, across a
  gap, across a segment boundary (the backend's metrics changed, e.g. a
  perfhw reconfiguration, and the new counts start from zero), and when the
  counter went down (it was reset, e.g. by a restarted sampler: the
  increase over that interval is unknown).
"""

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

GAP_FACTOR = 1.5
GAP_WINDOW = 9
LATE_PAIR = 2.25

# The unit of a counter's rate: "s" per second is dimensionless (CPU seconds
# per second are cores), J per second are W.
_RATE_UNITS = {"s": "1", "J": "W", "1": "1/s"}


def rate_unit(unit):
    """The unit of the per-second rate of a counter in `unit`."""
    return _RATE_UNITS.get(unit, f"{unit}/s")


def local_interval(dt, i):
    """The sampling interval around interval i: the median of the
    GAP_WINDOW intervals centred on it."""
    half = GAP_WINDOW // 2
    return float(np.median(dt[max(0, i - half):i + half + 1]))


def interval_gaps(time_ns):
    """For sorted int64 times (ns), the intervals' lengths in seconds and
    whether each is a gap (both arrays of len(time_ns) - 1)."""
    t = np.asarray(time_ns, dtype=np.int64)
    if t.size < 2:
        return np.empty(0), np.zeros(0, dtype=bool)
    dt = np.diff(t) / 1e9
    gap = np.zeros(dt.size, dtype=bool)
    if dt.size < 3:
        return dt, gap
    # Only an interval longer than GAP_FACTOR times the shortest around it can
    # be a gap: the local median is computed for those few alone.
    half = GAP_WINDOW // 2
    padded = np.concatenate([np.full(half, np.inf), dt, np.full(half, np.inf)])
    shortest = sliding_window_view(padded, GAP_WINDOW).min(axis=1)
    for i in np.flatnonzero(dt > GAP_FACTOR * shortest):
        p = local_interval(dt, i)
        if dt[i] <= GAP_FACTOR * p:
            continue
        # A sample late (or early) by more than half a period makes one long
        # and one short interval that add up to two periods: nothing is missing.
        pairs = [dt[i] + dt[j] for j in (i - 1, i + 1) if 0 <= j < dt.size]
        gap[i] = min(pairs) > LATE_PAIR * p
    return dt, gap


class MetricFrame(pd.DataFrame):
    """A pandas DataFrame of one backend of one host: one row per sample,
    indexed by time (UTC), one column per metric.

    attrs: host, backend, scope ("job" or "node"), units and kinds (dicts
    column -> unit, column -> "counter"/"gauge"/"rate"), segments (list of
    dicts: number, start and end times, names, last_status), job_id.
    """

    # Everything rides in .attrs, which pandas carries through operations.
    _metadata = []

    @property
    def _constructor(self):
        return MetricFrame

    @property
    def units(self):
        """Column name -> unit (SI-style: s, B, J, degC, 1, ...)."""
        return dict(self.attrs.get("units", {}))

    @property
    def kinds(self):
        """Column name -> "counter" (cumulative), "gauge" (instantaneous) or "rate"."""
        return dict(self.attrs.get("kinds", {}))

    @property
    def counters(self):
        """The counter columns, in order."""
        kinds = self.attrs.get("kinds", {})
        return [c for c in self.columns if kinds.get(c) == "counter"]

    @property
    def segments(self):
        """The segments the rows come from (see docs/hdf5-layout.md)."""
        return list(self.attrs.get("segments", []))

    def segment_of_rows(self):
        """The segment number of each row (from the segments' start times)."""
        segs = self.attrs.get("segments", [])
        t = self.index.asi8
        if len(segs) <= 1:
            return np.full(t.size, segs[0]["number"] if segs else 0, dtype=np.int64)
        starts = np.array([s["start_ns"] for s in segs], dtype=np.int64)
        numbers = np.array([s["number"] for s in segs], dtype=np.int64)
        pos = np.searchsorted(starts, t, side="right") - 1
        return numbers[np.clip(pos, 0, len(segs) - 1)]

    def _interval_ok(self):
        """For each interval between consecutive rows: usable for a rate."""
        t = self.index.asi8
        dt, gap = interval_gaps(t)
        seg = self.segment_of_rows()
        return (dt > 0) & ~gap & (seg[1:] == seg[:-1]), dt

    def gaps(self):
        """The gaps (missing samples): one row per gap with the times of the
        rows before and after it, its length in seconds, and an estimate of
        the number of samples missing."""
        t = self.index.asi8
        dt, gap = interval_gaps(t)
        idx = np.flatnonzero(gap)
        if idx.size:
            local = np.array([local_interval(dt, i) for i in idx])
            missing = np.maximum(np.rint(dt[idx] / local).astype(np.int64) - 1, 1)
        else:
            missing = np.zeros(0, dtype=np.int64)
        return pd.DataFrame({
            "start": pd.to_datetime(t[idx], unit="ns", utc=True),
            "end": pd.to_datetime(t[idx + 1], unit="ns", utc=True),
            "seconds": dt[idx],
            "missing": missing,
        })

    def with_gaps(self):
        """A copy with one all-NaN row inside each gap (one local sampling
        interval after the row before it), so that plots and resampling show
        the gap as missing data, never as a straight line."""
        t = self.index.asi8
        dt, gap = interval_gaps(t)
        idx = np.flatnonzero(gap)
        if idx.size == 0:
            return self.copy()
        local = np.array([local_interval(dt, i) for i in idx])
        extra_t = t[idx] + np.minimum(local * 1e9, dt[idx] * 1e9 / 2).astype(np.int64)
        values = self.to_numpy(dtype=float)
        all_t = np.concatenate([t, extra_t])
        all_v = np.concatenate([values, np.full((idx.size, values.shape[1]), np.nan)])
        order = np.argsort(all_t, kind="stable")
        out = MetricFrame(all_v[order], index=pd.DatetimeIndex(pd.to_datetime(all_t[order], unit="ns", utc=True),
                                                                name=self.index.name),
                          columns=self.columns)
        out.attrs = dict(self.attrs)
        return out

    def rates(self, columns=None):
        """The counters as per-second rates (see the module's rules): a
        MetricFrame with the same index, one column per counter (or per
        counter among `columns`), units per second (s/s -> "1", that is CPU
        cores for cgroup_cpu usage; J/s -> W)."""
        cols = self.counters
        if columns is not None:
            wanted = set(columns)
            cols = [c for c in cols if c in wanted]
        t = self.index.asi8
        out = np.full((t.size, len(cols)), np.nan)
        if t.size >= 2 and cols:
            ok, dt = self._interval_ok()
            position = {c: i for i, c in enumerate(self.columns)}
            v = self.to_numpy(dtype=float)[:, [position[c] for c in cols]]
            d = np.diff(v, axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                r = d / dt[:, None]
                r[d < 0] = np.nan
            r[~ok] = np.nan
            out[1:] = r
        frame = MetricFrame(out, index=self.index, columns=pd.Index(cols), copy=False)
        units = self.attrs.get("units", {})
        frame.attrs = dict(self.attrs)
        frame.attrs["units"] = {c: rate_unit(units.get(c, "1")) for c in cols}
        frame.attrs["kinds"] = {c: "rate" for c in cols}
        return frame
