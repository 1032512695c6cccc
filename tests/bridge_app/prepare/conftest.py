"""Every `translate.prepare` test sees the harness's profiles in settings.json."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from core import config
from tests.bridge_app.prepare.harness import PROFILES


@pytest.fixture(autouse=True)
def profiles() -> Iterator[None]:
    """The profiles above in this worker's settings.json; whatever was there comes back after."""
    path = config.settings_path()
    before = path.read_text() if path.exists() else ""
    config.write_settings({"profiles": PROFILES})
    yield
    config.write_settings(json.loads(before) if before.strip() else {})
