"""colmet-report on synthetic files: which plots, which notes (each with
its rule), the node scope, self-containment, --png, and the line reduction
that keeps gaps and peaks. No root, no binaries, no browser."""

import base64
import html
import io
import os
import re
import subprocess

import h5py
import numpy as np
import pytest

import colmet
import synth
from colmet._digest import reduce_line
from colmet.report import make_report
from conftest import report_command, report_env

T0 = 1_800_000_000_000_000_000
NS = 1_000_000_000


def three_host_job(path, lost=0, throttle=False, limit=None, gap=False):
    """Three hosts, 120 samples at 1 s: n1 and n2 half busy, n3 idle; perfhw
    with instructions and cycles; RAPL and temperatures; n3 shared with
    job 77."""
    rng = np.random.default_rng(11)
    t = synth.times(T0, 120)
    if gap:
        t = np.delete(t, range(60, 70))
    hosts, per_host = {}, []
    for name, busy in (("n1", 2.5), ("n2", 2.0), ("n3", 0.05)):
        b = synth.standard_backends(t, rng, cpus=4, busy=busy, memory=1 << 30, memory_limit=limit)
        if throttle:
            cpu = b["cgroup_cpu"]["segments"][0]["values"]
            cpu[:, 4] = cpu[:, 3] * 0.4          # nr_throttled = 40 % of nr_periods
        attrs = {"user": "carol", "cpus": "4", "cgroup": "/slurm/uid_1000/job_77", "first_ns": int(t[0]),
                 "last_ns": int(t[-1]), "job_start_ns": int(t[0]), "job_end_ns": int(t[-1]),
                 "samples_received": len(t), "samples_lost": lost}
        if name == "n3":
            attrs["overlapping_jobs"] = ["77"]
        hosts[name] = {"attrs": attrs, "backends": b}
        per_host.append(b)
    summary = synth.summary_for(per_host, t[0], t[-1], 4, 3 * len(t))
    summary["samples_lost"] = 3 * lost
    synth.write_job(path, "76", hosts, summary=summary)
    return path


def plot_ids(pngs):
    return [p.id for p, _ in pngs]


def test_plots_of_a_three_host_job(tmp_path):
    job = colmet.open(three_host_job(tmp_path / "j.h5"))
    text, pngs = make_report(job, processes=1)
    assert plot_ids(pngs) == ["cpu", "memory", "block_io", "file_io", "perfhw_instructions", "perfhw_cpu_cycles",
                              "perfhw_cache_misses", "perfhw_page_faults", "ipc", "power", "temperature"]
    for plot, png in pngs:
        assert png.startswith(b"\x89PNG") and len(plot.lines) >= 3
        assert base64.b64encode(png).decode() in text
    # Node-scope plots say so, with the job that shared a host.
    for pid in ("power", "temperature"):
        m = re.search(rf'id="plot-{pid}".*?<h3>(.*?)</h3>', text, re.S)
        assert "whole node, not only this job; shared with job 77" in m.group(1)
    m = re.search(r'id="plot-cpu".*?<h3>(.*?)</h3>', text, re.S)
    assert "whole node" not in m.group(1)
    assert "Slurm" in text and "carol" in text and "3: n1, n2, n3" in text
    assert "Exit status</dt><dd>not recorded" in text
    assert "mean power" in text and "kWh" in text


def test_the_same_report_with_several_processes(tmp_path):
    job = colmet.open(three_host_job(tmp_path / "j.h5"))
    one, pngs1 = make_report(job, processes=1)
    two, pngs2 = make_report(job, processes=2)
    strip = re.compile(r"<footer>.*</footer>", re.S)
    assert strip.sub("", one) == strip.sub("", two)


def test_notes_state_their_rules(tmp_path):
    path = three_host_job(tmp_path / "j.h5", lost=2, throttle=True, limit=1 << 30, gap=True)
    with h5py.File(path, "r+") as f:
        f["hosts/n2"].attrs.create("rows_dropped", 5, dtype=np.uint64)
        f["hosts/n3"].attrs.create("tsdb_points_dropped", 40, dtype=np.uint64)
    job = colmet.open(path)
    text, _ = make_report(job, exit_status=137, processes=1)
    notes = re.findall(r'<li class="(warn|info)">(.*?)<span class="rule">Rule: (.*?)</span></li>', text)
    by_text = {html.unescape(n[1]): html.unescape(n[2]) for n in notes}

    def note(start):
        hits = [k for k in by_text if k.startswith(start)]
        assert hits, (start, list(by_text))
        return hits[0], by_text[hits[0]]

    used, rule = note("The job used ")
    assert re.match(r"The job used \d\.\d of its 12 CPUs on average \(\d+\.\d % CPU efficiency\)\.", used)
    assert "below 50%" in rule
    idle, rule = note("1 of the job's 3 hosts were almost idle: n3")
    assert "below 10% of its CPUs" in rule
    mem, rule = note("Memory peaked near the cgroup limit on 3 of the job's 3 hosts: n1 100 % (")
    assert "at least 90%" in rule
    thr, rule = note("The job was throttled in 40 % of its CPU quota's periods")
    assert "nr_throttled" in rule
    lost, rule = note("6 of ")
    assert "were lost" in lost and "samples_lost" in rule
    dropped, rule = note("The collector received 5 rows it could not store")
    assert "rows_dropped" in rule and "5 rows not stored by the collector" in text
    tsdb, rule = note("40 values of this job never reached the time-series store")
    assert "tsdb_points_dropped" in rule
    assert not any("never reached the collector" in k for k in by_text)
    gaps, rule = note("The data has 3 gaps")
    assert "1.5 × the sampling interval" in rule
    shared, rule = note("rapl, temperature measure the whole node")
    assert "77" in shared and "overlapping_jobs" in rule
    assert "137 (killed by signal 9)" in text
    # every note has a rule
    assert text.count('<span class="rule">Rule: ') == len(notes) == text.count("<li class=")


def test_a_job_without_summary_is_reported_from_its_samples(tmp_path):
    rng = np.random.default_rng(2)
    t = synth.times(T0, 30)
    b = synth.standard_backends(t, rng, node=False, perfhw=False)
    synth.write_job(tmp_path / "run.h5", "running", {"n1": {"attrs": {"cpus": "4", "first_ns": int(t[0]),
                                                                      "last_ns": int(t[-1])}, "backends": b}})
    job = colmet.open(tmp_path / "run.h5")
    text, pngs = make_report(job, processes=1)
    assert "The file has no summary" in text and "From the samples" in text
    cpu = float(b["cgroup_cpu"]["segments"][0]["values"][-1, 0])
    assert f"{cpu:.2f} s" in text
    assert "not ended (last data" in text


def test_the_report_is_self_contained_and_png_matches(tmp_path):
    path = three_host_job(tmp_path / "j.h5")
    out = tmp_path / "r.html"
    r = subprocess.run(report_command() + [str(path), "-o", str(out), "--png", str(tmp_path / "png")],
                       env=report_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(out) and r.stderr == ""
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and '<meta name="viewport"' in html
    refs = re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', html)
    assert refs and all(r.startswith("data:image/png;base64,") for r in refs)
    for bad in ("<script", "<link", "@import", "url(", "http://", "https://", "<iframe", "<object"):
        assert bad not in html, bad
    pngs = sorted(os.listdir(tmp_path / "png"))
    assert len(pngs) == 11 and "cpu.png" in pngs
    for name in pngs:
        data = (tmp_path / "png" / name).read_bytes()
        assert base64.b64encode(data).decode() in html
    # the default output name: the file's, with .html, in the current directory
    r = subprocess.run(report_command() + [str(path)], env=report_env(), cwd=tmp_path / "png",
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and (tmp_path / "png" / "j.html").exists()


def test_help_lists_options_as_man_lint_reads_them():
    r = subprocess.run(report_command() + ["--help"], env=report_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    for opt in ("  -o,--output FILE", "  --png DIR", "  --open", "  --exit-status N", "  -h,--help", "  --version"):
        assert any(line.startswith(opt) for line in r.stdout.splitlines()), opt
    r = subprocess.run(report_command() + ["--bogus"], env=report_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 64 and r.stderr.count("\n") == 1


def test_reduced_lines_keep_gaps_and_peaks():
    x = np.arange(10_000, dtype=float)
    y = np.ones(10_000)
    y[1234] = 50.0                     # one spike
    y[5000:5003] = np.nan              # a gap
    xs, ys = reduce_line(x, y, how="max", bins=500)
    assert xs.size <= 2 * 500 and np.nanmax(ys) == 50.0
    nan_at = xs[np.isnan(ys)]
    assert nan_at.size == 1 and 4980 <= nan_at[0] <= 5020
    xm, ym = reduce_line(x, np.arange(10_000, dtype=float), how="mean", bins=100)
    assert xm.size == 100 and ym[0] == pytest.approx(49.5)       # the mean of each run
    small_x, small_y = reduce_line(x[:50], y[:50])
    assert small_x.size == 50                                     # short lines are kept as they are


def test_png_shows_each_host_in_its_colour(tmp_path):
    from PIL import Image
    job = colmet.open(three_host_job(tmp_path / "j.h5"))
    _, pngs = make_report(job, processes=1)
    png = dict((p.id, data) for p, data in pngs)["cpu"]
    colours = {c for _, c in Image.open(io.BytesIO(png)).convert("RGB").getcolors(1 << 20)}
    for rgb in ((0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e), (0x2c, 0xa0, 0x2c)):
        assert rgb in colours


def test_the_launcher_names_the_missing_debian_packages(colmet_bin, tmp_path):
    """build/bin/colmet-report without h5py (shadowed here by a module that
    fails to import): one line naming the packages, exit 69, no traceback."""
    fake = tmp_path / "h5py"
    fake.mkdir()
    (fake / "__init__.py").write_text('raise ImportError("No module named h5py", name="h5py")\n')
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run([os.path.join(colmet_bin, "colmet-report"), str(tmp_path / "job.h5")], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 69
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "the Python module h5py is missing" in r.stderr and "python3-h5py" in r.stderr


def test_a_host_without_job_end_is_noted(tmp_path):
    path = three_host_job(tmp_path / "j.h5")
    with h5py.File(path, "r+") as f:
        del f["hosts/n3"].attrs["job_end_ns"]
    text, _ = make_report(colmet.open(path), processes=1)
    assert "The job_end of 1 of the 3 hosts never reached the collector" in html.unescape(text)
    assert "a host without the attribute job_end_ns" in text


def test_gpus_and_the_jobs_energy_share(tmp_path):
    """A job with two GPUs (backend gpu) and the energy backend: GPU plots
    with a line style per GPU, a summary row per GPU, and the job's share
    dashed in the power plot."""
    rng = np.random.default_rng(5)
    t = synth.times(T0, 60)
    b = synth.standard_backends(t, rng, cpus=4, busy=2.0)
    names, units, kinds, cols = [], [], [], []
    for g, busy in ((0, 0.9), (1, 0.1)):
        for metric, unit, kind, v in (("utilisation", "1", "gauge", np.full(len(t), busy)),
                                      ("job_memory", "B", "gauge", np.full(len(t), (g + 1) * 2.0**30)),
                                      ("job_energy", "J", "counter", np.arange(len(t)) * 100.0 * (g + 1))):
            names.append(f"gpu{g}_{metric}")
            units.append(unit)
            kinds.append(kind)
            cols.append(v)
    b["gpu"] = synth.backend("job", synth.segment(names, units, kinds, t, np.column_stack(cols)))
    rapl = b["rapl"]["segments"][0]
    share = rapl["values"] * 0.5
    b["energy"] = synth.backend("job", synth.segment(rapl["names"], rapl["units"], rapl["kinds"], t, share))
    attrs = {"user": "dave", "cpus": "4", "first_ns": int(t[0]), "last_ns": int(t[-1]), "job_start_ns": int(t[0]),
             "job_end_ns": int(t[-1]), "samples_received": len(t), "samples_lost": 0}
    synth.write_job(tmp_path / "g.h5", "81", {"g1": {"attrs": attrs, "backends": b}})
    job = colmet.open(tmp_path / "g.h5")
    text, pngs = make_report(job, processes=1)
    plots = {p.id: p for p, _ in pngs}
    assert "gpu" in plots and "gpu_memory" in plots
    assert plots["gpu"].styles == [("-", "GPU 0"), ("--", "GPU 1")]
    assert plots["power"].styles == [("-", "the node"), ("--", "the job's share")]
    text = html.unescape(text)
    assert "<th>GPU 0</th><td>90 % busy on average, 1.0 GiB peak of the job's processes, 5,900.0 J" in text
    assert "<th>GPU 1</th><td>10 % busy on average, 2.0 GiB peak of the job's processes, 11,800.0 J" in text
    assert "(the job's share)" in text
