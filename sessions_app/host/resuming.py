"""The chats this start resumes in its background (`host.resume_on_start`): each is marked before
the start is over and released once resumed (or given up), so a client that asks for one
meanwhile — a tab left open across the reboot — waits for it instead of hearing "not live"."""

from __future__ import annotations

import asyncio
import contextlib


class ResumesAtStart:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Event] = {}

    def mark(self, session_ids: list[str]) -> None:
        for session_id in session_ids:
            self._waiting.setdefault(session_id, asyncio.Event())

    def done(self, session_id: str) -> None:
        if (event := self._waiting.pop(session_id, None)) is not None:
            event.set()

    async def wait(self, session_id: str, wait_s: float) -> None:
        """Until `session_id`'s resume is done (at most `wait_s` s); at once if none is due."""
        event = self._waiting.get(session_id)
        if event is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait_s)
