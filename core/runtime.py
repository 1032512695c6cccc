"""The runtime (contract §12): the container of everything living as long as the daemon.

It names no app. What a daemon runs, and in which order, is listed in one place,
svcproject/assembly.py, which builds the parts and a Runtime at bind (svcproject.startup) or for
a test in-process: each part is added with what it does at start, on every settings change
(`apply`, also once after every part has started) and at stop. `start()` runs the start hooks in
the order the parts were added, then the apply hooks; `stop()` runs the stop hooks in reverse, so
the process ends with a clean log.

The parts themselves are not kept here: svcproject.parts.Parts holds them, typed, and hands them
over (the ASGI scope, constructor arguments). Nothing looks the runtime up.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async

from core import config, live
from core import settings_store as settings
from core.onetime import OneTimeGrants
from core.supervisor import BACKOFF_FIRST_S, Supervisor

logger = logging.getLogger(__name__)

START_WAIT_S = 30.0  # what arrives during start waits this long at most for it to finish


Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Part:
    name: str
    start: Hook | None
    apply: Callable[[Any], Awaitable[None]] | None
    stop: Callable[[], Any] | None  # a coroutine function or a plain one


class Reach:
    """How svc is reached from outside right now (contract §13): the remote listener's port once
    bound, and each online tunnel's public URL and since when."""

    def __init__(self) -> None:
        self.remote_port = 0
        # Every port the remote listener's LAN socket (remote_app.lan) was bound on in this run,
        # never shrinking: a request that arrived on one is the remote listener's, whatever
        # became of the socket since.
        self.lan_ports: set[int] = set()
        self.urls: dict[str, str] = {}
        self.started: dict[str, str] = {}

    def is_remote_port(self, port: object) -> bool:
        """Whether a connection accepted on `port` came to the remote listener (contract §13)."""
        return bool(port) and (port == self.remote_port or port in self.lan_ports)


class Runtime:
    def __init__(self, *, backoff_first_s: float | None = None) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready = asyncio.Event()
        self.lists = live.Snapshots()
        self.supervisor = Supervisor(
            live.abroadcast, backoff_first_s=backoff_first_s or BACKOFF_FIRST_S
        )
        self.reach = Reach()
        self.preview_grants = OneTimeGrants(seconds=60)  # entry to a preview's own origin
        self.login_grants = OneTimeGrants(seconds=60)  # the hand-over to the dashboard host
        self.settings_applied_ns = -1  # the mtime of the settings.json last mirrored
        # Sections of GET /api/status that parts add (the fleet's reach): name → its state now.
        self.status_parts: dict[str, Callable[[], Any]] = {}
        self._parts: list[Part] = []

    def add(
        self,
        name: str,
        *,
        start: Hook | None = None,
        apply: Callable[[Any], Awaitable[None]] | None = None,
        stop: Callable[[], Any] | None = None,
    ) -> None:
        """What the part `name` does at start, on settings changes and at stop, in start order."""
        self._parts.append(Part(name, start, apply, stop))

    # The remote listener's port and the tunnels' public URLs, by their old names.
    @property
    def remote_port(self) -> int:
        return self.reach.remote_port

    @remote_port.setter
    def remote_port(self, port: int) -> None:
        self.reach.remote_port = port

    @property
    def public_urls(self) -> dict[str, str]:
        return self.reach.urls

    # --- start and stop ------------------------------------------------------------------------

    async def until_started(self) -> None:
        """For what arrives while the daemon is starting (the port is open at once, contract
        §12): wait for the start to finish, since until then the database may not yet hold what
        settings.json says nor the sessions taken back, and an answer would say they are not
        there (a terminal "exited", a chat "not live"). Bounded, so a slow start still answers."""
        if self.ready.is_set() or self.loop is not asyncio.get_running_loop():
            return  # started; or not started on this loop (a test's runtime, never started)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ready.wait(), START_WAIT_S)

    async def start(self) -> None:
        """What a starting daemon does once (contract §12), in order."""
        self.loop = asyncio.get_running_loop()
        for part in self._parts:
            if part.start is not None:
                await part.start()
        await self._apply(config.current_settings())
        self.ready.set()

    async def settings_changed(self) -> None:
        """settings.json changed on disk: mirror it, then restart the services it touches."""
        mirrored = await database_sync_to_async(settings.settings_sync)()
        self.settings_applied_ns = mirrored.loaded_mtime_ns
        current_settings = config.current_settings()
        await self.supervisor.apply_settings(current_settings)
        await self._apply(current_settings)

    async def _apply(self, current_settings: config.Settings) -> None:
        for part in self._parts:
            if part.apply is not None:
                await part.apply(current_settings)

    async def stop(self) -> None:
        """Orderly stop (contract §12): every part in reverse order of start."""
        for part in reversed(self._parts):
            if part.stop is None:
                continue
            try:
                result = part.stop()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.exception("stopping %s failed", part.name)
        self.ready.clear()
