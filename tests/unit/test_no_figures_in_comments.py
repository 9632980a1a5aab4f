"""The code's comments and docstrings state no measured figures: those live in benchmark output and in
docs/benchmarks (the developers' guide). A comment keeps the reason in words; what it cost, how much
faster, at what load, belongs to a dated benchmark doc with the commit it came from.

Scans every comment and every module, class and function docstring under ``volsched/``,
``volsched_dev/`` and ``bench/`` for the shapes measured figures take (a duration or size with its unit,
a percentage, a ratio, a rate, "about N", "N -> M", "under load"). Settings' defaults, limits of
Kubernetes or the kernel, syntax examples in literals and tables of parameters are not measured figures:
the few that match a pattern are in :data:`ALLOWED`, each with its reason; a benchmark's workload, goal
and way of measuring, which its prose states in figures, are in :data:`BENCH_ALLOWED`, by reason. This is
a text check, not a proof: a figure written in words alone ("a tenth of a bind's CPU") passes it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("volsched", "volsched_dev", "bench")

#: The shapes of a measured figure in prose (case-insensitive).
FIGURE = re.compile(
    r"""(?xi)
    (?<![\w.])\d[\d,.]*\s?(?:ms|us|µs|ns|MiB|KiB|GiB|MB|KB|GB)\b      # 7.3 ms, 80-100 KiB
    | (?<![\w.])\d[\d,.]*\s?s\sof\s(?:CPU|collection|wall)            # 1-2 s of collection
    | (?<![\w.])\d[\d,.]*\s?(?:-|to)\s?\d[\d,.]*\s?s\b                # 2-3 s, 1.5 to 2.5 s
    | (?<![\w.])\d+(?:\.\d+)?x(?!\w)                                 # 1.6x
    | (?<![\w.])\d[\d,.]*\s?%                                          # 53-64%
    | (?<![\w.])\d[\d,.]*\s?[a-z]+/s\b                                 # 561 pods/s
    | \b(?:about|some|nearly|almost|roughly|around)\s\d                # about 130
    | ~\s?\d                                                           # ~10
    | \d\s?(?:->|→)\s?\d                                               # 7.3-14 -> 2.6-4.3
    | \bunder\sload\b | \bat\sload\s\d                                 # under load, at load 13
    | \b(?:two|three|four|five|ten|\d+)(?:\sto\s\w+)?\stimes\s(?:faster|slower|more|less|fewer|as)\b
    | \b(?:a|one)\s(?:tenth|third|quarter|half)\sof\sa\s(?:second|millisecond)
    """
)

#: Inline literals (``30s``, ``"25%"``): syntax, not figures.
LITERAL = re.compile(r"``[^`]*``|\"[^\"\n]*\"")

#: (path, the text the pattern matched): legitimate matches, each with why it is no measured figure.
ALLOWED: dict[tuple[str, str], str] = {
    ("volsched/kube/rest.py", "128 KiB"): "the apiserver's gzip threshold, its behaviour",
    ("volsched/kube/writer.py", "256 KiB"): "Kubernetes' limit on an object's annotations",
    ("volsched/model/admitted.py", "256 KiB"): "Kubernetes' limit on an object's annotations",
    ("volsched/model/validation.py", "256 KiB"): "Kubernetes' limit on an object's annotations",
    ("volsched/model/yamlload.py", "about 1"): "how deep a Pod template nests, not a cost",
    ("volsched/operator/__init__.py", "5 ms"): "Python's default switch interval",
    ("volsched/plugins/rescheduling/strategies/nodeutilization.py", "0%"): "what an absent resource counts",
    ("volsched/simulate/scenarios.py", "100 ms"): "the scenarios' parameters (a table)",
    ("volsched/simulate/scenarios.py", "200 ms"): "the scenarios' parameters (a table)",
    ("volsched/simulate/scenarios.py", "500 ms"): "the scenarios' parameters (a table)",
    ("volsched/simulate/scenarios.py", "1000 ms"): "the scenarios' parameters (a table)",
    ("volsched/simulate/scenarios.py", "1200 ms"): "the scenarios' parameters (a table)",
    ("volsched/simulate/scenarios.py", "50%"): "a threshold an issue's text gives, a parameter",
    ("volsched/threadslice.py", "100 ms"): "the kernel's range for a slice (its documentation)",
    ("volsched/threadslice.py", "0.75 ms"): "the kernel's default slice (its documentation)",
}

#: bench/'s prose says in figures what a benchmark runs, what it aims at and how it measures: no measured
#: figures (a run's results go in its output and docs/benchmarks). By reason, the (path, matched text) pairs.
BENCH_ALLOWED: dict[str, tuple[tuple[str, str], ...]] = {
    "a goal the benchmark is judged against (its issue's)": (
        ("bench/bench_allocate.py", "2x"),
        ("bench/bench_dra.py", "2x"),
        ("bench/bench_fairshare.py", "99%"),
        ("bench/sim_vs_real.py", "10%"),
        ("bench/starvation.py", "90%"),
        ("bench/starvation.py", "5x"),
    ),
    "its workload's parameters (sizes, shares, run times, the intervals it sweeps)": (
        ("bench/bench_cache.py", "1%"),
        ("bench/bench_cache.py", "70%"),
        ("bench/bench_evict.py", "1%"),
        ("bench/bench_evict.py", "80%"),
        ("bench/bench_parse.py", "5 MB"),
        ("bench/bench_parse.py", "50 MB"),
        ("bench/bench_replay.py", "four times as"),
        ("bench/builders.py", "64 GiB"),
        ("bench/gil_switch.py", "0.5 ms"),
        ("bench/sim_vs_real.py", "3 to 10 s"),
        ("bench/sim_vs_real.py", "about 1"),
        ("bench/starvation.py", "about 9"),
    ),
    "how it measures (a poll's period, the events' spacing, a percentile)": (
        ("bench/arriving_latency.py", "1%"),
        ("bench/bench_recovery.py", "20 ms"),
        ("bench/pod_path_cpu.py", "1 ms"),
        ("bench/volume_wait.py", "50 ms"),
    ),
    "the platform's own (the kernel's CPU tick, Python's default switch interval)": (
        ("bench/bind_body_cpu.py", "10 ms"),
        ("bench/gil_switch.py", "5 ms"),
    ),
}
ALLOWED.update({pair: why for why, pairs in BENCH_ALLOWED.items() for pair in pairs})


def _prose(source: str) -> list[tuple[int, str]]:
    """Every comment block (consecutive comment lines joined) and every docstring, with its first line."""
    found: list[tuple[int, str]] = []
    block: list[str] = []
    first = last = -1
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        line = token.start[0]
        if block and line != last + 1:
            found.append((first, " ".join(block)))
            block = []
        if not block:
            first = line
        block.append(re.sub(r"^#+:?\s*", "", token.string.strip()))
        last = line
    if block:
        found.append((first, " ".join(block)))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = node.body[0] if node.body else None
            if (
                isinstance(doc, ast.Expr)
                and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)
            ):
                found.append((doc.lineno, " ".join(doc.value.value.split())))
    return found


def figures(root: Path = ROOT) -> list[tuple[str, int, str, str]]:
    """(path, line, matched text, context) of every measured-figure shape in the scanned trees' prose."""
    hits: list[tuple[str, int, str, str]] = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, text in _prose(path.read_text(encoding="utf-8")):
                text = LITERAL.sub(" ", " ".join(text.split()))
                for match in FIGURE.finditer(text):
                    context = text[max(0, match.start() - 60) : match.end() + 40]
                    hits.append((rel, line, match.group(0), context))
    return hits


def test_no_measured_figure_in_comments() -> None:
    found = [hit for hit in figures() if (hit[0], hit[2]) not in ALLOWED]
    assert not found, (
        "measured figures in comments or docstrings (move them to docs/benchmarks):\n"
        + "\n".join(f"{path}:{line}: [{matched}] ...{context}..." for path, line, matched, context in found)
    )


def test_every_allowance_still_matches() -> None:
    """An allowance no text needs any more is taken out: the list stays the short, reviewed one."""
    used = {(hit[0], hit[2]) for hit in figures()}
    assert sorted(set(ALLOWED) - used) == []


@pytest.mark.parametrize(
    "text",
    [
        "their p90 7.3-14 -> 2.6-4.3 ms",
        "about 130 ms of CPU on every start",
        "53-64% more round trips",
        "561 pods/s with 32 in flight",
        "1-2 s of collection in every later session",
        "a walk of every rejection, ~10 ms at 50,000",
        "kopf's import (about 50 of CPU under load)",
        "two to three times faster than calling it",
        "a third of a second at every start",
        "it bound 0.35-0.7x as fast",
    ],
)
def test_the_shapes_are_seen(text: str) -> None:
    assert FIGURE.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "Parse a Go-style duration (``30s``, ``500ms``)",
        'a percentage of the cluster (``cpu: "25%"``)',
        "the kubernetes client 29.x-31.x",
        "an apiserver answering 5xx, a 1xx skipped",
        "scheduling.k8s.io/v1beta1",
        "1,000 x 10,000 pods",
        "fails at load time",
    ],
)
def test_syntax_is_no_figure(text: str) -> None:
    assert not FIGURE.search(LITERAL.sub(" ", text))
