"""Django's requests and the session sockets wait for a start under way (core.runtime
`Runtime.until_started`, called by svcproject/request_threads.py and the consumers on the
runtime their scope's parts hold): the port opens at
once (contract §12), and a request before the start has mirrored settings.json would say that
profiles or workspaces are not there. Seen as a flake: GET /api/profiles right after start
answered without the profile settings.json names."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from core import runtime as runtime_module
from core.runtime import Runtime


def assert_returns_at_once(waiting: Coroutine[Any, Any, None]) -> None:
    """The coroutine finishes on its first step: it never waits for anything."""
    try:
        waiting.send(None)
    except StopIteration:
        return
    waiting.close()
    raise AssertionError("it waited")


async def test_a_request_during_start_waits_for_it_and_one_after_does_not() -> None:
    runtime = Runtime()
    runtime.loop = asyncio.get_running_loop()  # what start() sets first
    waiting = asyncio.create_task(runtime.until_started())
    await asyncio.sleep(0.2)
    assert not waiting.done()  # held while the start runs
    runtime.ready.set()
    await asyncio.wait_for(waiting, 1)
    assert_returns_at_once(runtime.until_started())  # started


async def test_a_runtime_of_another_loop_never_holds_a_request() -> None:
    runtime = Runtime()
    runtime.loop = asyncio.new_event_loop()  # a test's runtime, not this server's
    try:
        assert_returns_at_once(runtime.until_started())
    finally:
        runtime.loop.close()


async def test_a_start_that_hangs_holds_a_request_only_so_long(monkeypatch) -> None:
    monkeypatch.setattr(runtime_module, "START_WAIT_S", 0.1)
    runtime = Runtime()
    runtime.loop = asyncio.get_running_loop()
    await asyncio.wait_for(runtime.until_started(), 1)  # answered, not stuck
