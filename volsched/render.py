"""Tables for people: placements, queue and namespace shares, and why pods wait (rich)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from volsched.model.resources import format_amount


def _fmt(amounts: Mapping[str, Any] | None) -> str:
    if amounts is None:
        return "-"
    parts = []
    for name, value in amounts.items():
        if name == "pods":
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{name}={format_amount(name, float(value))}")
        else:
            parts.append(f"{name}={value}")
    return " ".join(parts) or "-"


def queue_tree_order(queues: Mapping[str, Any]) -> list[tuple[str, int]]:
    """Queue names in tree order (each parent followed by its children, by name), with their depth."""
    children: dict[str | None, list[str]] = {}
    for name in sorted(queues):
        parent = queues[name].get("parent")
        children.setdefault(parent if parent in queues else None, []).append(name)
    out: list[tuple[str, int]] = []
    seen: set[str] = set()

    def walk(name: str, depth: int) -> None:
        if name in seen:
            return
        seen.add(name)
        out.append((name, depth))
        for child in children.get(name, []):
            walk(child, depth + 1)

    for top in children.get(None, []):
        walk(top, 0)
    out.extend((name, 0) for name in sorted(queues) if name not in seen)  # a cycle the engine reported
    return out


def render_simulation(data: Mapping[str, Any], console: Console, *, header: bool = True) -> None:
    """Render the ``-o json`` document as tables (``header``: the line saying how many sessions ran)."""
    if header:
        console.print(f"[bold]volsched simulate[/bold]: settled after {data['sessions']} session(s)")
    console.print(_queues_table(data["queues"]))
    console.print(_namespaces_table(data["namespaces"]))
    if data["podgroups"]:
        console.print(_podgroups_table(data["podgroups"]))
    console.print(_placement_table(data["pods"]))
    evictions = data.get("evictions") or []
    done = [e for e in evictions if e.get("result", "evicted") == "evicted"]
    refused = [e for e in evictions if e.get("result", "evicted") != "evicted"]
    if done:
        console.print(_evictions_table(done, title="Evictions", last="reason"))
    if refused:
        console.print(_evictions_table(refused, title="Evictions refused (PodDisruptionBudget)", last="why"))
    if data["events"]:
        console.print(_events_table(data["events"]))


def _queues_table(queues: Mapping[str, Any]) -> Table:
    table = Table(title="Queues", title_justify="left")
    for col in (
        "queue",
        "weight",
        "state",
        "deserved",
        "allocated",
        "request",
        "guarantee",
        "realCapability",
        "share",
    ):
        table.add_column(col, justify="right" if col in ("weight", "share") else "left")
    for name, depth in queue_tree_order(queues):
        q = queues[name]
        share = "-" if q["share"] is None else f"{q['share']:.2f}"
        table.add_row(
            "  " * depth + ("└ " if depth else "") + name,
            str(q["weight"]),
            q.get("state", ""),
            _fmt(q["deserved"]),
            _fmt(q["allocated"]),
            _fmt(q["request"]),
            _fmt(q["guarantee"]),
            _fmt(q["realCapability"]),
            share,
        )
    return table


def _namespaces_table(namespaces: Mapping[str, Any]) -> Table:
    table = Table(title="Namespaces", title_justify="left")
    table.add_column("namespace")
    table.add_column("weight", justify="right")
    table.add_column("allocated")
    for ns, v in namespaces.items():
        table.add_row(ns, str(v["weight"]), _fmt(v["allocated"]))
    return table


def _podgroups_table(podgroups: Mapping[str, Any]) -> Table:
    table = Table(title="PodGroups", title_justify="left")
    for col in ("podgroup", "owner", "queue", "phase", "minMember", "scheduled"):
        table.add_column(col)
    for key, g in podgroups.items():
        table.add_row(
            key, g.get("owner") or "", g["queue"], g["phase"], str(g["minMember"]), str(g["scheduled"])
        )
    return table


def _placement_table(pods: Mapping[str, Any]) -> Table:
    """The pods by node (the first six named), and the pending ones."""
    by_node: dict[str, list[str]] = {}
    pending: list[str] = []
    for key, p in pods.items():
        if p["node"]:
            by_node.setdefault(p["node"], []).append(key)
        elif p["phase"] == "Pending":
            pending.append(key)
    table = Table(title="Placement", title_justify="left")
    table.add_column("node")
    table.add_column("pods", justify="right")
    table.add_column("which")
    for node in sorted(by_node):
        on = by_node[node]
        shown = ", ".join(on[:6]) + (f", ... (+{len(on) - 6})" if len(on) > 6 else "")
        table.add_row(node, str(len(on)), shown)
    if pending:
        table.add_row(
            "[yellow](pending)[/yellow]",
            str(len(pending)),
            ", ".join(pending[:6]) + (" ..." if len(pending) > 6 else ""),
        )
    return table


def _evictions_table(evictions: list[Mapping[str, Any]], *, title: str, last: str) -> Table:
    """Evictions carried out (``last`` is their reason) or refused (``last``: why, the API's detail)."""
    table = Table(title=title, title_justify="left")
    for col in ("pod", "node", "action", last):
        table.add_column(col)
    for e in evictions:
        table.add_row(
            e["pod"], e["node"], e["action"], e["reason"] if last == "reason" else e["detail"] or ""
        )
    return table


def _events_table(events: list[Mapping[str, Any]]) -> Table:
    """Why pods wait: the first 40 events."""
    table = Table(title="Why pods wait", title_justify="left")
    for col in ("object", "reason", "message"):
        table.add_column(col)
    for e in events[:40]:
        table.add_row(e["object"], e["reason"], e["message"])
    if len(events) > 40:
        table.add_row("...", "", f"{len(events) - 40} more (use -o json)")
    return table


#: The most pods the replay's table lists (``-o json`` has every one), and the most waiting jobs.
REPLAY_ROWS = 60
WAITING_ROWS = 20


def _sec(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _report_table(title: str, groups: Mapping[str, Any], *, first: str, shares: bool) -> Table:
    table = Table(title=title, title_justify="left")
    columns = [
        first,
        "jobs",
        "done",
        "waiting",
        "wait p50",
        "p95",
        "p99",
        "max",
        "completion p50",
        "slowdown",
    ]
    columns += ["evicted", "lost"] + (["held", "deserved"] if shares else [])
    for col in columns:
        table.add_column(col, justify="left" if col == first else "right")
    for name, g in groups.items():
        w = g["wait"]
        lost = g["lostHours"]
        lost_text = (
            f"{g['lostGpuHours']:g} GPU-h"
            if g["lostGpuHours"]
            else ", ".join(f"{v:g} {r}-h" for r, v in lost.items() if v) or "-"
        )
        row = [
            name,
            str(g["jobs"]),
            str(g["finished"]),
            str(g["waiting"]),
            _sec(w["p50"]),
            _sec(w["p95"]),
            _sec(w["p99"]),
            _sec(w["max"]),
            _sec(g["completion"]["p50"]),
            "-" if g["slowdown"]["mean"] is None else f"{g['slowdown']['mean']:.2f}",
            ", ".join(f"{n} {a}" for a, n in g["evictions"].items()) or "-",
            lost_text,
        ]
        if shares:
            row.append(", ".join(f"{r} {v:.3g}" for r, v in g["meanHeld"].items()))
            row.append(", ".join(f"{r} {v:.3g}" for r, v in g["meanDeserved"].items()))
        table.add_row(*row)
    return table


def render_replay(data: Mapping[str, Any], console: Console) -> None:
    """Render ``volsched simulate --replay``'s ``-o json`` document: the clock, the report per queue and
    per job class (times in seconds), the jobs still waiting and why, and every pod's times when there
    are few (``-o json`` has them all)."""
    replay, report = data["replay"], data["report"]
    pods = replay["pods"]
    console.print(
        f"[bold]volsched simulate --replay[/bold]: {report['end']:g} s of cluster time from {replay['start']}, "
        f"{replay['sessions']} session(s) ({replay['skippedSessions']} skipped: nothing new); "
        f"{report['all']['finished']} of {report['all']['jobs']} job(s) finished, makespan {report['makespan']:g} s"
    )
    use = ", ".join(
        f"{r} {v['meanUtilisation']:.1f}% of {v['capacity']:g}"
        for r, v in report["resources"].items()
        if v["meanUtilisation"] is not None
    )
    console.print(f"mean utilisation: {use or '-'}")
    console.print(
        _report_table(
            "Queues (seconds; held and deserved: means over the run)",
            report["queues"],
            first="queue",
            shares=True,
        )
    )
    if report["classes"]:
        console.print(_report_table("Job classes", report["classes"], first="class", shares=False))
    waiting = report["waitingAtEnd"]
    if waiting:
        table = Table(title=f"Still waiting at the end ({len(waiting)})", title_justify="left")
        for col in ("job", "queue", "waiting", "why"):
            table.add_column(col, justify="right" if col == "waiting" else "left")
        for w in waiting[:WAITING_ROWS]:
            table.add_row(w["job"], w["queue"], _sec(w["waiting"]), w["reason"])
        if len(waiting) > WAITING_ROWS:
            table.add_row("...", "", "", f"{len(waiting) - WAITING_ROWS} more (use -o json)")
        console.print(table)
    if len(pods) <= REPLAY_ROWS:
        table = Table(title="Pods (seconds from the start)", title_justify="left")
        for col in ("pod", "node", "created", "started", "finished", "evicted"):
            table.add_column(col, justify="left" if col in ("pod", "node") else "right")
        for key, p in pods.items():
            table.add_row(
                key,
                p["node"] or "-",
                _sec(p["created"]),
                _sec(p["started"]),
                _sec(p["finished"]),
                _sec(p["evicted"]),
            )
        console.print(table)


def render_comparison(data: Mapping[str, Any], console: Console) -> None:
    """Render ``--compare``'s ``-o json`` document: per queue, each figure in both runs and the change."""
    a, b = data["a"], data["b"]
    console.print(
        f"[bold]volsched simulate --compare[/bold]: the same workload, {a['label']} (A) against {b['label']} (B); "
        f"makespan {a['report']['makespan']:g} s -> {b['report']['makespan']:g} s"
    )
    table = Table(title="Per queue, A -> B (seconds)", title_justify="left")
    columns = ("queue", "wait p50", "wait p95", "wait max", "completion p50", "slowdown", "waiting at end")
    for col in columns:
        table.add_column(col, justify="left" if col == "queue" else "right")

    def cell(figure: Mapping[str, Any]) -> str:
        va, vb, change = figure["a"], figure["b"], figure["change"]
        if change is None:
            return f"{_sec(va)} -> {_sec(vb)}"
        sign = "+" if change > 0 else ""
        colour = "red" if change > 0 else "green" if change < 0 else ""
        delta = f"{sign}{_sec(change)}"
        return f"{_sec(va)} -> {_sec(vb)} " + (f"[{colour}]({delta})[/{colour}]" if colour else f"({delta})")

    for name, row in data["diff"].items():
        waiting = row["waitingAtEnd"]
        table.add_row(
            name,
            cell(row["waitP50"]),
            cell(row["waitP95"]),
            cell(row["waitMax"]),
            cell(row["completionP50"]),
            cell(row["slowdownMean"]),
            f"{waiting['a']} -> {waiting['b']}",
        )
    console.print(table)
