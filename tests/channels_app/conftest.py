"""The Telegram channel tests' fixtures: the fake Bot API (`tg`) and svc running against it
(`svc`), its chat's owner allowed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import running, settings_file, wait_status
from svcproject.assembly import build as build_parts
from svcproject.parts import Parts
from tests.channels_app.telegram_chat import settings


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture
async def svc(tg: FakeTelegram, tmp_path: Path) -> AsyncIterator[Parts]:
    with settings_file(settings(tg, tmp_path)):
        async with running(build_parts(backoff_first_s=0.2)) as runtime:
            await wait_status(runtime, "telegram", "online")
            yield runtime
