"""Fixtures of the review-comment tests (test_diff_comments.py, test_diff_comments_terminal.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from core import config
from harness.git import git
from harness.runtime import client, settings_file
from harness.termclient import hosting_settings
from tests.subagents_app.review_tui import TUI


@pytest.fixture
def review_agents() -> Iterator[None]:
    settings = hosting_settings()
    settings["agents"]["cat"] = {"command": ["cat"], "enabled": True}  # a terminal that echoes
    settings["agents"]["tui"] = {"command": [sys.executable, "-c", TUI], "enabled": True}
    with settings_file(settings):
        yield


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("import os\nx = 1\nprint(x)\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    (path / "app.py").write_text("import os\nx = 2\ny = 3\nprint(x)\n")  # uncommitted: +2 -1
    return path.resolve()


@pytest.fixture
def api(parts: Any) -> Client:
    return client(parts, headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})
