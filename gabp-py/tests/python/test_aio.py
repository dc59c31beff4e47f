"""gabp.aio: many calls in flight, events with async for, and cancelling a task cancels the call in the mod."""

from __future__ import annotations

import asyncio
import time

import pytest

import gabp
import gabp.aio
from conftest import TOKEN, DemoMod
from test_mod import Farm


def test_64_calls_in_flight(demo: DemoMod) -> None:
    async def main() -> None:
        async with await gabp.aio.Bridge.connect(demo.endpoint, TOKEN) as game:
            results = await asyncio.gather(*(game.call("demo/echo", value=i) for i in range(64)))
            assert results == [{"value": i} for i in range(64)]
            assert "demo/echo" in {t["name"] for t in await game.tools()}

    asyncio.run(main())


def test_errors_are_the_same_classes(demo: DemoMod) -> None:
    async def main() -> None:
        game = await gabp.aio.Bridge.connect(demo.endpoint, TOKEN)
        with pytest.raises(gabp.InvalidParams) as raised:
            await game.call("world/get_block", x="a", y=0, z=0)
        assert raised.value.field and raised.value.field.endswith("/x")
        with pytest.raises(gabp.Timeout):
            await game.call("demo/sleep", ms=3000, timeout=0.1)
        with pytest.raises(gabp.ToolNotFound):
            await game.call("world/nothing")
        await game.close()

    asyncio.run(main())


def test_cancelling_the_task_cancels_the_call_in_the_mod() -> None:
    farm = Farm()
    endpoint = farm.start(endpoint="tcp://127.0.0.1:0", token=TOKEN)

    async def main() -> None:
        game = await gabp.aio.Bridge.connect(endpoint, TOKEN)
        task = asyncio.ensure_future(game.call("demo/sleep", ms=20000))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        started = time.monotonic()
        while not farm.cancelled.is_set() and time.monotonic() - started < 5:
            await asyncio.sleep(0.02)
        assert farm.cancelled.is_set(), "the tool saw its call cancelled"
        assert await game.call("demo/echo", value="after") == {"value": "after"}
        await game.close()

    try:
        asyncio.run(main())
    finally:
        farm.stop()


def test_events_with_async_for(demo: DemoMod) -> None:
    async def main() -> None:
        game = await gabp.aio.Bridge.connect(demo.endpoint, TOKEN)
        events = await game.subscribe("world/block_change")
        for x in range(2):
            await game.call("world/place_block", x=x, y=6, z=2, blockType="stone")
        seen = []
        async for event in events:
            seen.append(event.seq)
            if len(seen) == 2:
                break
        assert seen == sorted(seen)
        await events.close()
        await game.close()

    asyncio.run(main())
