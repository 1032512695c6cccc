"""What one /ws/chat socket still has to send, with the memory it may hold bounded (contract §7:
"a slow client never blocks … other clients", as for terminals, docs/sessions.md).

daphne's `send` never waits: Twisted buffers without bound, and a socket that stopped reading
during a 30,000-chunk turn had svc hold ~1 GB. Here a socket's output waits for the connection
to take more (core.server_compat.socket_flow: paused above 512 KiB unsent) and what waits in svc
is bounded too (QUEUE_BYTES). A chat's stored events can always be read again, so when they do
not fit the socket *falls behind* on that chat: its queued events are dropped, the newer ones
are only counted, and once the socket has drained they are read back from the database a page
at a time (from the last one sent) until it has caught up, then live delivery goes on. Nothing is
lost or repeated: an event is stored before it is delivered, and the switch back to live is made
without yielding, once everything up to the newest delivered event has been sent.

The same paging replays a long history on open: the first page is sent, the rest follows as a
catch-up, so opening a chat never reads its whole history into memory.

Events that are not stored (`session`, `queue`, answers to the client) are never dropped; past
HARD_BYTES of them the socket is closed (a client that sends and never reads).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sessions_app.chat_frames import frames

QUEUE_BYTES = 4 << 20  # a socket's stored events waiting in svc, beyond its 512 KiB in Twisted
HARD_BYTES = 16 << 20  # everything waiting in svc for one socket
PAGE = 50  # events read back at a time (each may be up to a MiB)


def _fitting(size: int) -> int:
    """How many events of about `size` bytes to read back at once: a page of them is read into
    memory whole, so large ones are read a few at a time."""
    return max(1, min(PAGE, QUEUE_BYTES // max(size, 1)))


History = Callable[[str, int, int], Awaitable[list[dict[str, Any]]]]  # (session, after, limit)


class Flow(Protocol):
    async def wait_writable(self) -> None: ...


@dataclass
class _Frame:
    text: str
    size: int
    session_id: str | None  # a chat this socket can read back (its events are stored)
    seq: int | None
    last: bool  # the last frame of its event


class ChatOutbox:
    def __init__(self, send: Callable[[str], Awaitable[None]], flow: Flow, history: History):
        self._send, self._flow, self._history = send, flow, history
        self._frames: collections.deque[_Frame] = collections.deque()
        self._bytes = 0
        self._chats: set[str] = set()  # chats opened here from this member's database
        self._sent: dict[str, int] = {}  # chat → last seq handed to the socket
        self._upto: dict[str, int] = {}  # chat → last seq queued or sent
        self._behind: dict[str, int] = {}  # chat → newest seq it has missed
        self._then: dict[str, tuple[int, list[dict[str, Any]]]] = {}  # chat → (seq, events after)
        self._ready = asyncio.Event()
        self.overrun = False
        self.fell_behind = 0  # times a chat fell behind here (tests, logs)
        self._page = PAGE  # events read back at a time: as many as QUEUE_BYTES holds (_fitting)

    @property
    def waiting_bytes(self) -> int:
        return self._bytes

    def opened(self, session_id: str, after: int) -> None:
        """A chat of this member's is opened here; the client has its events up to `after`."""
        self._chats.add(session_id)
        # Opened again on this socket: what the client asks for again is sent again.
        self._sent[session_id] = min(self._sent.get(session_id, after), after)
        self._upto[session_id] = min(self._upto.get(session_id, after), after)

    def behind(self, session_id: str, upto: int, then: list[dict[str, Any]] | None = None) -> None:
        """The stored events of this chat up to `upto` are still to be read back and sent;
        `then` (not stored: the `session` and `queue` events ending an open) right after
        them, before anything newer — so a client still gets its whole history first."""
        if upto > self._upto.get(session_id, 0):
            self._behind[session_id] = max(self._behind.get(session_id, 0), upto)
            if then:
                self._then[session_id] = (upto, then)
            self._ready.set()
        else:
            for event in then or []:
                self.put(event)

    def put(self, event: dict[str, Any]) -> None:
        session_id, seq = event.get("session_id"), event.get("seq")
        stored = isinstance(seq, int) and session_id in self._chats
        if stored:
            assert isinstance(session_id, str) and isinstance(seq, int)
            if session_id in self._behind:
                self._behind[session_id] = max(self._behind[session_id], seq)
                return
            if seq <= self._upto[session_id] and event.get("kind") != "permission_request":
                return  # sent already (read back while it was being delivered)
        texts = frames(event)
        size = sum(len(t.encode()) for t in texts)
        if stored and self._bytes and self._bytes + size > QUEUE_BYTES:
            self._fall_behind(str(session_id), int(seq))  # type: ignore[arg-type]
            self._page = _fitting(size)
            return
        self._queue(texts, size, str(session_id) if stored else None, seq if stored else None)
        if self._bytes > HARD_BYTES:
            self.overrun = True
        self._ready.set()

    def _queue(self, texts: list[str], size: int, session_id: str | None, seq: Any) -> None:
        for index, text in enumerate(texts):
            last = index == len(texts) - 1
            self._frames.append(_Frame(text, size if last else 0, session_id, seq, last))
        self._bytes += size
        if session_id is not None:
            self._upto[session_id] = max(self._upto[session_id], seq)

    def _fall_behind(self, session_id: str, seq: int) -> None:
        kept = [f for f in self._frames if f.session_id != session_id]
        self._frames = collections.deque(kept)
        self._bytes = sum(f.size for f in kept)
        self._upto[session_id] = self._sent[session_id]
        self._behind[session_id] = seq
        self.fell_behind += 1

    async def run(self) -> None:
        """Send until the socket goes (the task is cancelled) or overruns (returns)."""
        while not self.overrun:
            if self._frames:
                await self._flow.wait_writable()
                if self._frames:  # a fall behind may have emptied it meanwhile
                    await self._send_next()
            elif self._behind:
                await self._catch_up()
            else:
                self._ready.clear()
                await self._ready.wait()

    async def _send_next(self) -> None:
        frame = self._frames.popleft()
        self._bytes -= frame.size
        if frame.session_id is not None and frame.last:
            self._sent[frame.session_id] = max(self._sent[frame.session_id], frame.seq or 0)
        await self._send(frame.text)

    async def _catch_up(self) -> None:
        session_id, upto = next(iter(self._behind.items()))
        after = self._sent[session_id]
        mark, then = self._then.get(session_id, (upto, []))
        if then and after >= mark:  # the history an open asked for is sent: its end next
            del self._then[session_id]
            for event in then:
                self.put(event)
            return
        if after >= upto:  # caught up: live from here, decided without yielding
            del self._behind[session_id]
            return
        events = await self._history(session_id, after, self._page)
        if then:  # nothing newer than the open's history before its end
            events = [event for event in events if event["seq"] <= mark]
            if not events:  # the rest of that history is gone (removed): its end now
                del self._then[session_id]
                for event in then:
                    self.put(event)
                return
        if not events:  # the history is gone (the session was removed)
            self._behind.pop(session_id, None)
            return
        # A page read back keeps to QUEUE_BYTES as live events do: 50 events of up to a MiB
        # each, held at once, closed the socket 4008 as soon as anything else was put
        # (HARD_BYTES), on every open of the chat, so it was never read. What does not fit is read
        # again once the rest is sent.
        largest = 0
        for index, event in enumerate(events):
            event = {**event, "replay": True}  # read back from the store, as a replay is
            texts = frames(event)
            size = sum(len(t.encode()) for t in texts)
            if index and self._bytes + size > QUEUE_BYTES:
                break
            self._queue(texts, size, session_id, event["seq"])
            largest = max(largest, size)
        self._page = _fitting(largest)
