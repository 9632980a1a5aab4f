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

    queues = Table(title="Queues", title_justify="left")
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
        queues.add_column(col, justify="right" if col in ("weight", "share") else "left")
    for name, depth in queue_tree_order(data["queues"]):
        q = data["queues"][name]
        share = "-" if q["share"] is None else f"{q['share']:.2f}"
        queues.add_row(
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
    console.print(queues)

    namespaces = Table(title="Namespaces", title_justify="left")
    namespaces.add_column("namespace")
    namespaces.add_column("weight", justify="right")
    namespaces.add_column("allocated")
    for ns, v in data["namespaces"].items():
        namespaces.add_row(ns, str(v["weight"]), _fmt(v["allocated"]))
    console.print(namespaces)

    if data["podgroups"]:
        groups = Table(title="PodGroups", title_justify="left")
        for col in ("podgroup", "owner", "queue", "phase", "minMember", "scheduled"):
            groups.add_column(col)
        for key, g in data["podgroups"].items():
            groups.add_row(
                key, g.get("owner") or "", g["queue"], g["phase"], str(g["minMember"]), str(g["scheduled"])
            )
        console.print(groups)

    by_node: dict[str, list[str]] = {}
    pending: list[str] = []
    for key, p in data["pods"].items():
        if p["node"]:
            by_node.setdefault(p["node"], []).append(key)
        elif p["phase"] == "Pending":
            pending.append(key)
    placement = Table(title="Placement", title_justify="left")
    placement.add_column("node")
    placement.add_column("pods", justify="right")
    placement.add_column("which")
    for node in sorted(by_node):
        pods = by_node[node]
        shown = ", ".join(pods[:6]) + (f", ... (+{len(pods) - 6})" if len(pods) > 6 else "")
        placement.add_row(node, str(len(pods)), shown)
    if pending:
        placement.add_row(
            "[yellow](pending)[/yellow]",
            str(len(pending)),
            ", ".join(pending[:6]) + (" ..." if len(pending) > 6 else ""),
        )
    console.print(placement)

    done = [e for e in data.get("evictions") or [] if e.get("result", "evicted") == "evicted"]
    refused = [e for e in data.get("evictions") or [] if e.get("result", "evicted") != "evicted"]
    if done:
        ev = Table(title="Evictions", title_justify="left")
        for col in ("pod", "node", "action", "reason"):
            ev.add_column(col)
        for e in done:
            ev.add_row(e["pod"], e["node"], e["action"], e["reason"])
        console.print(ev)
    if refused:
        table = Table(title="Evictions refused (PodDisruptionBudget)", title_justify="left")
        for col in ("pod", "node", "action", "why"):
            table.add_column(col)
        for e in refused:
            table.add_row(e["pod"], e["node"], e["action"], e["detail"] or "")
        console.print(table)

    if data["events"]:
        events = Table(title="Why pods wait", title_justify="left")
        for col in ("object", "reason", "message"):
            events.add_column(col)
        for e in data["events"][:40]:
            events.add_row(e["object"], e["reason"], e["message"])
        if len(data["events"]) > 40:
            events.add_row("...", "", f"{len(data['events']) - 40} more (use -o json)")
        console.print(events)


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
