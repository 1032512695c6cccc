"""A tunnel provider's `run` as a task in a test: until it reports its URL, and its stop."""

from __future__ import annotations

import asyncio


async def until_up(task: asyncio.Task, urls: list[str]) -> None:
    async with asyncio.timeout(20):
        while not urls:
            assert not task.done(), task.exception()
            await asyncio.sleep(0.02)


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    async with asyncio.timeout(20):
        await asyncio.gather(task, return_exceptions=True)
