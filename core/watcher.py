"""The settings watcher (contract §1): settings.json is re-read when its mtime changes, and the
change is applied — mirrored into the database and the agents' configs, and the services whose
settings changed restarted. A supervised service like any other, so a failure shows and retries."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from core import config

logger = logging.getLogger(__name__)

POLL_S = 1.0


def _mtime(path_of: Callable[[], Any] = config.settings_path) -> int:
    """The file's mtime, -1 when there is none (as core.config records it)."""
    try:
        return path_of().stat().st_mtime_ns
    except FileNotFoundError:
        return -1


class SettingsWatcher:
    name = "settings-watcher"
    list_name = "internal"  # shown by /api/status, on no live list

    def __init__(
        self,
        settings_changed: Callable[[], Awaitable[None]],
        tokens_changed: Callable[[], Awaitable[Any]],
        applied: Callable[[], int],
        poll_s: float = POLL_S,
    ) -> None:
        """`applied()`: the mtime of the settings last mirrored (start-up's, then each change's):
        an edit made after start-up read the file, and before this watcher looked, still counts
        (contract §17 "Settings")."""
        self.settings_changed, self.tokens_changed = settings_changed, tokens_changed
        self.applied, self.poll_s = applied, poll_s

    def settings_key(self, settings: Any) -> Hashable:
        return None  # it is what notices changes: none of them restarts it

    async def run(self, online: Callable[[str], None]) -> None:
        last, auth_seen = self.applied(), _mtime(config.auth_path)
        online(f"watching {config.settings_path()}")
        while True:
            await asyncio.sleep(self.poll_s)
            if (auth_now := _mtime(config.auth_path)) != auth_seen:
                # Tokens rotated by another process (manage.py rotate_tokens): paired remote
                # browsers end now, their open WebSockets included.
                auth_seen = auth_now
                await self.tokens_changed()
            seen = _mtime()
            if seen == last:
                continue
            last = seen
            try:
                await self.settings_changed()
            except Exception as exc:  # a broken file is reported and kept watching
                logger.warning("could not apply the changed settings.json: %s", exc)
                online(f"settings.json not applied: {' '.join(str(exc).split())[:200]}")
            else:
                online(f"watching {config.settings_path()}")
