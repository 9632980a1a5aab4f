"""A real headless Chromium (Debian's ``chromium`` package) driven over the DevTools protocol, for the
dashboard tests: open a page, evaluate JavaScript in it, wait for what it renders, take screenshots.

Without Chromium the tests skip and say how to get it (``make test-deps`` installs it with apt-get).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

CANDIDATES = ("chromium", "chromium-browser")


def chromium_binary() -> str:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "headless Chromium is not installed: `make test-deps` installs Debian's package "
        "(apt-get install chromium)"
    )


class Page:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        msg_id = next(self._ids)
        await self.ws.send_json({"id": msg_id, "method": method, "params": params})
        while True:
            msg = await self.ws.receive_json()
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result") or {}

    async def evaluate(self, expression: str) -> Any:
        out = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression!r} threw: {out['exceptionDetails']}")
        return out["result"].get("value")

    async def wait_for(self, expression: str, *, timeout: float = 30.0, what: str = "") -> Any:
        """Poll ``expression`` in the page until it is truthy (bounded: fails the test after ``timeout``)."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = await self.evaluate(expression)
            except RuntimeError as exc:  # the page is still loading
                last = exc
            if last and not isinstance(last, Exception):
                return last
            await asyncio.sleep(0.2)
        pytest.fail(f"timed out after {timeout}s waiting for {what or expression} (last: {last!r})")

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'", what=url)

    async def screenshot(self, path: Path) -> Path:
        """The whole page (beyond the viewport) as PNG."""
        height = await self.evaluate("document.documentElement.scrollHeight")
        width = await self.evaluate("document.documentElement.scrollWidth")
        out = await self.send(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        path.write_bytes(base64.b64decode(out["data"]))
        return path


@contextlib.asynccontextmanager
async def open_browser(workdir: Path, *, width: int = 1280, height: int = 1000) -> AsyncIterator[Page]:
    profile = workdir / "chromium-profile"
    profile.mkdir(parents=True, exist_ok=True)
    port_file = profile / "DevToolsActivePort"
    port_file.unlink(missing_ok=True)  # a previous run's: its port is gone
    log = (workdir / "chromium.log").open("wb")
    proc = subprocess.Popen(
        [chromium_binary(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start:\n{(workdir / 'chromium.log').read_text()[-3000:]}")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = json.loads(await resp.text())
            target = next(t for t in targets if t.get("type") == "page")
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                page = Page(ws)
                await page.send("Page.enable")
                yield page
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
