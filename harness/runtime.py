"""svc's runtime in-process: what the daemon builds at bind, built by a test instead (contract
§12), so services, consumers, the ASGI apps and the MCP tools run without a daphne."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from core.runtime import Runtime, install
from svcproject.assembly import build as build_runtime


@contextmanager
def installed(runtime: Runtime | None = None) -> Iterator[Runtime]:
    """A runtime as `current()` for the block (not started: no task, no process)."""
    from core import config
    from harness.holders import end_holder

    runtime = runtime or build_runtime()
    install(runtime)
    try:
        yield runtime
    finally:
        install(None)
        end_holder(config.svc_home())  # what the test's sessions left running


@asynccontextmanager
async def running(runtime: Runtime | None = None) -> AsyncIterator[Runtime]:
    """A started runtime for the block, stopped at its end — as the daemon does at bind and at
    SIGTERM. Needs the database (pytest-django's `transactional_db`)."""
    with installed(runtime) as rt:
        await rt.start()
        try:
            yield rt
        finally:
            await rt.stop()


@contextmanager
def settings_file(settings: dict[str, Any]) -> Iterator[None]:
    """settings.json holds `settings` for the block; the worker's own file comes back after."""
    from core import config

    with kept_settings():
        config.write_settings(settings)
        yield


@contextmanager
def kept_settings() -> Iterator[None]:
    """Whatever the block writes to settings.json, the file is as it was after it (or absent, if
    it was): a test's settings never leak into the next test on the worker."""
    from core import config

    path = config.settings_path()
    before = path.read_text() if path.exists() else None
    try:
        yield
    finally:
        if before is None:
            path.unlink(missing_ok=True)
        elif not path.exists() or path.read_text() != before:
            path.write_text(before)  # a new mtime: svc's settings cache reads it again


async def wait_status(runtime: Runtime, name: str, wanted: str, limit: float = 20) -> dict:
    """The supervised service `name` once its status is `wanted` (a tunnel, a channel)."""
    import asyncio

    async with asyncio.timeout(limit):
        while True:
            states = {s["name"]: s for s in runtime.supervisor.statuses()}
            if states.get(name, {}).get("status") == wanted:
                return states[name]
            await asyncio.sleep(0.02)
