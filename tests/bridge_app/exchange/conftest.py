"""Every exchange test runs against the fake provider, with profiles pointing at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from svcproject import config
from tests.bridge_app.exchange.harness import profiles_for
from tests.fakes.fake_provider import FakeProvider


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
