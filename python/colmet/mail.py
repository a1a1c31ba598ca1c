"""colmet-mail-summary(1): mail a job's user the summary of the job, as
colmet-collector's on-job-end command (the summary as JSON on standard input,
colmet-collector(8), "On job end"), through the host's sendmail."""

import argparse
import json
import os
import pwd
import subprocess
import sys
from email.message import EmailMessage
from email.policy import default as _default_policy

from colmet import __version__
from colmet._format import human_bytes, human_energy, human_seconds, is_nan
from colmet.report import _HelpFormatter, _Parser

PROG = "colmet-mail-summary"
# Headers on one line each (a folded Subject is valid, but harder to read
# and to filter on).
email_policy = _default_policy.clone(max_line_length=None)
EX_USAGE, EX_DATAERR, EX_NOUSER, EX_UNAVAILABLE, EX_TEMPFAIL = 64, 65, 67, 69, 75


class SummaryError(Exception):
    pass


def read_summary(text):
    """The on-job-end JSON, checked: a dict with job_id (text) and summary (a dict of numbers or nulls)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SummaryError(f"standard input is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise SummaryError("standard input is not a JSON object")
    job_id = data.get("job_id")
    if not isinstance(job_id, str) or not job_id:
        raise SummaryError("the summary has no job_id")
    summary = data.get("summary")
    if not isinstance(summary, dict):
        raise SummaryError(f"job {job_id}: the summary has no 'summary' object")
    for key, value in summary.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise SummaryError(f"job {job_id}: summary field {key!r} is not a number")
    for key in ("user", "file", "cgroup_warning"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise SummaryError(f"job {job_id}: {key!r} is not text")
    flags = data.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, dict) and isinstance(f.get("name"), str)
                                              and isinstance(f.get("text"), str) for f in flags):
        raise SummaryError(f"job {job_id}: 'flags' is not a list of {{name, text}} objects")
    return data


def address_of(user, aliases, domain):
    """The user's mail address: the aliases file's, else user@domain, else
    the local user (the MTA delivers it); None when there is none."""
    if not user:
        return None
    if user in aliases:
        return aliases[user]
    if domain:
        return f"{user}@{domain}"
    try:
        pwd.getpwnam(user)
    except KeyError:
        return None
    return user


def read_aliases(path):
    """ "user address" per line; # comments."""
    aliases = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or "@" not in parts[1]:
                raise SummaryError(f"{path}, line {number}: expected 'user address'")
            aliases[parts[0]] = parts[1]
    return aliases


def _get(summary, key):
    v = summary.get(key)
    return float("nan") if v is None else float(v)


def _percent(x):
    return "unknown" if is_nan(x) else f"{x * 100:.1f} %"


def job_notes(path):
    """The report's notes on the job (colmet-report(1), NOTES) but its flags, from its file; [] and a reason when
    unreadable."""
    try:
        import colmet
        from colmet._notes import notes
        from colmet.report import digest_job, figures

        job = colmet.open(path)
        digest = digest_job(job, 1)
        # The flags have their own paragraph, from the summary itself.
        return [n.text for n in notes(job, digest, figures(job, digest)) if not n.rule.startswith("flag ")], None
    except Exception as e:  # the mail goes without its notes, and says why
        return [], f"{type(e).__name__}: {e}"


def compose(data, address, sender, report_hint):
    s = data["summary"]
    job_id, user = data["job_id"], data.get("user") or "unknown"
    eff = _get(s, "cpu_efficiency")
    peak = _get(s, "peak_memory_bytes")
    subject = f"[colmet] job {job_id} ended: {_percent(eff)} CPU efficiency, {human_bytes(peak)} peak memory"
    lines = [f"Job {job_id} (user {user}) has ended." if data.get("complete", True) else
             f"Job {job_id} (user {user}): {int(_get(s, 'hosts_without_job_end'))} of its hosts sent no end; "
             "this summary is from what arrived before they fell silent.", ""]
    cpus = _get(s, "cpus")
    rows = [
        ("Duration", human_seconds(_get(s, "duration_s"))),
        ("CPUs", "unknown" if is_nan(cpus) else f"{cpus:g}"),
        ("CPU time", f"{human_seconds(_get(s, 'cpu_time_s'))} (user {human_seconds(_get(s, 'user_time_s'))}, "
                     f"system {human_seconds(_get(s, 'system_time_s'))})"),
        ("CPU efficiency", _percent(eff)),
        ("Peak memory", human_bytes(peak)),
        ("Disk read", human_bytes(_get(s, "read_bytes"))),
        ("Disk written", human_bytes(_get(s, "write_bytes"))),
    ]
    if not is_nan(_get(s, "energy_j")):
        rows.append(("Node energy", human_energy(_get(s, "energy_j"))))
    if not is_nan(_get(s, "job_energy_j")):
        rows.append(("Job's energy", human_energy(_get(s, "job_energy_j"))))
    lost = int(_get(s, "samples_lost")) if not is_nan(_get(s, "samples_lost")) else 0
    received = int(_get(s, "samples_received")) if not is_nan(_get(s, "samples_received")) else 0
    rows.append(("Samples", f"{received} received, {lost} lost"))
    width = max(len(name) for name, _ in rows)
    lines += [f"  {name:<{width}}  {value}" for name, value in rows]
    if data.get("cgroup_warning"):
        lines += ["", f"Warning: {data['cgroup_warning']}"]
    flags = data.get("flags") or []
    if flags:
        lines += ["", "Flagged by the collector (resources asked for and left unused):"] + \
                 [f"  - {f['name']}: {f['text']}" for f in flags]
    path = data.get("file")
    notes, why = job_notes(path) if path else ([], "no job file named")
    if notes:
        lines += ["", "Notes:"] + [f"  - {n}" for n in notes]
    elif why:
        lines += ["", f"(No notes: the job's file could not be read: {why}.)"]
    if path:
        lines += ["", "The full report, with plots, on the host that keeps the job files:",
                  f"  colmet-report {path}"]
    if report_hint:
        lines += ["", report_hint]
    msg = EmailMessage(policy=email_policy)
    msg["To"] = address
    if sender:
        msg["From"] = sender
    msg["Subject"] = subject
    msg["X-Colmet-Job"] = job_id
    msg.set_content("\n".join(lines) + "\n", cte="8bit")
    return msg


def _parser():
    p = _Parser(prog=PROG, formatter_class=_HelpFormatter, add_help=False,
                description="colmet-mail-summary: mail a job's user its summary (colmet-collector --on-job-end: "
                            "the summary as JSON on standard input)")
    p.add_argument("-h", "--help", action="help", help="Print this help message and exit")
    p.add_argument("--sendmail", metavar="COMMAND", default="/usr/sbin/sendmail",
                   help="The sendmail program that takes the mail (it gets -t -oi; default: /usr/sbin/sendmail)")
    p.add_argument("--from", dest="sender", metavar="ADDRESS",
                   help="The From address (default: what sendmail puts, the collector's user on this host)")
    p.add_argument("--domain", metavar="DOMAIN", help="Mail user@DOMAIN (default: the local user, whom the MTA "
                                                      "delivers to or forwards)")
    p.add_argument("--aliases", metavar="FILE", help="'user address' lines: these users' addresses, before --domain")
    p.add_argument("--report-hint", metavar="TEXT", help="A last paragraph, such as how to reach the job files")
    p.add_argument("--print", dest="dry_run", action="store_true",
                   help="Print the mail on standard output instead of sending it")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}",
                   help="Display program version information and exit")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        data = read_summary(sys.stdin.read())
        aliases = read_aliases(args.aliases) if args.aliases else {}
    except SummaryError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return EX_DATAERR
    except OSError as e:
        print(f"{PROG}: {e.filename}: {e.strerror}", file=sys.stderr)
        return EX_DATAERR
    user = data.get("user") or os.environ.get("COLMET_JOB_USER") or ""
    data["user"] = user or None
    address = address_of(user, aliases, args.domain)
    if address is None:
        why = "its user is unknown" if not user else f"no mail address for user {user!r} (not a local user here; " \
                                                     "--domain or --aliases give one)"
        print(f"{PROG}: job {data['job_id']}: not mailed: {why}", file=sys.stderr)
        return EX_NOUSER
    msg = compose(data, address, args.sender, args.report_hint)
    if args.dry_run:
        sys.stdout.write(msg.as_string())
        return 0
    try:
        done = subprocess.run([args.sendmail, "-t", "-oi"], input=msg.as_bytes(), capture_output=True)
    except OSError as e:
        print(f"{PROG}: job {data['job_id']}: cannot run {args.sendmail}: {e.strerror}", file=sys.stderr)
        return EX_UNAVAILABLE
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        print(f"{PROG}: job {data['job_id']}: {args.sendmail} failed (exit {done.returncode})"
              f"{': ' + err[-1] if err else ''}", file=sys.stderr)
        return EX_TEMPFAIL
    print(f"{PROG}: job {data['job_id']}: summary mailed to {address}")
    return 0
