"""The replay's HTML report: one self-contained page (plotly.js inlined: no network, open it from a file)
with what a replay measured as plots, from the ``-o json`` document(s) of one replay, or of two under
different configs (``--compare``) drawn over each other.

* utilisation of every resource over time;
* per queue, what it held against what it deserved over time (GPUs when the workload asks for any,
  else cpu);
* wait times per queue and per job class (box plots: median, quartiles, whiskers, outliers);
* a table per queue: waits, completion, slowdown, evictions, work lost; the jobs still waiting and why.

Pure: documents in, a string out (plotly builds the figures; nothing is read or written here).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

#: Colours of the two runs of a comparison, and of queues (plotly's default cycle).
RUN_DASH = ("solid", "dash")
PALETTE = (
    "#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52",
)  # fmt: skip


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.3g} h"


def _unit(span: float) -> tuple[str, float]:
    if span <= 600:
        return "s", 1.0
    if span <= 12 * 3600:
        return "min", 60.0
    return "h", 3600.0


def _main_resource(report: Mapping[str, Any]) -> str:
    resources = list(report["resources"])
    for r in ("nvidia.com/gpu", "cpu"):
        if r in resources:
            return r
    return resources[0] if resources else "cpu"


def _layout(fig: go.Figure, title: str, *, x: str, y: str, height: int = 380) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        template="plotly_white",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def _utilisation(runs: Sequence[tuple[str, Mapping[str, Any]]], unit: str, scale: float) -> go.Figure:
    fig = go.Figure()
    for n, (label, report) in enumerate(runs):
        series = report["series"]
        x = [t / scale for t in series["t"]]
        for i, (r, values) in enumerate(series["utilisation"].items()):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=values,
                    mode="lines",
                    line={"shape": "hv", "dash": RUN_DASH[n % 2], "color": PALETTE[i % len(PALETTE)]},
                    name=f"{r} ({label})" if len(runs) > 1 else r,
                )
            )
    fig.update_yaxes(range=[0, 105])
    return _layout(fig, "Utilisation of every resource over time", x=f"time ({unit})", y="% of capacity")


def _shares(
    runs: Sequence[tuple[str, Mapping[str, Any]]], resource: str, unit: str, scale: float
) -> go.Figure:
    fig = go.Figure()
    queues = sorted({q for _, report in runs for q in report["series"]["held"]})
    for n, (label, report) in enumerate(runs):
        series = report["series"]
        x = [t / scale for t in series["t"]]
        for i, q in enumerate(queues):
            colour = PALETTE[i % len(PALETTE)]
            suffix = f" ({label})" if len(runs) > 1 else ""
            held = series["held"].get(q, {}).get(resource)
            if held is not None:
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=held,
                        mode="lines",
                        line={"shape": "hv", "color": colour, "dash": RUN_DASH[n % 2]},
                        name=f"{q} held{suffix}",
                        legendgroup=q,
                    )
                )
            deserved = series["deserved"].get(q, {}).get(resource)
            if deserved is not None and len(runs) == 1:
                fig.add_trace(
                    go.Scatter(
                        x=x,
                        y=deserved,
                        mode="lines",
                        line={"shape": "hv", "color": colour, "dash": "dot", "width": 1},
                        name=f"{q} deserved",
                        legendgroup=q,
                    )
                )
    title = f"Held (solid) against deserved (dotted) {resource} per queue"
    if len(runs) > 1:
        title = f"{resource} held per queue: {runs[0][0]} (solid) against {runs[1][0]} (dashed)"
    return _layout(fig, title, x=f"time ({unit})", y=resource, height=460)


def _waits(runs: Sequence[tuple[str, Mapping[str, Any]]], by: str, title: str) -> go.Figure:
    fig = go.Figure()
    longest = max((max(v, default=0.0) for _, r in runs for v in r["waits"][by].values()), default=0.0)
    unit, scale = _unit(longest)
    for n, (label, report) in enumerate(runs):
        groups: Mapping[str, list[float]] = report["waits"][by]
        xs: list[str] = []
        ys: list[float] = []
        for name, values in groups.items():
            xs += [name] * len(values)
            ys += [v / scale for v in values]
        fig.add_trace(go.Box(x=xs, y=ys, name=label, boxpoints="outliers", marker_color=PALETTE[n]))
    fig.update_layout(boxmode="group", showlegend=len(runs) > 1)
    return _layout(fig, title, x="", y=f"wait ({unit})")


def _table(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    head = ["queue", "run", "jobs", "done", "waiting at end", "wait p50", "wait p95", "wait p99", "wait max"]
    head += ["completion p50", "slowdown (mean)", "evictions", "lost (resource-hours)"]
    rows = []
    queues = sorted({q for _, report in runs for q in report["queues"]})

    def num(value: Any) -> str:
        if value is None:
            return "&ndash;"
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"

    for q in queues:
        for label, report in runs:
            g = report["queues"].get(q)
            if g is None:
                continue
            cells = [
                q,
                label,
                str(g["jobs"]),
                str(g["finished"]),
                str(g["waiting"]),
                num(g["wait"]["p50"]),
                num(g["wait"]["p95"]),
                num(g["wait"]["p99"]),
                num(g["wait"]["max"]),
                num(g["completion"]["p50"]),
                num(g["slowdown"]["mean"]),
                ", ".join(f"{v} {k}" for k, v in g["evictions"].items()) or "&ndash;",
                ", ".join(f"{v:g} {k}" for k, v in g["lostHours"].items() if v) or "&ndash;",
            ]
            rows.append(
                "<tr>"
                + "".join(f"<td>{c if c.startswith('&') else html.escape(c)}</td>" for c in cells)
                + "</tr>"
            )
    return (
        '<table id="queues"><thead><tr>'
        + "".join(f"<th>{html.escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _waiting(runs: Sequence[tuple[str, Mapping[str, Any]]], limit: int = 30) -> str:
    parts = []
    for label, report in runs:
        waiting = report["waitingAtEnd"]
        if not waiting:
            continue
        items = "".join(
            f"<li><b>{html.escape(w['job'])}</b> ({html.escape(w['queue'])}, {w['waiting']:g} s): "
            f"{html.escape(w['reason'])}</li>"
            for w in waiting[:limit]
        )
        more = f"<li>... {len(waiting) - limit} more (-o json)</li>" if len(waiting) > limit else ""
        parts.append(
            f"<h3>Still waiting at the end ({html.escape(label)}: {len(waiting)})</h3><ul>{items}{more}</ul>"
        )
    return "".join(parts)


def _summary(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    lines = []
    for label, report in runs:
        use = ", ".join(
            f"{html.escape(r)} {v['meanUtilisation']:.1f}%"
            for r, v in report["resources"].items()
            if v["meanUtilisation"] is not None
        )
        a = report["all"]
        wait = a["wait"]
        waits = (
            f"mean wait {_duration(wait['mean'])}, p95 {_duration(wait['p95'])}"
            if wait["count"]
            else "no job started"
        )
        lines.append(
            f"<li><b>{html.escape(label)}</b>: {a['jobs']} jobs, {a['finished']} finished, "
            f"{a['waiting']} still waiting; makespan {_duration(report['makespan'])}; {waits}; "
            f"mean utilisation {use or '&ndash;'}</li>"
        )
    return "<ul id='summary'>" + "".join(lines) + "</ul>"


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h3 { font-size: 16px; }
table { border-collapse: collapse; font-size: 13px; margin: 12px 0; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
.plot { margin: 8px 0 16px 0; } ul { font-size: 14px; }
"""

#: Marks the page rendered once every plot has drawn (what a browser test waits for).
_READY = """<script>
(function () {
  const tick = setInterval(function () {
    const plots = document.querySelectorAll('.plotly-graph-div');
    if (plots.length && [...plots].every(p => p._fullLayout && p.querySelector('.main-svg'))) {
      clearInterval(tick); document.body.dataset.rendered = '1';
    }
  }, 50);
})();
</script>"""


def report_page(runs: Sequence[tuple[str, Mapping[str, Any]]], *, title: str = "volsched replay") -> str:
    """The page for ``runs``: ``(label, document)`` pairs, one replay or two to compare."""
    reports = [(label, doc["report"]) for label, doc in runs]
    span = max(r["end"] for _, r in reports)
    unit, scale = _unit(span)
    figures = [
        _utilisation(reports, unit, scale),
        _shares(reports, _main_resource(reports[0][1]), unit, scale),
        _waits(reports, "queues", "Wait times per queue"),
    ]
    if any(r["waits"]["classes"] for _, r in reports):
        figures.append(_waits(reports, "classes", "Wait times per job class"))
    plots = "".join(
        f'<div class="plot">{fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})}</div>'
        for i, fig in enumerate(figures)
    )
    heading = html.escape(title)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{heading}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{heading}</h1>{_summary(reports)}{plots}<h3>Per queue (seconds)</h3>{_table(reports)}"
        f"{_waiting(reports)}{_READY}</body></html>"
    )
