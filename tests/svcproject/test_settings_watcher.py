"""The settings watcher compares settings.json with what was last mirrored, not with what it
first saw (contract §17 "Settings"; issue 33): an edit made between start-up reading the file and
the watcher's first look is applied all the same."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx

from core import config
from core.watcher import SettingsWatcher
from harness.daemon import Daemon, migrated_home
from harness.runtime import kept_settings


async def _first_polls(applied: int, polls: int = 3) -> int:
    """How many times the watcher applied settings in its first `polls` polls."""
    calls = 0

    async def changed() -> None:
        nonlocal calls
        calls += 1

    async def tokens() -> None:
        pass

    watcher = SettingsWatcher(changed, tokens, lambda: applied, poll_s=0.01)
    task = asyncio.ensure_future(watcher.run(lambda detail: None))
    await asyncio.sleep(0.01 * (polls + 1))
    task.cancel()
    return calls


async def test_an_edit_before_the_watcher_looked_is_applied_once() -> None:
    with kept_settings():
        config.write_settings({"skill_auto_install": True})
        mirrored = config.current_settings().loaded_mtime_ns
        assert mirrored == config.settings_path().stat().st_mtime_ns
        assert await _first_polls(applied=mirrored) == 0  # nothing new: nothing applied
        time.sleep(0.01)  # a distinct mtime, as a person's edit a moment later has
        config.write_settings({"skill_auto_install": False})
        assert await _first_polls(applied=mirrored) == 1  # the edit in between: applied once


def test_a_daemon_applies_a_workspace_written_as_soon_as_it_answers(tmp_path: Path) -> None:
    """What a person does right after `make run`: three starts, each with settings.json edited
    the moment the port answers. Before the fix the watcher took that edit's mtime as its
    starting point whenever it lost the race (2 of 3 starts on a251ce5)."""
    for attempt in range(3):
        late = tmp_path / f"late-{attempt}"
        late.mkdir()
        home = migrated_home(tmp_path / f"home-{attempt}", {})
        daemon = Daemon(home).start()
        try:
            (home / "settings.json").write_text(json.dumps({"workspaces": [str(late)]}))
            deadline = time.monotonic() + 10
            paths: list[str] = []
            while str(late) not in paths:
                assert time.monotonic() < deadline, f"start {attempt}: never applied: {paths}"
                time.sleep(0.2)
                listed = httpx.get(f"{daemon.url}/api/workspaces", headers=daemon.owner_headers())
                paths = [w["path"] for w in listed.json()]
        finally:
            daemon.stop()
