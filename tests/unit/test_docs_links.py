"""Every internal link of the README, the docs and hack/'s build notes leads somewhere: a relative link
to a file or folder that exists, and an ``#anchor`` to a heading of its page, by GitHub's rules for
heading anchors (lowercase; punctuation but ``-`` and ``_`` dropped; spaces to ``-``; a repeated heading
gets ``-1``, ``-2``...). Links are read as CommonMark reads them (markdown-it), so code blocks are never
links."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
#: Pages whose links are checked too, though the README need not lead to them: the build notes in hack/.
NOTES = sorted((ROOT / "hack").glob("*/README.md"))
MD = MarkdownIt("commonmark").enable("table")


def github_slug(text: str) -> str:
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _text(inline: Token) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


@cache
def anchors(page: Path) -> frozenset[str]:
    tokens = MD.parse(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            slug = github_slug(_text(tokens[i + 1]))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(found)


def links(page: Path) -> list[str]:
    out = []
    for token in MD.parse(page.read_text(encoding="utf-8")):
        for child in token.children or []:
            target = child.attrGet("href") if child.type == "link_open" else child.attrGet("src")
            if child.type in ("link_open", "image") and isinstance(target, str):
                out.append(target)
    return out


def broken(page: Path, target: str) -> str | None:
    """Why ``target``, a link on ``page``, leads nowhere (None when it leads somewhere or is external)."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return None
    path, _, anchor = target.partition("#")
    dest = (page.parent / unquote(path)).resolve() if path else page
    shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
    if not dest.exists():
        return f"{shown} does not exist"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{shown} has no heading #{anchor}"
    return None


@pytest.mark.parametrize("page", PAGES + NOTES, ids=lambda p: str(p.relative_to(ROOT)))
def test_internal_links_lead_somewhere(page: Path) -> None:
    problems = [f"{target}: {why}" for target in links(page) if (why := broken(page, target))]
    assert not problems, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Coming from Volcano", "coming-from-volcano"),
        ("`volsched simulate`", "volsched-simulate"),
        (
            "Over time: what a change does to each queue's waits",
            "over-time-what-a-change-does-to-each-queues-waits",
        ),
        ("The dashboard and /metrics ask who you are", "the-dashboard-and-metrics-ask-who-you-are"),
        ("Sessions, actions and plugins", "sessions-actions-and-plugins"),
        ("snake_case and dash-es", "snake_case-and-dash-es"),
    ],
)
def test_github_slugs(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere)\n\n```\n[code](nope.md)\n```\n"
    )
    assert [t for t in links(page) if broken(page, t)] == ["missing.md", "#nowhere"]


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    """A page no link leads to is lost to readers: every docs/*.md is reached from the README (through the
    index or another page)."""
    seen, todo = {ROOT / "README.md"}, [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        for target in links(page):
            path = target.partition("#")[0]
            if not path or re.match(r"[a-z][a-z0-9+.-]*:", path):
                continue
            dest = (page.parent / unquote(path)).resolve()
            if dest.suffix == ".md" and dest.exists() and dest not in seen:
                seen.add(dest)
                todo.append(dest)
    assert sorted(str(p.relative_to(ROOT)) for p in set(PAGES) - seen) == []
