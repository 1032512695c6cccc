"""The fake targets: a strict local Web Push service and an Apprise json:// sink, each served
from a thread of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.apprise_target import JsonSink
from tests.fakes.push_endpoint import PushEndpoint


@pytest.fixture
def push() -> Iterator[PushEndpoint]:
    server = PushEndpoint().start()
    yield server
    server.stop()


@pytest.fixture
def sink() -> Iterator[JsonSink]:
    server = JsonSink().start()
    yield server
    server.stop()
