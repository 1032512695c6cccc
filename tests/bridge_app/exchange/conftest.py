"""Every exchange test runs against the fake provider, with profiles pointing at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest

from bridge_app import exchange, views
from bridge_app.response_store import ResponseStore
from bridge_app.upstream import UpstreamClient
from core import config
from harness.fakes.fake_provider import FakeProvider
from harness.own_connection import served_on_own_connection
from harness.runtime import scoped
from svcproject.parts import Parts
from tests.bridge_app.exchange.asgi_client import ORIGIN
from tests.bridge_app.exchange.harness import profiles_for


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def bridge_profiles(fake: FakeProvider) -> Iterator[FakeProvider]:
    """This worker's settings.json names the fake's profiles for the test; what was there before
    comes back after."""
    path = config.settings_path()
    before = path.read_text() if path.exists() else ""
    config.write_settings({"profiles": profiles_for(fake)})
    yield fake
    config.write_settings(json.loads(before) if before.strip() else {})


@pytest.fixture
async def bridge_parts() -> AsyncIterator[exchange.Parts]:
    """The bridge's provider client and Responses store, as svc's parts hold them, for a test
    that calls bridge_app.exchange directly. The client is made on first use in this test's
    loop: it is closed there."""
    made = exchange.Parts(UpstreamClient(), ResponseStore())
    yield made
    await made.client.aclose()


class Rows:
    """The request log, kept in memory: the rows each request records, no database."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(self, **row: Any) -> None:
        self.rows.append(row)

    async def flush(self) -> None:
        pass


@pytest.fixture
def request_rows(parts: Parts, monkeypatch: pytest.MonkeyPatch) -> Rows:
    """The parts' request log keeps its rows in memory, for the test to read."""
    rows = Rows()
    monkeypatch.setattr(parts.requestlog, "record", rows.record)
    monkeypatch.setattr(parts.requestlog, "flush", rows.flush)
    return rows


@pytest.fixture
async def http(parts: Parts) -> AsyncIterator[httpx2.AsyncClient]:
    """A loopback client of the bridge's ASGI app, as daphne would present one: from a loopback
    connection of the test's own user (the gate asks the kernel who opened it), with the test's
    parts in its scope. Their provider client is made on first use in this test's loop: it is
    closed there."""
    app = served_on_own_connection(scoped(views.application, parts))
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=ORIGIN, timeout=30) as client:
        yield client
    await parts.upstream.aclose()


@pytest.fixture
def bridge(http: httpx2.AsyncClient, fake: FakeProvider) -> tuple[Any, FakeProvider]:
    """What the live tests' `bridge` was (the daemon, the fake), with the app's client instead."""
    return http, fake
