"""svc's parts in-process: what the daemon builds at bind, built by a test instead (contract
§12), so services, consumers, the ASGI apps and the MCP tools run without a daphne. The parts
reach an edge as they do in the daemon: in the scope (`scoped`, svcproject.parts.InScope) or as
constructor arguments."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from svcproject.assembly import build as build_parts
from svcproject.parts import InScope, Parts


@contextmanager
def built(parts: Parts | None = None) -> Iterator[Parts]:
    """The daemon's parts for the block (built, not started: no task, no process); what the
    test's sessions left running in the holder is ended after it."""
    from core import config
    from harness.holders import end_holder

    try:
        yield parts or build_parts()
    finally:
        end_holder(config.svc_home())


@asynccontextmanager
async def running(parts: Parts | None = None) -> AsyncIterator[Parts]:
    """Started parts for the block, stopped at its end — as the daemon does at bind and at
    SIGTERM. Needs the database (pytest-django's `transactional_db`)."""
    with built(parts) as handed:
        await handed.runtime.start()
        try:
            yield handed
        finally:
            await handed.runtime.stop()


def scoped(app: Any, parts: Parts) -> InScope:
    """`app` (a router, a consumer's `as_asgi()`, an ASGI app) with `parts` in every scope, as
    the daemon's outermost app puts them."""
    return InScope(app, parts)


def client(parts: Parts, **defaults: Any) -> Any:
    """Django's test client whose requests carry `parts` as the daemon's ASGI requests do: a
    view finds them in `request.scope` (Django's test client makes WSGI requests, which have
    no scope of their own)."""
    from django.test import Client
    from django.test.client import ClientHandler

    from core.asgi_helpers import PARTS

    class Handler(ClientHandler):
        def get_response(self, request: Any) -> Any:
            request.scope = {"type": "http", PARTS: parts}
            return super().get_response(request)

    made = Client(**defaults)
    made.handler = Handler(made.handler.enforce_csrf_checks)
    return made


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


async def wait_status(parts: Parts, name: str, wanted: str, limit: float = 20) -> dict:
    """The supervised service `name` once its status is `wanted` (a tunnel, a channel)."""
    import asyncio

    async with asyncio.timeout(limit):
        while True:
            states = {s["name"]: s for s in parts.supervisor.statuses()}
            if states.get(name, {}).get("status") == wanted:
                return states[name]
            await asyncio.sleep(0.02)
