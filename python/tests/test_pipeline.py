"""colmet.open and colmet-report on job files made by the real pipeline
(root): one `colmet-job run` with perfhw, an event change through
colmet-ctl (two segments) and a collector outage that acknowledged delivery
fills; and a
two-host job from two `colmet-node --hostname` processes on one collector,
with RAPL and temperatures from fixture trees and another job sharing one
host. Each report is rendered by headless chromium."""

import base64
import io
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

import colmet
import pipeline
from conftest import COLMET_BIN, SOURCE_DIR, report_command, report_env

pytestmark = pytest.mark.pipeline

PERIOD = 0.25
CPU_PCT = 10          # the issue's bound for the DataFrames' CPU figures
MIB = 1 << 20


def raw(path, host, backend):
    """(time, values, names) of every segment, straight from h5py."""
    with h5py.File(path, "r") as f:
        g = f["hosts"][host][backend]
        out = []
        for n in range(int(g.attrs["segments"])):
            s = g[f"segment_{n}"]
            out.append((s["time"][:], s["values"][:], [str(x) for x in s.attrs["names"]]))
        return out


def check_rates_are_differences(frame, column):
    """Where two consecutive rows are one period apart and both valid, the
    rate is exactly their difference over their distance in time."""
    t = frame.index.asi8
    v = frame[column].to_numpy()
    r = frame.rates()[column].to_numpy()
    dt = np.diff(t) / 1e9
    period = np.median(dt)
    checked = 0
    for i in range(1, t.size):
        regular = dt[i - 1] < 1.2 * period
        if regular and np.isfinite(v[i]) and np.isfinite(v[i - 1]) and v[i] >= v[i - 1] \
                and frame.segment_of_rows()[i] == frame.segment_of_rows()[i - 1]:
            assert r[i] == pytest.approx((v[i] - v[i - 1]) / dt[i - 1], rel=1e-12), i
            checked += 1
    assert checked >= 4
    assert np.isnan(r[0])


# --- job 1: colmet-job run, perfhw, colmet-ctl, collector outage -----------
@pytest.fixture(scope="module")
def run_job(root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    out = tmp / "out"
    collector = pipeline.Collector(root, out, tmp / "collector.log", flush_interval=1).start()
    job_id = f"pyt-run-{os.getpid()}"
    file = out / f"{job_id}.h5"
    cputime_file = tmp / "cputime.json"
    log = open(tmp / "job.log", "wb")
    env = dict(os.environ, USER=os.environ.get("USER") or pwd.getpwuid(os.getuid()).pw_name)
    job = subprocess.Popen(
        [os.path.join(root, "colmet-job"), "run", "--zeromq-uri", collector.uri, "--job-id", job_id,
         "-s", str(PERIOD), "--enable-perfhw", "--perfhw-list", "task_clock,page_faults", "--",
         os.path.join(root, "colmet-cputime"), "--output", str(cputime_file), "--",
         os.path.join(root, "colmet-workload"), "--cpu-seconds", "7", "--memory-mib", "150"],
        stdout=log, stderr=log, env=env)
    events = {}
    try:
        pipeline.wait_until(lambda: os.path.exists(f"/run/colmet/{job_id}.ctl") and pipeline.rows(file, host()) > 0,
                            15, what="the job's control socket and first rows")
        time.sleep(0.8)
        ctl = subprocess.run([os.path.join(root, "colmet-ctl"), "--job-id", job_id, "--perfhw-list",
                              "context_switches,cpu_clock,task_clock"], capture_output=True, text=True, timeout=30)
        assert ctl.returncode == 0, ctl.stdout + ctl.stderr
        assert "accepted (perfhw_events)" in ctl.stdout
        events["reconfigured"] = time.time_ns()
        # The outage: right after a flush, so that the rows buffered since
        # then (0.8 s of samples) are lost with the collector. The workload
        # (7 s of CPU) runs on meanwhile and for seconds after the restart.
        flushed = pipeline.rows(file, host())
        pipeline.wait_until(lambda: pipeline.rows(file, host()) > flushed, 10, step=0.02, what="a flush")
        time.sleep(0.8)
        collector.kill()
        events["killed"] = time.time_ns()
        time.sleep(0.7)
        collector.start()
        events["restarted"] = time.time_ns()
        assert job.poll() is None, "the job ended before the collector came back: the test needs a longer workload"
        assert job.wait(timeout=60) == 0, open(tmp / "job.log").read()
        pipeline.wait_until(lambda: pipeline.has_summary(file), 15, what="the job's summary")
    finally:
        pipeline.stop(job)
        collector.stop()
        log.close()
    return {"file": file, "truth": pipeline.cputime(cputime_file), "tmp": tmp, "events": events, "job_id": job_id}


def host():
    return os.uname().nodename


def test_run_job_dataframes_match_what_the_workload_used(run_job):
    job = colmet.open(run_job["file"])
    assert job.hosts == [host()] and job.scheduler == "colmet-job run" and job.has_summary
    cpu = job.frame(host(), "cgroup_cpu")
    truth = run_job["truth"]
    usage = cpu["usage"].dropna().iloc[-1]
    print(f"CPU: the workload used {truth:.3f} s over its whole life, the DataFrame says {usage:.3f} s")
    assert usage == pytest.approx(truth, rel=CPU_PCT / 100)
    assert job.summary["cpu_time_s"] == pytest.approx(truth, rel=CPU_PCT / 100)
    # The rates integrate back to the CPU time, except over the NaN intervals.
    cores = cpu.rates()["usage"]
    dt = np.diff(cpu.index.asi8, prepend=cpu.index.asi8[0]) / 1e9
    busy = float(np.nansum(cores.to_numpy() * dt))
    assert 0.5 * truth < busy <= usage + 1e-9
    mem = job.frame(host(), "cgroup_memory")
    assert mem.units["peak"] == "B"
    peak = np.nanmax(mem["peak"].to_numpy())
    print(f"memory: the workload touched 150 MiB, peak {peak / MIB:.1f} MiB")
    assert 150 * MIB <= peak < 150 * MIB + 64 * MIB
    assert job.summary["peak_memory_bytes"] == peak
    # The DataFrame holds exactly the stored rows.
    (t, v, names), = raw(run_job["file"], host(), "cgroup_cpu")
    assert list(cpu.index.asi8) == list(t)
    np.testing.assert_array_equal(cpu["usage"].to_numpy(), v[:, names.index("usage")])


def test_run_job_rates_are_counter_differences_and_the_outage_left_no_gap(run_job):
    job = colmet.open(run_job["file"])
    cpu = job.frame(host(), "cgroup_cpu")
    check_rates_are_differences(cpu, "usage")
    t = cpu.index.asi8
    dt = np.diff(t) / 1e9
    ev = run_job["events"]
    # The outage: the rows buffered since the last flush before the kill
    # (0.8 s, 3 periods) died with the collector, but they had not been
    # acknowledged: the sampler sent them again after the restart. So the
    # interval around the kill is one period (two if the loaded machine made
    # the sampler miss one), its rate is there, and nothing is lost.
    i = int(np.searchsorted(t, ev["killed"])) - 1
    print(f"interval at the kill: {dt[i]:.3f} s; intervals longer than 2.5 periods:",
          [(int(j), float(dt[j])) for j in np.flatnonzero(dt > 2.5 * PERIOD)])
    assert ev["killed"] - 4e9 < t[i] and dt[i] < 2.5 * PERIOD
    assert np.isfinite(cpu.rates()["usage"].iloc[i + 1])
    with h5py.File(run_job["file"], "r") as f:
        assert int(f["summary"].attrs["samples_lost"]) == 0
        assert int(f["summary"].attrs["samples_received"]) == len(t)


def test_run_job_perfhw_has_two_segments_and_no_rate_across_them(run_job):
    job = colmet.open(run_job["file"])
    perf = job.frame(host(), "perfhw")
    segs = perf.segments
    assert [s["names"][:3] for s in segs] == [["task_clock", "page_faults", "task_clock.scaling"],
                                               ["context_switches", "cpu_clock", "task_clock"]]
    assert segs[0]["end_ns"] < segs[1]["start_ns"]
    assert abs(segs[1]["start_ns"] - run_job["events"]["reconfigured"]) < 2e9
    assert set(perf.columns) >= {"task_clock", "page_faults", "context_switches", "cpu_clock"}
    first_new = int(np.searchsorted(perf.index.asi8, segs[1]["start_ns"]))
    seg = perf.segment_of_rows()
    assert set(seg[:first_new]) == {0} and set(seg[first_new:]) == {1}
    assert np.isnan(perf["context_switches"].iloc[:first_new]).all()
    assert np.isnan(perf["page_faults"].iloc[first_new:]).all()
    rates = perf.rates()
    assert np.isnan(rates["task_clock"].iloc[first_new])   # the new counters start from 0
    check_rates_are_differences(perf, "task_clock")
    check_rates_are_differences(perf, "cpu_clock")
    # Both segments' stored values are the DataFrame's.
    stored = raw(run_job["file"], host(), "perfhw")
    np.testing.assert_array_equal(perf["cpu_clock"].to_numpy()[first_new:],
                                  stored[1][1][:, stored[1][2].index("cpu_clock")])


# --- job 2: two hosts on one collector ------------------------------------
@pytest.fixture(scope="module")
def two_hosts(root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two")
    out = tmp / "out"
    collector = pipeline.Collector(root, out, tmp / "collector.log", flush_interval=1).start()
    job_id, other_id = f"pyt-two-{os.getpid()}", f"pyt-other-{os.getpid()}"
    spec = {"pyhost-a": (1.5, 100), "pyhost-b": (2.5, 200)}
    rels = {h: f"/colmet-test/{job_id}-{h}" for h in spec}
    rels["other"] = f"/colmet-test/{other_id}"
    nodes, work, feeds = [], [], []
    try:
        for rel in rels.values():
            pipeline.make_cgroup(rel)

        def node(job, hostname, rel):
            sysfs = pipeline.FakeSysfs(SOURCE_DIR, tmp / f"{job}-{hostname}").start()
            feeds.append(sysfs)
            log = open(tmp / f"node-{job}-{hostname}.log", "wb")
            p = subprocess.Popen(
                [os.path.join(root, "colmet-node"), "--config", "/dev/null", "--spool-dir", str(tmp / "spool"), "--job-id", job, "--cgroup", rel,
                 "--zeromq-uri", collector.uri, "-s", str(PERIOD), "--hostname", hostname, "--user", "tester",
                 "--control-dir", "", "--sysfs-root", sysfs.root, "--enable-RAPL", "--enable-temperature", "-v"],
                stdout=log, stderr=log)
            log.close()
            nodes.append(p)
            return p

        for h in spec:
            node(job_id, h, rels[h])
        node(other_id, "pyhost-b", rels["other"])   # another job on host b at the same time
        file = out / f"{job_id}.h5"
        pipeline.wait_until(lambda: all(pipeline.rows(file, h) > 0 for h in spec), 15, what="both hosts' rows")
        for h, (cpu, mem) in spec.items():
            work.append(pipeline.run_in_cgroup(rels[h], [
                os.path.join(root, "colmet-cputime"), "--output", str(tmp / f"cputime-{h}.json"), "--",
                os.path.join(root, "colmet-workload"), "--cpu-seconds", str(cpu), "--memory-mib", str(mem)]))
        for w in work:
            assert w.wait(timeout=60) == 0
        time.sleep(2 * PERIOD + 0.1)     # one more sample after the workloads ended
        for p in nodes:
            assert pipeline.stop(p) == 0
        pipeline.wait_until(lambda: pipeline.has_summary(file), 15, what="the two-host job's summary")
    finally:
        for p in nodes + work:
            pipeline.stop(p, signal.SIGKILL)
        for s in feeds:
            s.stop()
        collector.stop()
        for rel in rels.values():
            pipeline.remove_cgroup(rel)
    truth = {h: pipeline.cputime(tmp / f"cputime-{h}.json") for h in spec}
    return {"file": file, "truth": truth, "memory": {h: m for h, (_, m) in spec.items()}, "tmp": tmp,
            "other": other_id, "job_id": job_id}


def test_two_host_job_per_host_frames_match_each_workload(two_hosts):
    job = colmet.open(two_hosts["file"])
    assert job.hosts == ["pyhost-a", "pyhost-b"] and job.user == "tester"
    total = 0.0
    for h, truth in two_hosts["truth"].items():
        cpu = job.frame(h, "cgroup_cpu")
        usage = cpu["usage"].dropna().iloc[-1]
        print(f"{h}: workload {truth:.3f} s, DataFrame {usage:.3f} s")
        assert usage == pytest.approx(truth, rel=CPU_PCT / 100)
        check_rates_are_differences(cpu, "usage")
        # no outage here: a NaN rate only where a gap is (none unless the machine is very loaded)
        nan_rates = set(np.flatnonzero(cpu.rates()["usage"].iloc[1:].isna().to_numpy()) + 1)
        gap_ends = set(np.searchsorted(cpu.index.asi8, [g.value for g in cpu.gaps()["end"]]))
        assert nan_rates <= gap_ends, (nan_rates, gap_ends)
        peak = np.nanmax(job.frame(h, "cgroup_memory")["peak"].to_numpy())
        assert two_hosts["memory"][h] * MIB <= peak < (two_hosts["memory"][h] + 64) * MIB
        total += truth
    assert job.summary["cpu_time_s"] == pytest.approx(total, rel=CPU_PCT / 100)
    assert job.summary["hosts"] == 2


def test_two_host_job_node_scope_data_and_the_job_that_shared_a_host(two_hosts):
    job = colmet.open(two_hosts["file"])
    assert job.host("pyhost-b").overlapping_jobs == [two_hosts["other"]]
    assert job.host("pyhost-a").overlapping_jobs == []
    for h in job.hosts:
        rapl = job.frame(h, "rapl")
        assert rapl.attrs["scope"] == "node" and rapl.units["package_0_package"] == "J"
        watts = rapl.rates()["package_0_package"]
        assert watts.attrs["units"]["package_0_package"] == "W"
        # the fixture's package-0 gains 10 J every 0.1 s: 100 W
        assert 50 < np.nanmedian(watts.to_numpy()) < 150
        check_rates_are_differences(rapl, "package_0_package")
        temp = job.frame(h, "temperature")
        assert temp.units["coretemp1.core_0"] == "degC" and temp["coretemp1.core_0"].iloc[-1] == 44.0
    assert job.summary["energy_j"] > 0
    # The job's share (backend energy), in J like the node's, and less than it.
    for h in job.hosts:
        share = job.frame(h, "energy")
        assert share.units["package_0_package"] == "J"
    assert 0 < job.summary["job_energy_j"] < job.summary["energy_j"]


# --- the reports, rendered by a real browser ---------------------------------
def report_cmd():
    launcher = os.path.join(COLMET_BIN, "colmet-report")
    return [launcher] if os.access(launcher, os.X_OK) else report_command()


def make_report(file, where, extra=()):
    html_path = where / "report.html"
    png_dir = where / "png"
    r = subprocess.run(report_cmd() + [str(file), "-o", str(html_path), "--png", str(png_dir), *extra],
                       env=report_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return html_path, png_dir


def colours(png):
    from PIL import Image
    img = Image.open(io.BytesIO(png)).convert("RGB")
    return img, set(c for _, c in img.getcolors(1 << 20))


TAB10 = [(0x1f, 0x77, 0xb4), (0xff, 0x7f, 0x0e)]   # the first two hosts' colours


def check_in_browser(html_path, png_dir, expected_plots, hosts, shot_name):
    browser = pytest.importorskip("browser")
    if not browser.find_chromium():
        pytest.skip("chromium is not installed")
    shots = os.environ.get("COLMET_SCREENSHOT_DIR") or str(html_path.parent)
    os.makedirs(shots, exist_ok=True)
    results = {}
    for view, width, height, mobile in (("desktop", 1100, 900, False), ("phone", 412, 915, True)):
        shot = os.path.join(shots, f"{shot_name}-{view}.png")
        probe, requests, errors, url = browser.render_report(html_path, shot, width, height, mobile)
        results[view] = probe
        # Nothing outside the file was requested, and the browser logged no error.
        outside = [u for u in requests if u != url and not u.startswith("data:")]
        assert outside == [], outside
        assert errors == [], errors
        assert os.path.getsize(shot) > 10_000
        plots = {p["id"]: p for p in probe["plots"]}
        assert set(expected_plots) <= set(plots), sorted(plots)
        for p in probe["plots"]:
            assert p["complete"] and p["naturalWidth"] > 300 and p["naturalHeight"] > 100, p
            assert p["src"] == "data:image/png;base64,"
            assert 0.9 * (width - 40) <= p["width"] <= width, p
        # Readable on a phone: the page is no wider than the screen.
        assert probe["scrollWidth"] <= probe["innerWidth"], (probe["scrollWidth"], probe["innerWidth"])
        assert probe["summaryRows"] >= 8
        # The dumped DOM refers to nothing outside itself.
        dom = probe["html"]
        refs = re.findall(r'\b(?:src|href)="([^"]*)"', dom)
        assert refs and all(r.startswith("data:") or r.startswith("#") for r in refs), refs[:5]
        assert "<script" not in dom and "<link" not in dom and "@import" not in dom and "url(" not in dom
    if os.environ.get("COLMET_SCREENSHOT_DIR"):   # the top of the page, as README.md shows it
        browser.render_report(html_path, os.path.join(shots, f"{shot_name}-top.png"), 900, 1700, full_page=False)
    # Every plot is non-empty: it holds the colour of each host's line, and
    # --png wrote the same image.
    dom = results["desktop"]["html"]
    for plot_id in expected_plots:
        m = re.search(rf'id="plot-{plot_id}"[^>]*>.*?src="data:image/png;base64,([^"]+)"', dom, re.S)
        png = base64.b64decode(m.group(1))
        assert (png_dir / f"{plot_id}.png").read_bytes() == png
        img, cs = colours(png)
        for i in range(len(hosts)):
            assert TAB10[i] in cs, f"{plot_id}: no line of host {hosts[i]}"
    return results


def test_run_job_report_in_a_browser(run_job):
    where = run_job["tmp"] / "report"
    where.mkdir()
    html_path, png_dir = make_report(run_job["file"], where, ["--exit-status", "0"])
    expected = ["cpu", "memory", "block_io", "file_io", "perfhw_task_clock", "perfhw_page_faults",
                "perfhw_context_switches", "perfhw_cpu_clock"]
    results = check_in_browser(html_path, png_dir, expected, [host()], "run-job")
    text = open(html_path).read()
    assert f"job {run_job['job_id']}" in results["desktop"]["title"]
    assert "0 (success)" in text and "colmet-job run" in text
    assert ", 0 lost" in text                                # the outage was filled
    assert "The perfhw metrics changed 1 time" in text       # the reconfiguration, marked
    assert text.count("Rule: ") == results["desktop"]["notes"]


def test_two_host_job_report_in_a_browser(two_hosts):
    where = two_hosts["tmp"] / "report"
    where.mkdir()
    html_path, png_dir = make_report(two_hosts["file"], where)
    expected = ["cpu", "memory", "block_io", "file_io", "power", "temperature"]
    results = check_in_browser(html_path, png_dir, expected, ["pyhost-a", "pyhost-b"], "two-hosts")
    plots = {p["id"]: p for p in results["desktop"]["plots"]}
    for node_plot in ("power", "temperature"):
        assert "whole node" in plots[node_plot]["title"] and two_hosts["other"] in plots[node_plot]["title"]
    assert "whole node" not in plots["cpu"]["title"]
    text = open(html_path).read()
    assert "Energy (RAPL, whole node; shared with" in text and "kWh" in text and "mean power" in text
    assert "exit status" not in text.lower() or "not recorded" in text


@pytest.mark.parametrize("damage", ["truncated", "version"])
def test_a_damaged_real_file_gives_one_error_line(run_job, tmp_path, damage):
    bad = tmp_path / "bad.h5"
    shutil.copy(run_job["file"], bad)
    if damage == "truncated":   # as if the copy or the disk stopped mid-write
        size = os.path.getsize(bad)
        with open(bad, "r+b") as f:
            f.truncate(int(size * 0.6))
    else:
        with h5py.File(bad, "r+") as f:
            f.attrs.modify("colmet_layout_version", np.int32(2))
    r = subprocess.run(report_cmd() + [str(bad), "-o", str(tmp_path / "x.html")], env=report_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 65 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    expected = "truncated" if damage == "truncated" else "layout version 2 is not supported"
    assert expected in lines[0]
    with pytest.raises(colmet.ColmetError):
        colmet.open(bad)


# --- colmet-job run: the report command, --report ----------------------------
def test_colmet_job_run_prints_the_report_command_and_writes_the_report(root, tmp_path):
    job_bin = os.path.join(root, "colmet-job")
    work = os.path.join(root, "colmet-workload")
    r = subprocess.run([job_bin, "run", "-s", "0.5", "--job-id", f"pyt-hint-{os.getpid()}", "--", work,
                        "--cpu-seconds", "0.3"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("  report          colmet-report "), r.stderr
    words = shlex.split(last.split(None, 1)[1])
    assert words[0] == "colmet-report" and len(words) == 2
    file = words[1]
    assert os.path.isabs(file) and os.path.exists(file)
    # The printed command works as it is (the build's colmet-report stands for the installed one).
    r = subprocess.run(report_cmd() + words[1:], cwd=tmp_path, env=report_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(tmp_path / (os.path.basename(file)[:-3] + ".html"))
    if not os.access(os.path.join(root, "colmet-report"), os.X_OK):
        pytest.skip(f"no colmet-report launcher in {root} (build tree configured before python/ existed)")
    # --report: colmet-job runs colmet-report with the command's exit status.
    # A period far longer than the command: only job_start and job_end, so
    # the report says it has too few samples (at 0.5 s, a loaded machine
    # sometimes took a periodic sample in between).
    r = subprocess.run([job_bin, "run", "-s", "60", "--report", "my report.html", "--job-id",
                        f"pyt-report-{os.getpid()}", "--", "sh", "-c", "exit 3"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 3, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "  report          my report.html"
    text = (tmp_path / "my report.html").read_text()
    assert "Exit status</dt><dd>3</dd>" in text and "Too few samples" in text


def test_colmet_job_run_report_without_colmet_report_says_so(root, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for p in ("colmet-job", "colmet-node", "colmet-collector"):
        shutil.copy(os.path.join(root, p), bin_dir / p)
    if any(os.access(os.path.join(d, "colmet-report"), os.X_OK) for d in ("/usr/local/bin", "/usr/local/sbin",
                                                                          "/usr/bin", "/usr/sbin")):
        pytest.skip("a colmet-report is installed on this machine")
    r = subprocess.run([str(bin_dir / "colmet-job"), "run", "-s", "0.5", "--report", "r.html", "--job-id",
                        f"pyt-noreport-{os.getpid()}", "--", "true"], cwd=tmp_path, capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r.stderr       # the command's status, whatever happens to the report
    assert "--report: colmet-report is not next to colmet-job or in PATH" in r.stderr
    assert not (tmp_path / "r.html").exists()
