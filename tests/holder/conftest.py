"""A real holder process for each test, and svc's client connected to it."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from holder.client import HolderClient


@pytest.fixture
async def holder(tmp_path: Path) -> AsyncIterator[HolderClient]:
    exits: list[tuple[str, int]] = []
    client = HolderClient(tmp_path / "holder", lambda sid, code: exits.append((sid, code)))
    client.exits = exits  # type: ignore[attr-defined]
    await client.connect(start=True)
    yield client
    await client.close()
    with contextlib.suppress(ProcessLookupError):  # it may have left already, holding nothing
        os.kill(int((tmp_path / "holder" / "holder.pid").read_text()), signal.SIGTERM)
