"""Plain-language notes on a job, in the spirit of seff and jobstats. Each
note is produced by one rule, and says which (colmet-report(1), NOTES)."""

from dataclasses import dataclass

import numpy as np

from colmet._format import human_bytes, human_seconds, is_nan

LOW_EFFICIENCY = 0.5        # job CPU efficiency below this: a note
IDLE_HOST = 0.1             # a host busy below this share of its CPUs: idle
IMBALANCE = 2.0             # max / min CPU time of the hosts
MEMORY_NEAR_LIMIT = 0.9     # peak / cgroup limit
THROTTLED = 0.05            # throttled periods / periods


@dataclass
class Note:
    level: str   # "warn" (worth acting on) or "info"
    text: str
    rule: str


def _list(items, limit=5):
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def notes(job, digest, fig):
    out = []
    duration = fig["duration_s"]
    cpus = fig["cpus"]

    if not job.has_summary:
        out.append(Note("warn", "The file has no summary: the job has not ended yet, or its end never reached "
                                "the collector. The figures below are computed from the samples stored so far.",
                        "no /summary group in the file"))

    eff = fig["cpu_efficiency"]
    if not is_nan(eff) and eff < LOW_EFFICIENCY and not is_nan(cpus):
        used = f"{eff * cpus:.2f}" if eff * cpus < 1 else f"{eff * cpus:.1f}"
        out.append(Note("warn", f"The job used {used} of its {cpus:g} CPUs on average ({eff * 100:.1f} % CPU "
                                "efficiency).",
                        f"CPU time / (duration × CPUs allocated) below {LOW_EFFICIENCY:.0%}"))

    per_host = {h: f.cpu_time_s for h, f in digest.hosts.items() if not is_nan(f.cpu_time_s)}
    if len(job.hosts) > 1 and duration and duration > 0:
        idle = []
        for h, t in per_host.items():
            n = job.host(h).cpus
            if n and t / duration < IDLE_HOST * n:
                idle.append(f"{h} ({t / duration:.2f} of {n:g} CPUs)")
        if idle and len(idle) < len(job.hosts):
            out.append(Note("warn", f"{len(idle)} of the job's {len(job.hosts)} hosts were almost idle: "
                                    f"{_list(idle)}.",
                            f"a host's CPU time / duration below {IDLE_HOST:.0%} of its CPUs"))
        busy = [t for t in per_host.values() if t > 0]
        if len(busy) >= 2 and max(busy) >= IMBALANCE * min(busy):
            out.append(Note("info", f"CPU time differed between hosts: from {human_seconds(min(busy))} to "
                                    f"{human_seconds(max(busy))}.",
                            f"largest / smallest CPU time of the hosts of at least {IMBALANCE:g}"))

    near = []
    for h, f in digest.hosts.items():
        if not is_nan(f.memory_limit) and f.memory_limit > 0 and not is_nan(f.peak_memory):
            share = f.peak_memory / f.memory_limit
            if share >= MEMORY_NEAR_LIMIT:
                near.append((h, share, f.peak_memory, f.memory_limit))
    rule = f"peak memory / cgroup memory limit of at least {MEMORY_NEAR_LIMIT:.0%}"
    if len(job.hosts) == 1 and near:
        _, share, peak, limit = near[0]
        out.append(Note("warn", f"Memory peaked at {share * 100:.0f} % of the cgroup limit ({human_bytes(peak)} "
                                f"of {human_bytes(limit)}).", rule))
    elif near:
        where = [f"{h} {share * 100:.0f} % ({human_bytes(peak)} of {human_bytes(limit)})"
                 for h, share, peak, limit in near]
        out.append(Note("warn", f"Memory peaked near the cgroup limit on {len(near)} of the job's {len(job.hosts)} "
                                f"hosts: {_list(where)}.", rule))

    periods = sum(f.nr_periods for f in digest.hosts.values() if not is_nan(f.nr_periods))
    throttled = sum(f.nr_throttled for f in digest.hosts.values() if not is_nan(f.nr_throttled))
    if periods > 0 and throttled / periods >= THROTTLED:
        out.append(Note("warn", f"The job was throttled in {throttled / periods * 100:.0f} % of its CPU quota's "
                                "periods: it wanted more CPU than its quota gave.",
                        f"throttled periods / periods (cgroup_cpu nr_throttled, nr_periods) of at least "
                        f"{THROTTLED:.0%}"))

    lost, received = fig["samples_lost"], fig["samples_received"]
    if lost:
        total = lost + received
        out.append(Note("warn", f"{lost} of {total} samples ({lost / total * 100:.1f} %) were lost on the way to "
                                "the collector.", "samples_lost of the hosts above 0"))
    if fig.get("hosts_without_job_end"):
        n = fig["hosts_without_job_end"]
        which = "The job_end" if len(job.hosts) == 1 else f"The job_end of {n} of the {len(job.hosts)} hosts"
        out.append(Note("warn", f"{which} never reached the collector (it was unreachable when the job ended, or "
                                "the sampler was killed): the job's last moments may be missing.",
                        "a host without the attribute job_end_ns"))
    if fig.get("rows_dropped"):
        out.append(Note("warn", f"The collector received {fig['rows_dropped']} rows it could not store (its disk "
                                "was full, or the file could not be written): they are missing from the plots.",
                        "rows_dropped of the hosts above 0"))
    if fig.get("tsdb_points_dropped"):
        out.append(Note("info", f"{fig['tsdb_points_dropped']} values of this job never reached the time-series "
                                "store (the collector's queue for it was full, or the store refused them): the "
                                "dashboards miss them; this file has them all.",
                        "tsdb_points_dropped of the hosts above 0"))
    if digest.gap_count:
        out.append(Note("info", f"The data has {digest.gap_count} gap{'s' if digest.gap_count > 1 else ''} "
                                f"({human_seconds(digest.gap_seconds)} in total) with no samples stored; the "
                                "plots shade them and leave the lines open there.",
                        "an interval between samples longer than 1.5 × the sampling interval around it (not "
                        "one of a late sample's two intervals)"))

    for backend, statuses in sorted(digest.unsupported.items()):
        for status in sorted(statuses):
            if status.startswith("unsupported:"):
                out.append(Note("info", f"{backend}: these events could not be counted on this machine and are "
                                        f"stored as NaN, not 0: {status.split(':', 1)[1].strip()}.",
                                "the backend's last_status"))
            elif status.startswith("paused"):
                out.append(Note("info", f"{backend} was paused during the job (colmet-ctl --pause-perfhw): its "
                                        "values are NaN meanwhile.", "the backend's last_status"))
            else:
                out.append(Note("info", f"{backend} reported: {status}.", "the backend's last_status"))

    for backend, n in sorted(digest.segment_changes.items()):
        out.append(Note("info", f"The {backend} metrics changed {n} time{'s' if n > 1 else ''} during the job "
                                "(for example colmet-ctl --perfhw-list): each change starts a new segment, marked "
                                "by a dashed line; rates start again after it.",
                        "more than one segment_<N> group"))

    if digest.ipc:
        ipc = float(np.mean(digest.ipc))
        if ipc < 0.5:
            out.append(Note("info", f"Instructions per cycle averaged {ipc:.2f}: the CPUs mostly waited, often "
                                    "for memory.", "instructions / cycles over the job below 0.5"))

    if digest.node_backends:
        shared = job.overlapping_jobs
        what = _list(sorted(digest.node_backends))
        if shared:
            out.append(Note("info", f"{what} measure the whole node, not the job, and other jobs ran on the same "
                                    f"hosts at the same time: {_list(shared)}.",
                            "node-scope backends and the hosts' overlapping_jobs"))
        else:
            out.append(Note("info", f"{what} measure the whole node, not only the job; no other job was seen "
                                    "on its hosts meanwhile.", "node-scope backends, no overlapping_jobs"))

    if job.cgroup_warning:
        out.append(Note("warn", f"The sampler warned: {job.cgroup_warning}", "cgroup_warning in the file"))
    for name, (text, _since) in sorted(job.flags.items()):
        out.append(Note("warn", f"The collector flagged this job ({name}): {text}.", f"flag {name} in /flags"))
    few = [h for h, f in digest.hosts.items() if f.rows < 3]
    if few:
        out.append(Note("info", f"Too few samples for rates on {_list(few)} (fewer than 3): a job shorter "
                                "than two sampling periods shows little over time.", "fewer than 3 rows"))
    return out
