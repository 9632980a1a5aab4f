"""Bounded YAML loading: hostile streams end in an InputError naming the source, document and line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from volsched.model.errors import InputError
from volsched.model.yamlload import ALIAS_BUDGET, MAX_DEPTH, load_all, load_one


def _bomb(levels: int, width: int = 10) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            "[" * 100_000 + "]" * 100_000,
            r"document 1: not valid YAML at line 1, column 101: nested deeper than 100",
        ),
        ("- " * 5_000 + "x\n", r"document 1: .*nested deeper than 100 levels"),
        ("".join(" " * i + "k:\n" for i in range(300)) + " " * 300 + "v\n", r"line 101.*nested deeper"),
        ("a: 1\n---\n" + "{a: " * 200 + "1" + "}" * 200 + "\n", r"document 2: .*nested deeper"),
        (_bomb(9), r"document 1: not valid YAML at line \d+, column \d+: aliases expand to more than"),
        ("a: &a [1, *a]\n", r"alias \*a refers to a node that contains it"),
        ("a: &a {b: *a}\n", r"alias \*a refers to a node that contains it"),
        ("a: *nowhere\n", r"found undefined alias 'nowhere'"),
        (b"kind: Pod\nmetadata: {name: caf\xe9}\n", r"^f.yaml: document 1: not UTF-8: byte 0xe9 at line 2"),
        ("a: " + "9" * 5000 + "\n", r"document 1: cannot load: .*digits"),
        ("a: 2026-13-45\n", r"document 1: cannot load: month must be in 1..12"),
        ("a: [1, 2\n", r"document 1: not valid YAML at line 2"),
        (
            "a: !!python/object:os.system {}\n",
            r"document 1: not valid YAML.*could not determine a constructor",
        ),
    ],
    ids=[
        "deep-flow",
        "deep-compact-sequence",
        "deep-block",
        "deep-second-document",
        "alias-bomb",
        "recursive-sequence",
        "recursive-map",
        "undefined-alias",
        "not-utf8",
        "huge-integer",
        "bad-date",
        "unclosed-flow",
        "unsafe-tag",
    ],
)
def test_a_hostile_stream_is_an_input_error_naming_where(data, message):
    with pytest.raises(InputError, match=message) as err:
        load_all(data, source="f.yaml")
    assert str(err.value).startswith("f.yaml: ")


DEEPER_THAN_LIBYAML = 1_100  # libyaml 0.2.5 (PyYAML 6.0.4's wheels) refuses 1,000 levels itself


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            "[" * DEEPER_THAN_LIBYAML,
            r"document 1: not valid YAML at line 1, column 101: nested deeper than 100",
        ),
        ("- " * DEEPER_THAN_LIBYAML + "x\n", r"document 1: not valid YAML at line 1, column 201: nested"),
        (
            "\ufeff" + "{a: " * DEEPER_THAN_LIBYAML,
            r"document 1: not valid YAML at line 1, column 401: nested",
        ),
        (
            "a: 1\n---\nb: " + "[" * DEEPER_THAN_LIBYAML,
            r"document 2: not valid YAML at line 3, column 103: nested",
        ),
        (
            "a: 1\r\n---\r\nb: 2\r\n---\r\n" + "[" * DEEPER_THAN_LIBYAML,
            r"document 3: .* line 5, column 101: nested",
        ),
        ("a: 1\n...\n---\n" + "[" * DEEPER_THAN_LIBYAML, r"document 2: .* line 4, column 101: nested"),
        (
            "a:\n  b: 1\n  c: [\n" + "  [\n" * DEEPER_THAN_LIBYAML,
            r"document 1: .* line 101, column 3: nested",
        ),
    ],
    ids=[
        "flow",
        "block",
        "after-a-bom",
        "second-document",
        "crlf-third-document",
        "after-an-end-marker",
        "lines",
    ],
)
def test_nesting_past_libyamls_own_limit_is_refused_by_the_guard_at_its_place(data, message):
    """The guard speaks first whichever PyYAML is installed: 6.0.4's libyaml stops at 1,000 levels with
    a message of its own, where its scanner reads ahead (the C parser's error said "exceeded maximum
    nesting depth" at line 1, column 1001 for the first case)."""
    with pytest.raises(InputError, match=message) as err:
        load_all(data, source="f.yaml")
    assert str(err.value).startswith("f.yaml: ")


@pytest.mark.parametrize(
    "text",
    [
        "a: &res {cpu: '1', memory: 2Gi}\nb: *res\nc: {<<: *res, cpu: '2'}\n---\n- x\n---\n",
        "k: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n",
        "when: 2026-01-01T00:00:00Z\nn: 12\nf: 1.5\nnull: ~\nyes: true\nbig: .inf\n",
        _bomb(5),  # 10^5 nodes: within the budget
    ],
    ids=["anchors-merge-and-empty-document", "just-deep-enough", "scalars", "small-expansion"],
)
def test_what_the_bounds_let_through_loads_as_the_safe_loader_loads_it(text):
    assert load_all(text, source="f.yaml") == list(yaml.safe_load_all(text))


def test_the_alias_budget_counts_the_whole_stream():
    doc = "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 600) + "]\n"
    assert ALIAS_BUDGET < 2 * 600 * 1001
    load_all(doc, source="f.yaml")
    with pytest.raises(InputError, match=r"document 2: .*aliases expand"):
        load_all(doc + "---\n" + doc, source="f.yaml")


def test_load_one_wants_at_most_one_document():
    assert load_one("", source="c") is None
    assert load_one(b"a: 1\n", source="c") == {"a": 1}
    with pytest.raises(InputError, match=r"^c: expected one YAML document, found 2"):
        load_one("a: 1\n---\nb: 2\n", source="c")


_REPO = Path(__file__).resolve().parents[2]
_YAML_FILES = sorted(
    p
    for pattern in ("examples/*.yaml", "volsched/examples/*.yaml", "manifests/*.yaml", "crds/*.yaml")
    for p in _REPO.glob(pattern)
)


@pytest.mark.parametrize("path", _YAML_FILES, ids=[str(p.relative_to(_REPO)) for p in _YAML_FILES])
def test_the_repository_yaml_loads_as_the_safe_loader_loads_it(path):
    assert load_all(path.read_bytes(), source=str(path)) == list(yaml.safe_load_all(path.read_text()))
