"""Only the leader hands kopf the webhooks' client config (volsched.operator.kopfrun.gate): nothing while
following, the latest config on becoming leader, each new one at once while leading, and the latest
again every reassert_every seconds (what a former leader withdrew as it stopped is put back)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from volsched.operator.kopfrun import gate


async def _configs(queue: asyncio.Queue[str]) -> AsyncIterator[str]:
    while True:
        yield await queue.get()


async def _next(it: AsyncIterator[str]) -> str:
    return await asyncio.wait_for(anext(it), timeout=5)


def test_only_the_leader_hands_configs_over() -> None:
    async def run() -> None:
        queue: asyncio.Queue[str] = asyncio.Queue()
        leading = asyncio.Event()
        got: list[str] = []
        looks = 0

        def is_leader() -> bool:
            nonlocal looks
            looks += 1
            return leading.is_set()

        async def looked_since_taken() -> None:
            """Until the gate has taken the queued config and asked again whether it leads (so it
            decided with that config in hand)."""
            while not queue.empty():
                await asyncio.sleep(0.001)
            seen = looks
            while looks < seen + 3:
                await asyncio.sleep(0.001)

        it = gate(_configs(queue), is_leader, look_every=0.01, reassert_every=3600)

        async def collect() -> None:
            async for c in it:
                got.append(c)

        task = asyncio.create_task(collect())
        await queue.put("a")
        await asyncio.wait_for(looked_since_taken(), timeout=5)  # following: it had "a" and handed nothing
        assert got == []
        leading.set()
        while got != ["a"]:
            await asyncio.sleep(0.01)
        await queue.put("b")  # a new config while leading: at once
        while got != ["a", "b"]:
            await asyncio.sleep(0.01)
        leading.clear()
        await queue.put("c")  # following again: kept, not handed
        await asyncio.wait_for(looked_since_taken(), timeout=5)
        assert got == ["a", "b"]
        leading.set()  # leading again: the latest one
        while got != ["a", "b", "c"]:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run())


def test_the_leader_hands_the_latest_again_every_reassert_every() -> None:
    async def run() -> None:
        queue: asyncio.Queue[str] = asyncio.Queue()
        await queue.put("a")
        it = gate(_configs(queue), lambda: True, look_every=0.01, reassert_every=0.05)
        assert [await _next(it) for _ in range(3)] == ["a", "a", "a"]
        await it.aclose()  # type: ignore[attr-defined]

    asyncio.run(run())


def test_the_servers_generator_is_closed_with_the_gate() -> None:
    closed: list[bool] = []

    async def server() -> AsyncIterator[str]:
        try:
            yield "a"
            await asyncio.Event().wait()
            yield "never"
        finally:
            closed.append(True)

    async def run() -> None:
        it = gate(server(), lambda: True, look_every=0.01, reassert_every=3600)
        assert await _next(it) == "a"
        await it.aclose()  # type: ignore[attr-defined]

    asyncio.run(run())
    assert closed == [True]
