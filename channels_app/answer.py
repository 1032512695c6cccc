"""An agent's turn as chat messages (contract §14): one message per turn, edited as it streams —
no more often than the platform's rate (§11: one edit per 1.5 s per chat) — and continued in a
new message when it outgrows the platform's length. Thoughts are left out, each tool call is one
short line, and the end of the turn is marked."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from channels_app.platform import Platform

WORKING = "…"


def tool_line(event: dict[str, Any]) -> str:
    title = str(event.get("title") or event.get("tool_kind") or "a tool").strip()
    return f"\n🔧 {title[:120]}\n"


def end_line(event: dict[str, Any]) -> str:
    reason = str(event.get("stop_reason") or "end_turn")
    return "\n\n— done" if reason == "end_turn" else f"\n\n— ended: {reason}"


class EditClock:
    """When a chat may next be edited: shared by every answer in that chat, and marked by the
    outbox each time the platform answers a send or an edit (channels_app/outbox.py)."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._last: dict[str, float] = {}

    def wait_s(self, chat: str) -> float:
        return max(0.0, self._last.get(chat, -1e9) + self.every_s - time.monotonic())

    def mark(self, chat: str) -> None:
        self._last[chat] = time.monotonic()


class StreamedAnswer:
    """The text of one turn, shown in one or more messages of a chat. `platform` is the
    channel's outbox, which records at once and delivers at the platform's rate; the answer
    hands it a new text no more often than that rate either (fewer writes, same result)."""

    def __init__(self, platform: Platform, chat: str, clock: EditClock) -> None:
        self.platform, self.chat, self.clock = platform, chat, clock
        self.text = ""
        self._shown: list[str] = []  # what each message shows now
        self._ids: list[str] = []
        self._last = -1e9  # when this answer last handed over a text (monotonic)
        self._flush: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    def add(self, text: str) -> None:
        self.text += text
        if self._flush is None or self._flush.done():
            self._flush = asyncio.ensure_future(self._flush_when_allowed())

    async def finish(self, tail: str) -> None:
        self.text += tail
        if self._flush is not None:
            await asyncio.gather(self._flush, return_exceptions=True)
        await self._flush_when_allowed()

    async def _flush_when_allowed(self) -> None:
        async with self._lock:
            if self._ids:  # the first send is not an edit; edits keep the platform's rate
                mine = self._last + self.platform.edit_every_s - time.monotonic()
                await asyncio.sleep(max(self.clock.wait_s(self.chat), mine, 0.0))
            await self._show()
            self._last = time.monotonic()

    def _pieces(self) -> list[str]:
        limit = self.platform.max_len
        text = self.text.strip() or WORKING
        pieces = []
        while len(text) > limit:
            cut = text.rfind("\n", 0, limit)
            cut = cut if cut > limit // 2 else limit
            pieces.append(text[:cut])
            text = text[cut:].lstrip("\n")
        return [*pieces, text]

    async def _show(self) -> None:
        for index, piece in enumerate(self._pieces()):
            if index < len(self._ids):
                if self._shown[index] != piece:
                    await self.platform.edit(self.chat, self._ids[index], piece)
                    self._shown[index] = piece
            else:
                self._ids.append(await self.platform.send(self.chat, piece))
                self._shown.append(piece)
