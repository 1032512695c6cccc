"""Every exchange test runs against the fake provider, with profiles pointing at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest

from bridge_app import views
from core import config
from harness.fakes.fake_provider import FakeProvider
from harness.own_connection import served_on_own_connection
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


@pytest.fixture(autouse=True)
async def upstream_client(svc_runtime: Any) -> AsyncIterator[None]:
    """The runtime's provider client is made on first use in this test's loop: close it there."""
    yield
    await svc_runtime.upstream.aclose()


class Rows:
    """The request log, kept in memory: the rows each request records, no database."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def record(self, **row: Any) -> None:
        self.rows.append(row)

    async def flush(self) -> None:
        pass


@pytest.fixture
def request_rows(svc_runtime: Any) -> Rows:
    svc_runtime.requestlog = Rows()
    return svc_runtime.requestlog


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    """A loopback client of the bridge's ASGI app, as daphne would present one: from a loopback
    connection of the test's own user (the gate asks the kernel who opened it)."""
    transport = httpx2.ASGITransport(app=served_on_own_connection(views.application))
    async with httpx2.AsyncClient(transport=transport, base_url=ORIGIN, timeout=30) as client:
        yield client


@pytest.fixture
def bridge(http: httpx2.AsyncClient, fake: FakeProvider) -> tuple[Any, FakeProvider]:
    """What the live tests' `bridge` was (the daemon, the fake), with the app's client instead."""
    return http, fake
