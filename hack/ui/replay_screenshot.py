"""Regenerate docs/replay-compare.png: the README's worked example (team A's weight doubled) as the
replay's HTML report, rendered in the headless Chromium the browser tests use.

    .venv/bin/python hack/ui/replay_screenshot.py
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.browser import open_browser  # noqa: E402
from volsched.cli import main  # noqa: E402


def report_html() -> str:
    examples = ROOT / "examples"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["simulate", "-f", str(examples / "replay-teams.yaml"), "--trace", str(examples / "replay-teams-day.jsonl"),
             "--compare", str(examples / "replay-teams-a-weight-2.yaml"), "-o", "html"]
        )  # fmt: skip
    assert code == 0
    return out.getvalue()


async def shoot(page: Path, png: Path, workdir: Path) -> None:
    async with open_browser(workdir) as p:
        await p.goto(page.as_uri())
        await p.wait_for("document.body.dataset.rendered === '1'", timeout=120, what="every plot drawn")
        await p.screenshot(png)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(report_html())
        asyncio.run(shoot(page, ROOT / "docs" / "replay-compare.png", Path(tmp)))
    print("wrote docs/replay-compare.png")
