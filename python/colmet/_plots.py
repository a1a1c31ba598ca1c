"""Drawing the report's plots with matplotlib (Agg, no display, no pyplot
state) into PNG bytes."""

import io

import matplotlib

matplotlib.use("Agg")

from matplotlib import colormaps  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

import numpy as np  # noqa: E402

from colmet._format import byte_scale, number_scale  # noqa: E402

GAP_COLOR = "#d62728"
LEGEND_HOSTS = 10      # more hosts than this: no per-host legend (one line each all the same)
ANTIALIAS_HOSTS = 16   # more hosts than this: lines drawn without antialiasing (faster, smaller PNG)
# 770 x 385 pixels: on a phone the image is shown about 400 pixels wide, so the
# fonts are large for a desktop and still legible there.
WIDTH_IN, HEIGHT_IN, DPI = 7.0, 3.5, 110
FONT = {"font.size": 11, "axes.labelsize": 11, "xtick.labelsize": 10.5, "ytick.labelsize": 10.5}


def host_colors(hosts):
    hosts = list(hosts)
    if len(hosts) <= 10:
        cmap = colormaps["tab10"]
        return {h: cmap(i) for i, h in enumerate(hosts)}
    cmap = colormaps["viridis"]
    return {h: cmap(i / max(len(hosts) - 1, 1)) for i, h in enumerate(hosts)}


def _finite_max(plot):
    m = np.nan
    for line in plot.lines:
        y = line.y[np.isfinite(line.y)]
        if y.size:
            m = np.nanmax([m, y.max()])
    return m


def has_data(plot):
    return any(np.isfinite(line.y).any() for line in plot.lines)


def y_scale(plot):
    """(divisor, y-axis label) for the plot's values."""
    top = _finite_max(plot)
    if plot.kind == "bytes":
        div, unit = byte_scale(top)
        return div, unit
    if plot.kind == "bytes/s":
        div, unit = byte_scale(top)
        return div, f"{unit}/s"
    if plot.kind == "count/s":
        div, prefix = number_scale(top)
        return div, f"{prefix}events/s" if prefix else "events/s"
    return 1.0, plot.ylabel


def _runs(x, y):
    """The stretches of finite values of a line, as (n, 2) arrays: a line
    stops at every NaN (a gap or a missing value) and starts again after it.
    A stretch of one value is a point."""
    ok = np.isfinite(y)
    if ok.all():
        return [np.column_stack([x, y])]
    edges = np.flatnonzero(np.diff(np.concatenate([[False], ok, [False]]).astype(np.int8)))
    return [np.column_stack([x[a:b], y[a:b]]) for a, b in zip(edges[::2], edges[1::2])]


def render_png(plot, colors, t_div, t_unit, duration_s=None):
    """The plot as PNG bytes; the x axis from the job's start to its end.
    All lines go into one LineCollection (one artist, not one per host)."""
    with matplotlib.rc_context(FONT):
        return _render(plot, colors, t_div, t_unit, duration_s)


def _render(plot, colors, t_div, t_unit, duration_s):
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    y_div, y_label = y_scale(plot)
    hosts_seen, segments, seg_colors, seg_styles, points, point_colors = [], [], [], [], [], []
    for line in plot.lines:
        for run in _runs(line.x / t_div, line.y / y_div):
            if len(run) == 1:
                points.append(run[0])
                point_colors.append(colors[line.host])
                continue
            segments.append(run)
            seg_colors.append(colors[line.host])
            seg_styles.append("dashed" if line.style == "--" else "solid")
        if line.host not in hosts_seen:
            hosts_seen.append(line.host)
    if segments:
        ax.add_collection(LineCollection(segments, colors=seg_colors, linestyles=seg_styles, linewidths=1.2,
                                         antialiaseds=len(hosts_seen) <= ANTIALIAS_HOSTS))
    if points:
        points = np.array(points)
        ax.scatter(points[:, 0], points[:, 1], s=9, c=point_colors, linewidths=0)
    ax.autoscale_view()
    for x0, x1 in plot.gaps:
        ax.axvspan(x0 / t_div, x1 / t_div, color=GAP_COLOR, alpha=0.18, linewidth=0)
    for x in plot.segments:
        ax.axvline(x / t_div, color="black", linestyle="--", linewidth=0.9)
    for y, label in plot.hlines:
        ax.axhline(y / y_div, color="0.35", linestyle=":", linewidth=1.2)
        ax.annotate(label, xy=(0.005, y / y_div), xycoords=("axes fraction", "data"), xytext=(0, 2),
                    textcoords="offset points", fontsize=9.5, color="0.25")
    ax.set_xlabel(f"time since the job started ({t_unit})")
    ax.set_ylabel(y_label)
    top = _finite_max(plot)
    limits = [y for y, _ in plot.hlines]
    top = max([v for v in [top] + limits if np.isfinite(v)] or [1.0]) / y_div
    ax.set_ylim(0, top * 1.08 if top > 0 else 1.0)
    if duration_s and np.isfinite(duration_s) and duration_s > 0:
        ax.set_xlim(0, duration_s / t_div)
    ax.grid(True, alpha=0.3)

    handles = []
    if len(hosts_seen) <= LEGEND_HOSTS and (len(hosts_seen) > 1 or plot.styles):
        handles += [Line2D([], [], color=colors[h], linewidth=1.5, label=h) for h in hosts_seen]
    for style, meaning in plot.styles:
        handles.append(Line2D([], [], color="0.3", linestyle=style, linewidth=1.2, label=meaning))
    if plot.gaps:
        handles.append(Patch(color=GAP_COLOR, alpha=0.25, label="no samples"))
    if plot.segments:
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.9, label="events changed"))
    columns = 4
    rows = -(-len(handles) // columns)
    if handles:   # above the plot, so that the plot keeps the whole width on a phone
        ax.legend(handles=handles, fontsize=10, loc="lower left", bbox_to_anchor=(0, 1.0), borderaxespad=0.2,
                  ncol=min(columns, len(handles)), frameon=False, handlelength=1.8, columnspacing=1.2)
    # Fixed margins: tight_layout() would draw the figure once more.
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.15, top=1 - (0.06 + 0.27 * rows) / HEIGHT_IN)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
