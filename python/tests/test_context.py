"""The job's context (what the scheduler said of it) as the reader, open_many
and colmet-report show it, on synthetic files in the collector's layout; and
the reader's list of keys against colmet-job's own."""

import os
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

import colmet
import synth
from colmet import _job
from colmet.report import context_rows
from conftest import COLMET_BIN

T0 = 1_800_000_000_000_000_000


def write(path, attrs, hosts=("node-1",)):
    t = synth.times(T0, 3)
    backends = synth.standard_backends(t, np.random.default_rng(1), perfhw=False, node=False)
    synth.write_job(path, "77", {h: {"attrs": dict(attrs), "backends": backends} for h in hosts})
    return path


CONTEXT = {"user": "alice", "cpus": "2", "job_name": "probe run", "partition": "debug", "account": "physics",
           "time_limit_s": "600", "job_nodes": "2", "job_cpus": "8", "host_memory_mib": "2048",
           "submit_time": "1765000000", "start_time": "1765000042"}


def test_the_readers_keys_are_colmet_jobs():
    exe = os.path.join(COLMET_BIN, "colmet-job")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"colmet-job is not built in {COLMET_BIN}")
    help_text = subprocess.run([exe, "start", "--help"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"keys: ([a-z_, \n]+)\)", help_text)
    assert found, help_text
    keys = tuple(k.strip() for k in found.group(1).replace("\n", " ").split(","))
    assert keys == _job.CONTEXT


def test_job_context_reads_the_scheduler_view(tmp_path):
    job = colmet.open(write(tmp_path / "j.h5", CONTEXT, hosts=("node-1", "node-2")))
    context = job.context
    assert context["job_name"] == "probe run"
    assert context["partition"] == "debug"
    assert context["time_limit_s"] == 600 and context["job_cpus"] == 8 and context["host_memory_mib"] == 2048
    assert context["submit_time"] == pd.Timestamp(1765000000, unit="s", tz="UTC")
    assert "queue" not in context and "host_gpus" not in context
    assert job.metadata["context"] == context
    rows = dict(context_rows(job))
    assert rows["Job name"] == "probe run"
    assert rows["Time limit"] == "10 min 00 s"
    assert rows["Memory allocated (first host)"] == "2.0 GiB"
    assert job.flags == {}
    # A malformed count (a file written by something else) is left out, not raised.
    broken = colmet.open(write(tmp_path / "b.h5", dict(CONTEXT, job_cpus="eight")))
    assert "job_cpus" not in broken.context


def test_open_many_has_a_column_per_key(tmp_path):
    write(tmp_path / "a.h5", CONTEXT)
    write(tmp_path / "b.h5", {"user": "bob", "cpus": "1", "queue": "besteffort", "project": "p1"})
    for fast in (True, False):
        rows = colmet.open_many(tmp_path) if fast else pd.DataFrame(
            [colmet._many._row(str(p)) for p in sorted(tmp_path.glob("*.h5"))])
        a, b = rows.iloc[0], rows.iloc[1]
        assert a["job_name"] == "probe run" and a["account"] == "physics" and b["queue"] == "besteffort"
        if fast:
            assert list(rows.columns[:5]) == ["path", "job_id", "user", "job_name", "account"]
            assert a["job_cpus"] == 8 and pd.isna(b["job_cpus"])
            assert a["start_time"] == pd.Timestamp(1765000042, unit="s", tz="UTC") and pd.isna(b["start_time"])


def test_flags_are_read_and_noted(tmp_path):
    t = synth.times(T0, 3)
    backends = synth.standard_backends(t, np.random.default_rng(1), perfhw=False, node=False)
    synth.write_job(tmp_path / "f.h5", "78", {"n1": {"attrs": {"user": "a", "cpus": "2"}, "backends": backends}},
                    flags={"low_cpu_efficiency": "CPU efficiency 2.0 % over 3600 s (below 25.0 %)"})
    job = colmet.open(tmp_path / "f.h5")
    text, since = job.flags["low_cpu_efficiency"]
    assert text == "CPU efficiency 2.0 % over 3600 s (below 25.0 %)"
    assert since == pd.Timestamp(1_800_000_000_000_000_000, unit="ns", tz="UTC")
    from colmet._notes import notes
    from colmet.report import digest_job, figures
    digest = digest_job(job, 1)
    found = [n for n in notes(job, digest, figures(job, digest)) if n.rule == "flag low_cpu_efficiency in /flags"]
    assert found and found[0].level == "warn"
    assert found[0].text == ("The collector flagged this job (low_cpu_efficiency): "
                             "CPU efficiency 2.0 % over 3600 s (below 25.0 %).")
