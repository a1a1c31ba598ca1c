"""colmet.open, MetricFrame and colmet.open_many on synthetic files written
in the collector's layout (synth.py). No root, no binaries."""

import os
import shutil
import subprocess

import h5py
import numpy as np
import pandas as pd
import pytest

import colmet
import synth
from colmet import _capi, _many
from conftest import report_command, report_env

T0 = 1_800_000_000_000_000_000
NS = 1_000_000_000


def one_host(path, backends, attrs=None, summary=None, host="node-1", job_id="42"):
    synth.write_job(path, job_id, {host: {"attrs": attrs or {"user": "alice", "cpus": "4"},
                                          "backends": backends}}, summary=summary)
    return path


def test_frame_is_indexed_by_time_with_units_and_kinds(tmp_path):
    t = synth.times(T0, 5)
    values = np.column_stack([np.arange(5.0), np.arange(5.0) * 10])
    path = one_host(tmp_path / "j.h5", {"cgroup_memory": synth.backend("job", synth.segment(
        ["current", "major_faults"], ["B", "1"], ["gauge", "counter"], t, values))})
    job = colmet.open(path)
    df = job.frame("node-1", "cgroup_memory")
    assert isinstance(df, colmet.MetricFrame) and isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["current", "major_faults"]
    assert df.index.tz is not None and df.index.name == "time"
    assert list(df.index.asi8) == list(t)
    np.testing.assert_array_equal(df.to_numpy(), values)
    assert df.units == {"current": "B", "major_faults": "1"}
    assert df.kinds == {"current": "gauge", "major_faults": "counter"}
    assert df.attrs["scope"] == "job" and df.attrs["host"] == "node-1"
    # host["backend"] is the same frame; units survive column selection
    pd.testing.assert_frame_equal(job["node-1"]["cgroup_memory"], df)
    assert df[["current"]].units["current"] == "B"


def test_rates_are_the_counter_differences_per_second(tmp_path):
    rng = np.random.default_rng(1)
    t = T0 + np.cumsum(rng.integers(900, 1100, 50)) * 1_000_000    # jittered ~1 s period
    usage = np.cumsum(rng.random(50))
    current = rng.random(50) * 1e9
    path = one_host(tmp_path / "j.h5", {"cgroup_cpu": synth.backend("job", synth.segment(
        ["usage", "current"], ["s", "B"], ["counter", "gauge"], t, np.column_stack([usage, current])))})
    rates = colmet.open(path).frame("node-1", "cgroup_cpu").rates()
    assert list(rates.columns) == ["usage"]            # gauges are not rates
    assert rates.units == {"usage": "1"}               # CPU seconds per second: cores
    expected = np.diff(usage) / (np.diff(t) / 1e9)
    assert np.isnan(rates["usage"].iloc[0])
    np.testing.assert_allclose(rates["usage"].to_numpy()[1:], expected, rtol=1e-12)


def test_rates_are_nan_across_nan_values_resets_gaps_and_segments(tmp_path):
    t = synth.times(T0, 40)
    t = np.delete(t, range(15, 19))                    # 4 samples missing: a gap before row 15
    n = t.size
    a = np.arange(n, dtype=float) * 2.0
    a[5] = np.nan                                      # a value that could not be read
    a[10:] -= 100.0                                    # reset: the counter went down at row 10
    seg0 = synth.segment(["a", "b"], ["J", "B"], ["counter", "counter"], t[:25], np.column_stack([a, a])[:25])
    seg1 = synth.segment(["a", "c"], ["J", "B"], ["counter", "counter"], t[25:],
                         np.column_stack([a[25:] - a[25], a[25:]]))
    path = one_host(tmp_path / "j.h5", {"perfhw": synth.backend("job", seg0, seg1)})
    df = colmet.open(path).frame("node-1", "perfhw")
    assert list(df.columns) == ["a", "b", "c"]         # union of the segments' metrics
    assert np.isnan(df["c"].iloc[:25]).all() and np.isnan(df["b"].iloc[25:]).all()
    assert [s["number"] for s in df.segments] == [0, 1]
    assert list(df.segment_of_rows()) == [0] * 25 + [1] * (n - 25)
    r = df.rates()
    assert r.units["a"] == "W"
    nan_rows = {0, 5, 6, 10, 15, 25}                   # first, NaN value (2 intervals), reset, gap, new segment
    for i in range(n):
        if i in nan_rows:
            assert np.isnan(r["a"].iloc[i]), i
        else:
            assert r["a"].iloc[i] == pytest.approx(2.0), i
    gaps = df.gaps()
    assert len(gaps) == 1
    assert gaps["start"].iloc[0].value == t[14] and gaps["end"].iloc[0].value == t[15]
    assert gaps["missing"].iloc[0] == 4 and gaps["seconds"].iloc[0] == pytest.approx(5.0)
    filled = df.with_gaps()
    assert len(filled) == n + 1
    inside = filled[(filled.index.asi8 > t[14]) & (filled.index.asi8 < t[15])]
    assert len(inside) == 1 and inside.isna().all(axis=None)
    assert filled.units == df.units


def test_a_metric_whose_unit_changed_gets_its_own_column(tmp_path):
    t = synth.times(T0, 4)
    seg0 = synth.segment(["x"], ["s"], ["counter"], t[:2], [[1.0], [2.0]])
    seg1 = synth.segment(["x"], ["ns"], ["counter"], t[2:], [[5.0], [9.0]])
    path = one_host(tmp_path / "j.h5", {"perfhw": synth.backend("job", seg0, seg1)})
    df = colmet.open(path).frame("node-1", "perfhw")
    assert list(df.columns) == ["x", "x@segment_1"]
    assert df.units == {"x": "s", "x@segment_1": "ns"}


def test_job_metadata_and_summary(tmp_path):
    t = synth.times(T0, 3)
    b = {"cgroup_cpu": synth.backend("job", synth.segment(["usage"], ["s"], ["counter"], t, [[0.0], [1.0], [2.0]]))}
    hosts = {
        "n1": {"attrs": {"user": "alice", "cpus": "8", "cgroup": "/oar/alice_42", "colmet_spec": "perfhw,period=1",
                         "exit_status": "0", "first_ns": int(t[0]), "last_ns": int(t[-1]), "job_end_ns": int(t[-1]),
                         "overlapping_jobs": ["43", "44"], "samples_received": 3, "samples_lost": 1},
               "backends": b},
        "n2": {"attrs": {"user": "alice", "cpus": "8", "cgroup": "/oar/alice_42", "first_ns": int(t[0]),
                         "last_ns": int(t[-1]), "job_end_ns": int(t[-1]), "samples_received": 3},
               "backends": b},
    }
    synth.write_job(tmp_path / "j.h5", "42", hosts,
                    summary={"duration_s": 2.0, "cpu_time_s": 4.0, "started_ns": int(t[0]), "ended_ns": int(t[-1])})
    job = colmet.open(tmp_path / "j.h5")
    assert job.job_id == "42" and job.layout_version == 1
    assert job.hosts == ["n1", "n2"] and job.user == "alice"
    assert job.scheduler == "OAR" and job.spec == "perfhw,period=1" and job.exit_status == 0
    assert job.overlapping_jobs == ["43", "44"] and job.host("n1").overlapping_jobs == ["43", "44"]
    assert job.host("n2").overlapping_jobs == []
    assert job.cpus == 16.0 and job.start.value == t[0] and job.end.value == t[-1]
    assert job.summary["cpu_time_s"] == 4.0 and job.has_summary
    assert job.host("n1").samples_lost == 1
    assert set(job.frames("cgroup_cpu")) == {"n1", "n2"}
    with pytest.raises(KeyError, match="no host 'n3'"):
        job.host("n3")
    with pytest.raises(KeyError, match="no backend 'rapl'"):
        job.frame("n1", "rapl")


def test_a_job_still_running_has_no_summary(tmp_path):
    t = synth.times(T0, 3)
    path = one_host(tmp_path / "j.h5", {"cgroup_cpu": synth.backend("job", synth.segment(
        ["usage"], ["s"], ["counter"], t, [[0.0], [1.0], [2.0]]))},
        attrs={"first_ns": int(t[0]), "last_ns": int(t[-1])})
    job = colmet.open(path)
    assert not job.has_summary and job.summary == {}
    assert job.end is None and job.duration_s == pytest.approx(2.0)


def _truncated(tmp_path, source):
    data = open(source, "rb").read()
    path = tmp_path / "truncated.h5"
    path.write_bytes(data[:len(data) // 2])
    return path


def _other_version(tmp_path, source, version=2):
    path = tmp_path / "v2.h5"
    shutil.copy(source, path)
    with h5py.File(path, "r+") as f:
        f.attrs.modify("colmet_layout_version", np.int32(version))
    return path


@pytest.fixture
def small_job(tmp_path):
    t = synth.times(T0, 30)
    rng = np.random.default_rng(3)
    backends = synth.standard_backends(t, rng)
    synth.write_job(tmp_path / "small.h5", "small", {"n1": {"attrs": {"user": "bob", "cpus": "4"},
                                                            "backends": backends}},
                    summary=synth.summary_for([backends], t[0], t[-1], 4, 30))
    return tmp_path / "small.h5"


def test_unreadable_files_raise_one_line_errors(tmp_path, small_job):
    with pytest.raises(colmet.LayoutVersionError) as e:
        colmet.open(_other_version(tmp_path, small_job, 7))
    assert "layout version 7 is not supported" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(colmet.FileError) as e:
        colmet.open(_truncated(tmp_path, small_job))
    assert "truncated" in str(e.value) and "\n" not in str(e.value)
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f["x"] = 1
    with pytest.raises(colmet.FileError, match="not a colmet job file"):
        colmet.open(plain)
    with pytest.raises(colmet.FileError, match="no such file"):
        colmet.open(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("hello\n")
    with pytest.raises(colmet.FileError, match="not a readable HDF5 file"):
        colmet.open(tmp_path / "text.h5")


@pytest.mark.parametrize("kind", ["truncated", "version"])
def test_colmet_report_says_one_line_and_no_traceback(tmp_path, small_job, kind):
    bad = _truncated(tmp_path, small_job) if kind == "truncated" else _other_version(tmp_path, small_job, 9)
    r = subprocess.run(report_command() + [str(bad), "-o", str(tmp_path / "r.html")], env=report_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 65
    assert "Traceback" not in r.stderr and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"colmet-report: {bad}: ")
    assert ("truncated" in lines[0]) if kind == "truncated" else ("layout version 9 is not supported" in lines[0])
    assert not (tmp_path / "r.html").exists()
    r = subprocess.run(report_command() + [str(tmp_path / "none.h5")], env=report_env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 66 and r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr


def test_open_many_lists_every_job_with_its_summary(tmp_path):
    rng = np.random.default_rng(5)
    jobs_dir = tmp_path / "jobs"
    jobs_dir.mkdir()
    for i in range(4):
        t = synth.times(T0 + i * NS, 20)
        backends = synth.standard_backends(t, rng, busy=0.5 + i, node=False)
        synth.write_job(jobs_dir / f"{i}.h5", f"job-{i}", {"n1": {"attrs": {"user": f"u{i}", "cpus": "4"},
                                                                     "backends": backends}},
                        summary=synth.summary_for([backends], t[0], t[-1], 4, 20) if i else None)
    (jobs_dir / "broken.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    _other_version(tmp_path, jobs_dir / "1.h5", 3).rename(jobs_dir / "v3.h5")
    many = colmet.open_many(jobs_dir)
    assert list(many["path"].map(os.path.basename)) == ["0.h5", "1.h5", "2.h5", "3.h5", "broken.h5", "v3.h5"]
    ok = many[many["error"].isna()]
    assert list(ok["job_id"]) == ["job-0", "job-1", "job-2", "job-3"]
    assert list(ok["user"]) == ["u0", "u1", "u2", "u3"]
    assert list(ok["has_summary"]) == [False, True, True, True]
    for i in (1, 2, 3):
        job = colmet.open(jobs_dir / f"{i}.h5")
        row = many.iloc[i]
        for key in ("cpu_time_s", "cpu_efficiency", "peak_memory_bytes", "duration_s", "read_bytes"):
            assert row[key] == pytest.approx(job.summary[key]), key
        assert row["start"] == job.start and row["hosts"] == 1
        assert row["cpus_used"] == pytest.approx(job.summary["cpu_time_s"] / job.summary["duration_s"])
    assert np.isnan(many.iloc[0]["cpu_time_s"])
    assert "not a readable HDF5 file" in many.iloc[4]["error"]
    assert "layout version 3 is not supported" in many.iloc[5]["error"]
    # a glob and the parallel path give the same rows
    pd.testing.assert_frame_equal(colmet.open_many(str(jobs_dir / "*.h5"), processes=2), many)
    # the HDF5 C calls (_capi) read what h5py reads
    paths = _many._paths(jobs_dir)
    if _capi.reader() is None:
        pytest.skip("ctypes cannot reach h5py's HDF5 library here: only h5py's path was tested")
    pd.testing.assert_frame_equal(pd.DataFrame.from_records(_many._rows(paths, fast=True)),
                                  pd.DataFrame.from_records(_many._rows(paths, fast=False)))
    wasted = many[many.cpu_efficiency < 0.45]   # job-1 keeps 1.5 of its 4 CPUs busy
    assert list(wasted.job_id) == ["job-1"]


def test_every_interval_of_a_stretch_of_sparse_samples_is_a_gap():
    from colmet._frame import interval_gaps
    # 1 s sampling; from 2 s on only every 4th sample arrived, then 1 s again
    t = np.array([0, 1, 2, 6, 10, 14, 15, 16, 17, 18, 19, 20], dtype=np.int64) * NS
    dt, gap = interval_gaps(t)
    assert list(np.flatnonzero(gap)) == [2, 3, 4]
    # jitter, a short first interval (job_start) and a short last one (job_end) are no gaps
    rng = np.random.default_rng(0)
    t = np.arange(200, dtype=np.int64) * NS + rng.integers(-20, 20, 200) * 1_000_000
    t[0] += NS // 2
    t[-1] -= NS // 3
    assert not interval_gaps(t)[1].any()


def test_a_late_sample_is_not_a_gap():
    from colmet._frame import interval_gaps
    t = np.arange(20, dtype=np.int64) * NS
    t[8] += int(0.7 * NS)          # sample 8 came 0.7 period late: intervals 1.7 and 0.3
    t[14] -= int(0.6 * NS)         # sample 14 came 0.6 period early: intervals 0.4 and 1.6
    assert not interval_gaps(t)[1].any()
    t = np.delete(t, [4])           # a sample really missing: interval of 2 periods between two regular ones
    assert list(np.flatnonzero(interval_gaps(t)[1])) == [3]
