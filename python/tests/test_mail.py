"""colmet-mail-summary's parts: the summary read from hostile JSON (refused
with a SummaryError, never another exception), the address rules, and the
message composed from a summary and a real job file (its notes). The real
MTA is in tests/integration/job_end_mail.bats."""

import json
import random

import numpy as np
import pytest

import synth
from colmet.mail import SummaryError, address_of, compose, read_aliases, read_summary

GOOD = {"job_id": "42", "user": "alice", "file": None, "complete": True,
        "summary": {"cpu_efficiency": 0.25, "cpus": 4, "duration_s": 3600, "peak_memory_bytes": None,
                    "samples_received": 10, "samples_lost": 2}}


def test_hostile_json_is_refused_with_a_summary_error_only():
    text = json.dumps(GOOD)
    rng = random.Random(7)
    refused = 0
    for _ in range(3000):
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256) if rng.random() < 0.5 else rng.choice(b'{}[]":,0-.eE\\ntrufalse')
        try:
            data = read_summary(b.decode("utf-8", "replace"))
        except SummaryError:
            refused += 1
            continue
        assert isinstance(data["job_id"], str) and isinstance(data["summary"], dict)
        for v in data["summary"].values():
            assert v is None or isinstance(v, (int, float)) and not isinstance(v, bool)
    assert refused > 100
    for bad, why in [("[1]", "not a JSON object"), ('{"summary": {}}', "no job_id"),
                     ('{"job_id": "1"}', "no 'summary' object"), ('{"job_id": "1", "summary": {"x": true}}', "'x'"),
                     ('{"job_id": "1", "summary": {}, "user": 5}', "'user' is not text"), ("[" * 100000, "not JSON"),
                     ('{"job_id": "1", "summary": {}, "flags": {"a": "b"}}', "'flags' is not a list"),
                     ('{"job_id": "1", "summary": {}, "flags": [{"name": "a"}]}', "'flags' is not a list")]:
        with pytest.raises(SummaryError, match=why):
            read_summary(bad)


def test_addresses(tmp_path):
    aliases = tmp_path / "aliases"
    aliases.write_text("# users' addresses\nalice alice@lab.example  # comment\n\n")
    table = read_aliases(aliases)
    assert address_of("alice", table, "example.org") == "alice@lab.example"
    assert address_of("bob", table, "example.org") == "bob@example.org"
    assert address_of("root", {}, None) == "root", "a local user: the MTA delivers"
    assert address_of("no-such-user-here", {}, None) is None
    assert address_of("", table, "example.org") is None
    aliases.write_text("alice\n")
    with pytest.raises(SummaryError, match="line 1: expected 'user address'"):
        read_aliases(aliases)


def test_the_message_has_the_figures_the_notes_and_the_report_command(tmp_path):
    path = tmp_path / "42.h5"
    rng = np.random.default_rng(3)
    t = synth.times(1_700_000_000_000_000_000, 30)
    b = synth.standard_backends(t, rng, busy=0.5, node=False, perfhw=False)
    summary = synth.summary_for([b], t[0], t[-1], 4, len(t))
    synth.write_job(path, "42", {"n1": {"attrs": {"cpus": "4", "first_ns": int(t[0]), "last_ns": int(t[-1])},
                                        "backends": b}}, summary=summary)
    data = dict(GOOD, file=str(path))
    msg = compose(data, "alice@lab.example", "colmet@example.org", "Job files: ssh front.example")
    text = msg.get_content()
    assert msg["To"] == "alice@lab.example" and msg["From"] == "colmet@example.org"
    assert msg["Subject"] == "[colmet] job 42 ended: 25.0 % CPU efficiency, unknown peak memory"
    assert "  Duration        60 min 00 s" in text
    assert "  Samples         10 received, 2 lost" in text
    assert "Notes:\n  - " in text and "CPU efficiency)." in text
    assert f"  colmet-report {path}" in text
    assert text.rstrip().endswith("Job files: ssh front.example")
    # Headers stay on one line, a long job id too.
    long_id = "slurm-cluster-a.123456789.batch-with-a-long-name"
    assert f"\nSubject: [colmet] job {long_id} ended: " in compose(dict(GOOD, job_id=long_id), "a", None, None).as_string()
    # The collector's flags: a paragraph of their own, from the summary (the
    # file's /flags are left out of the notes there).
    synth.write_job(path, "42", {"n1": {"attrs": {"cpus": "4"}, "backends": b}}, summary=summary,
                    flags={"memory_unused": "host n1 used at most 10 MiB of the 8192 MiB asked for"})
    flagged = dict(data, flags=[{"name": "memory_unused", "text": "host n1 used at most 10 MiB of the 8192 MiB asked for",
                                 "since_ns": 1}])
    text = compose(flagged, "alice", None, None).get_content()
    assert ("Flagged by the collector (resources asked for and left unused):\n"
            "  - memory_unused: host n1 used at most 10 MiB of the 8192 MiB asked for\n") in text
    assert text.count("10 MiB of the 8192 MiB") == 1
    # A file that cannot be read: no notes, and why.
    text = compose(dict(GOOD, file=str(tmp_path / "none.h5")), "alice", None, None).get_content()
    assert "(No notes: the job's file could not be read:" in text
