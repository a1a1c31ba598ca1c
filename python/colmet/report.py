"""colmet-report: one job's HTML report (colmet-report(1)).

One self-contained HTML file (PNG plots inline as data: URIs, no script, no
font or style sheet to fetch), readable on a phone: the job's metadata, a
summary table, plain-language notes that each state their rule, and plots
over time with one line per host.
"""

import argparse
import base64
import datetime
import html
import multiprocessing
import os
import sys
import webbrowser

from colmet import __version__
from colmet._errors import ColmetError
from colmet._format import human_bytes, human_energy, human_seconds, is_nan, time_scale

EX_USAGE, EX_DATAERR, EX_NOINPUT, EX_SOFTWARE, EX_CANTCREAT = 64, 65, 66, 70, 73


def _fmt_time(ts):
    if ts is None:
        return "unknown"
    local = datetime.datetime.fromtimestamp(ts.value // 1_000_000_000, tz=datetime.timezone.utc).astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S %z")


def _exit_text(status):
    if status is None:
        return "not recorded"
    if isinstance(status, int):
        if status == 0:
            return "0 (success)"
        if status > 128:
            return f"{status} (killed by signal {status - 128})"
    return str(status)


def figures(job, digest):
    """The summary's figures; those missing (a job without /summary) are
    computed from the samples."""
    s = job.summary
    nan = float("nan")

    def get(key, fallback):
        v = s.get(key)
        return float(v) if v is not None else fallback

    hosts = digest.hosts.values()
    cpu_times = [f.cpu_time_s for f in hosts if not is_nan(f.cpu_time_s)]
    peaks = [f.peak_memory for f in hosts if not is_nan(f.peak_memory)]
    duration = job.duration_s
    cpus = get("cpus", job.cpus if job.cpus is not None else nan)
    cpu_time = get("cpu_time_s", sum(cpu_times) if cpu_times else nan)
    eff_fallback = cpu_time / (duration * cpus) if duration and cpus and not is_nan(cpus) else nan
    return {
        "duration_s": duration,
        "cpus": cpus,
        "cpu_time_s": cpu_time,
        "user_time_s": get("user_time_s", nan),
        "system_time_s": get("system_time_s", nan),
        "cpu_efficiency": get("cpu_efficiency", eff_fallback),
        "peak_memory_bytes": get("peak_memory_bytes", max(peaks) if peaks else nan),
        "read_bytes": get("read_bytes", digest.totals.get("read_bytes", nan)),
        "write_bytes": get("write_bytes", digest.totals.get("write_bytes", nan)),
        "read_chars": get("read_chars", digest.totals.get("read_chars", nan)),
        "write_chars": get("write_chars", digest.totals.get("write_chars", nan)),
        "energy_j": get("energy_j", nan),
        "job_energy_j": get("job_energy_j", nan),
        "samples_received": sum(job.host(h).samples_received for h in job.hosts),
        "samples_lost": sum(job.host(h).samples_lost for h in job.hosts),
        "rows_dropped": sum(int(job.host(h).attrs.get("rows_dropped", 0)) for h in job.hosts),
        "tsdb_points_dropped": sum(int(job.host(h).attrs.get("tsdb_points_dropped", 0)) for h in job.hosts),
        "hosts_without_job_end": sum("job_end_ns" not in job.host(h).attrs for h in job.hosts),
        "gpus": digest.gpus,
    }


_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; font-size: 16px;
       line-height: 1.4; color: #1b1b1b; background: #fff; margin: 0 auto; padding: 0.75rem; max-width: 64rem; }
h1 { font-size: 1.4rem; margin: 0.2rem 0 0.6rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 1.4rem 0 0.5rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1rem; margin: 1rem 0 0.2rem; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 0.9rem; margin: 0; }
dl.meta dt { color: #555; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.3rem 0.5rem; border-bottom: 1px solid #eee; vertical-align: top; }
th { font-weight: 600; color: #333; width: 35%; }
ul.notes { list-style: none; padding: 0; margin: 0; }
ul.notes li { border-left: 4px solid #6b8fb3; background: #f3f7fb; padding: 0.4rem 0.6rem; margin: 0.4rem 0; }
ul.notes li.warn { border-color: #d08a00; background: #fdf6e7; }
.rule { display: block; font-size: 0.85rem; color: #555; }
figure.plot { margin: 0.2rem 0 1rem; }
figure.plot img { display: block; width: 100%; height: auto; max-width: 100%; }
figcaption { font-size: 0.85rem; color: #444; }
.scope { font-weight: normal; font-size: 0.9rem; color: #8a4b00; }
footer { margin-top: 2rem; font-size: 0.8rem; color: #666; overflow-wrap: anywhere; }
@media (max-width: 40rem) { body { padding: 0.5rem; font-size: 15px; } th { width: 45%; } }
"""


def _e(text):
    return html.escape(str(text), quote=True)


def _hosts_text(job, limit=8):
    hosts = job.hosts
    text = ", ".join(hosts[:limit])
    if len(hosts) > limit:
        text += f" and {len(hosts) - limit} more"
    return f"{len(hosts)}: {text}" if len(hosts) > 1 else text


def _summary_rows(fig, job):
    rows = []
    duration, cpus = fig["duration_s"], fig["cpus"]
    rows.append(("Duration", human_seconds(duration)))
    rows.append(("CPUs allocated", "unknown" if is_nan(cpus) else f"{cpus:g}"))
    rows.append(("CPU time", f"{human_seconds(fig['cpu_time_s'])} (user {human_seconds(fig['user_time_s'])}, "
                             f"system {human_seconds(fig['system_time_s'])})"))
    eff = fig["cpu_efficiency"]
    if not is_nan(eff) and not is_nan(cpus):
        rows.append(("CPU efficiency", f"{eff * 100:.1f} % of {cpus:g} CPUs: {eff * cpus:.2f} CPUs busy on "
                                       "average"))
    else:
        rows.append(("CPU efficiency", "unknown (CPUs or duration unknown)"))
    rows.append(("Peak memory", human_bytes(fig["peak_memory_bytes"])))
    rows.append(("Block I/O", f"read {human_bytes(fig['read_bytes'])}, written {human_bytes(fig['write_bytes'])}"))
    rows.append(("File I/O (read/write calls)",
                 f"read {human_bytes(fig['read_chars'])}, written {human_bytes(fig['write_chars'])}"))
    energy = fig["energy_j"]
    if not is_nan(energy):
        power = energy / duration if duration and duration > 0 else float("nan")
        shared = f"; shared with {', '.join(job.overlapping_jobs[:5])}" if job.overlapping_jobs else ""
        rows.append(("Energy (RAPL, whole node" + shared + ")",
                     f"{human_energy(energy)}, mean power {power:,.1f} W"))
    job_energy = fig["job_energy_j"]
    if not is_nan(job_energy):
        power = job_energy / duration if duration and duration > 0 else float("nan")
        rows.append(("Energy (the job's share of it)", f"{human_energy(job_energy)}, mean power {power:,.1f} W"))
    for host, index, busy, memory, gpu_energy in fig["gpus"]:
        where = f"{host} GPU {index}" if len(job.hosts) > 1 else f"GPU {index}"
        parts = [f"{busy * 100:.0f} % busy on average" if not is_nan(busy) else "utilisation unknown",
                 f"{human_bytes(memory)} peak of the job's processes" if not is_nan(memory) else
                 "the job's memory unknown"]
        if not is_nan(gpu_energy):
            parts.append(f"{human_energy(gpu_energy)} (the job's share)")
        rows.append((where, ", ".join(parts)))
    received, lost = fig["samples_received"], fig["samples_lost"]
    lost_pct = f" ({lost / (lost + received) * 100:.1f} %)" if lost else ""
    dropped = fig["rows_dropped"]
    dropped_text = f", {dropped} rows not stored by the collector" if dropped else ""
    rows.append(("Samples", f"{received} received, {lost} lost{lost_pct}{dropped_text}"))
    return rows


def _scope_text(job, plot):
    if plot.scope != "node":
        return ""
    hosts = [h for h in job.hosts if any(line.host == h for line in plot.lines)]
    shared = sorted({j for h in hosts for j in job.host(h).overlapping_jobs})
    text = "whole node, not only this job"
    if shared:
        more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
        text += f"; shared with job{'s' if len(shared) > 1 else ''} {', '.join(shared[:5])}{more}"
    return text


# How the job's context (job.context) is shown: its label and how a value reads.
_CONTEXT_ROWS = (
    ("job_name", "Job name", str), ("account", "Account", str), ("partition", "Partition", str),
    ("queue", "Queue", str), ("project", "Project", str), ("time_limit_s", "Time limit", human_seconds),
    ("job_nodes", "Nodes of the job", str), ("job_cpus", "CPUs of the job", str),
    ("host_gpus", "GPUs allocated (first host)", str),
    ("host_memory_mib", "Memory allocated (first host)", lambda mib: human_bytes(mib * 1048576)),
    ("submit_time", "Submitted", _fmt_time), ("start_time", "Started (scheduler)", _fmt_time),
)


def context_rows(job):
    """[(label, text)] for the context the scheduler gave, in a fixed order."""
    context = job.context
    return [(label, show(context[key])) for key, label, show in _CONTEXT_ROWS if key in context]


def build_html(job, digest, plot_pngs, notes_list, fig, exit_status, source_name):
    meta = [("Job", job.job_id), ("User", job.user or "unknown"), ("Hosts", _hosts_text(job)),
            ("Start", _fmt_time(job.start)),
            ("End", _fmt_time(job.end) if job.end is not None else "not ended (last data "
                                                                    f"{_fmt_time(job.last_data)})"),
            ("Duration", human_seconds(fig["duration_s"])), ("Scheduler", job.scheduler or "unknown"),
            ("Exit status", _exit_text(exit_status))]
    meta += context_rows(job)
    if job.spec:
        meta.append(("colmet spec", job.spec))
    if job.command:
        meta.append(("Command", job.command))
    if job.overlapping_jobs:
        meta.append(("Shared hosts with", ", ".join(job.overlapping_jobs)))
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>colmet report: job {_e(job.job_id)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
           f'<header><h1>colmet report: job {_e(job.job_id)}</h1><dl class="meta">']
    out += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in meta]
    out.append("</dl></header>")

    out.append('<section id="notes"><h2>Notes</h2>')
    if notes_list:
        out.append('<ul class="notes">')
        for n in notes_list:
            out.append(f'<li class="{_e(n.level)}">{_e(n.text)}<span class="rule">Rule: {_e(n.rule)}</span></li>')
        out.append("</ul>")
    else:
        out.append("<p>Nothing to point out: no rule of colmet-report(1) applies to this job.</p>")
    out.append("</section>")

    out.append('<section id="summary"><h2>Summary</h2><div class="scroll"><table>')
    for k, v in _summary_rows(fig, job):
        out.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    source = "the file's /summary" if job.has_summary else "the samples (the file has no /summary yet)"
    out.append(f"</table></div><p class=\"rule\">From {source}.</p></section>")

    out.append('<section id="plots"><h2>Over time</h2>')
    if len(job.hosts) > 1:
        out.append(f"<p>One line per host ({len(job.hosts)} hosts). Shaded: no samples stored. "
                   "A line is never drawn across a missing value.</p>")
    else:
        out.append("<p>Shaded: no samples stored. A line is never drawn across a missing value.</p>")
    if not plot_pngs:
        out.append("<p>No data to plot.</p>")
    for plot, png in plot_pngs:
        scope = _scope_text(job, plot)
        scope_html = f' <span class="scope">({_e(scope)})</span>' if scope else ""
        data = base64.b64encode(png).decode("ascii")
        out.append(f'<figure class="plot" id="plot-{_e(plot.id)}" data-plot="{_e(plot.id)}">'
                   f"<h3>{_e(plot.title)}{scope_html}</h3>"
                   f'<img src="data:image/png;base64,{data}" alt="{_e(plot.title)} over time">'
                   f"<figcaption>{_e(plot.caption)}</figcaption></figure>")
    out.append("</section>")
    made = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    out.append(f"<footer>colmet-report {__version__}, {_e(made)}, from {_e(source_name)} (layout version "
               f"{job.layout_version}). Times are local to the machine that made this report.</footer>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _workers(items):
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8, items))


_JOB = None   # the job the forked workers read


def _digest_part(hosts):
    from colmet._digest import Digest
    part = Digest(_JOB, hosts)
    part.job = None          # the parent has it
    return part


def _render(args):
    from colmet._plots import render_png
    return render_png(*args)


def digest_job(job, processes=None):
    """The job's Digest; with several CPUs and hosts, the hosts are split
    between forked processes."""
    global _JOB
    from colmet._digest import Digest
    n = processes or _workers(len(job.hosts) // 2)
    if n > 1:
        _JOB = job
        try:
            with multiprocessing.get_context("fork").Pool(n) as pool:
                parts = pool.map(_digest_part, [job.hosts[i::n] for i in range(n)])
        finally:
            _JOB = None
        for part in parts:
            part.job = job
    else:
        parts = [Digest(job)]
    return Digest.combine(job, parts).finish()


def make_report(job, exit_status=None, processes=None):
    """(html text, [(Plot, png bytes)]) for an open Job. processes: how many
    processes read the hosts and draw the plots (default: one per CPU)."""
    from colmet._notes import notes
    from colmet._plots import has_data, host_colors

    digest = digest_job(job, processes)
    fig = figures(job, digest)
    t_div, t_unit = time_scale(fig["duration_s"])
    colors = host_colors(job.hosts)
    plots = [p for p in digest.plot_list if has_data(p)]
    work = [(p, colors, t_div, t_unit, fig["duration_s"]) for p in plots]
    n = processes or _workers(len(plots) // 3)
    if n > 1:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            images = pool.map(_render, work)
    else:
        images = [_render(w) for w in work]
    pngs = list(zip(plots, images))
    status = exit_status if exit_status is not None else job.exit_status
    text = build_html(job, digest, pngs, notes(job, digest, fig), fig, status, os.path.basename(job.path))
    return text, pngs


class _HelpFormatter(argparse.HelpFormatter):
    """Options as "-o,--output FILE", the form man/lint.sh reads."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=30, width=100)

    def _format_action_invocation(self, action):
        if not action.option_strings:
            return super()._format_action_invocation(action)
        text = ",".join(action.option_strings)
        if action.nargs != 0:
            text += " " + self._format_args(action, self._get_default_metavar_for_optional(action))
        return text


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.exit(EX_USAGE, f"{self.prog}: {message} (see --help)\n")


def _parser():
    p = _Parser(prog="colmet-report", formatter_class=_HelpFormatter, add_help=False,
                description="colmet-report: one job's HTML report (plots, summary, notes) from its colmet HDF5 file")
    p.add_argument("-h", "--help", action="help", help="Print this help message and exit")
    p.add_argument("file", metavar="JOB.h5", help="The job's HDF5 file, as colmet-collector wrote it")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="Write the report here (default: the file's name with .html, in the current directory)")
    p.add_argument("--png", metavar="DIR", help="Also write each plot as DIR/<plot>.png")
    p.add_argument("--open", action="store_true", help="Open the report in a web browser when written")
    p.add_argument("--exit-status", metavar="N", type=int,
                   help="The job's exit status, for the header (colmet-job run --report passes it)")
    p.add_argument("--version", action="version", version=f"colmet-report {__version__}",
                   help="Display program version information and exit")
    return p


def _write(path, data):
    tmp = f"{path}.tmp-{os.getpid()}"
    mode = "w" if isinstance(data, str) else "wb"
    with open(tmp, mode, **({"encoding": "utf-8"} if mode == "w" else {})) as f:
        f.write(data)
    os.replace(tmp, path)


def main(argv=None):
    args = _parser().parse_args(argv)
    prog = "colmet-report"
    if not os.path.exists(args.file):
        print(f"{prog}: {args.file}: no such file", file=sys.stderr)
        return EX_NOINPUT
    output = args.output or os.path.splitext(os.path.basename(args.file))[0] + ".html"
    try:
        import colmet
        job = colmet.open(args.file)
        text, pngs = make_report(job, args.exit_status)
    except ColmetError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EX_DATAERR
    except MemoryError:
        print(f"{prog}: {args.file}: out of memory while reading the file", file=sys.stderr)
        return EX_SOFTWARE
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: one line, the traceback only when asked for
        if os.environ.get("COLMET_DEBUG"):
            raise
        print(f"{prog}: {args.file}: internal error {type(e).__name__}: {e} (COLMET_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return EX_SOFTWARE
    written = []
    try:
        _write(output, text)
        written.append(output)
        if args.png:
            os.makedirs(args.png, exist_ok=True)
            for plot, png in pngs:
                path = os.path.join(args.png, f"{plot.id}.png")
                _write(path, png)
                written.append(path)
    except OSError as e:
        print(f"{prog}: cannot write {e.filename or output}: {e.strerror or e}", file=sys.stderr)
        return EX_CANTCREAT
    for path in written:
        print(path)
    if args.open:
        url = "file://" + os.path.abspath(output)
        if not webbrowser.open(url):
            print(f"{prog}: no web browser found to open {url}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
