"""An ACP agent's JSON-RPC messages over a held stream, with what makes taking it back exact.

The ACP SDK reads and writes messages through this `Transport`. Every message from the agent is
known by its offset in the holder's journal (`src`), which stays the same however often it is
read again. svc acknowledges to the holder the offset before the first message it has not
finished with — an update until it is stored, a request of the agent's until it is answered, a
turn's end until it is stored — so a new svc reads again exactly what the last one might not
have finished, and skips what it had (`seen`: stored events carry their `src`).

Request ids: svc's own requests go out as `generation * ID_SPAN + n`, so an answer that comes
after svc restarted (the turn that was running) is told apart from the new svc's requests and
handed to `on_orphan` instead of the SDK, which never asked it.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from core import untrusted_json
from holder import protocol as frames

logger = logging.getLogger(__name__)

MAX_LINE = 1 << 30  # an agent's line is as long as it writes it; only its nesting is limited
ID_SPAN = 1 << 32
# The offset of the agent message being handled, in its handler's task (the SDK starts one task
# per message from the receive loop, which copies the context receive() set).
current_src: contextvars.ContextVar[int | None] = contextvars.ContextVar("src", default=None)

OnOrphan = Callable[[int, dict[str, Any]], Awaitable[None]]


class AgentStream(Protocol):
    """A held agent (holder.streams.Stream) or svc's own child (host.direct.DirectPipes)."""

    pid: int
    offset: int
    generation: int
    held: bool  # by a holder, which keeps it when svc stops

    async def read(self) -> tuple[bytes, bytes] | None: ...
    def write(self, data: bytes) -> None: ...
    def ack(self, offset: int) -> None: ...
    def close(self) -> None: ...
    def close_input(self) -> None: ...


class Link:
    def __init__(
        self, stream: AgentStream, *, stored_upto: int = -1, on_orphan: OnOrphan | None = None
    ) -> None:
        self.stream = stream
        self.stored_upto = stored_upto  # the last src whose update svc already stored
        self._base_id = stream.generation * ID_SPAN
        self._buffer = bytearray()
        self._pos = stream.offset  # the offset of the first byte in _buffer
        self._open: dict[int, str] = {}  # src → what it waits for
        self._agent_requests: dict[Any, int] = {}  # the agent's request id → its src
        self._prompts: set[int] = set()  # ids of svc's session/prompt requests
        self.turn_src: int | None = None  # the answer that ended the last turn
        self._acked = stream.offset
        self._ack_soon = False
        self.on_orphan = on_orphan
        self.exit_code: int | None = None
        self.ended = asyncio.Event()  # the stream ended: an exit (exit_code) or the holder lost
        self.closed = False

    # --- the Transport the SDK uses ---------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" in message:  # svc's request
            if message["method"] == "session/prompt":
                self._prompts.add(message["id"])
            message = {**message, "id": self._base_id + message["id"]}
        elif "id" in message and (src := self._agent_requests.pop(message["id"], None)) is not None:
            self.done(src)  # svc's answer to the agent: that request is finished once it is sent
        self.stream.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def receive(self) -> dict[str, Any] | None:
        while True:
            read = await self._next_line()
            if read is None:
                return None
            src, line = read
            try:
                message = untrusted_json.loads(line, max_bytes=MAX_LINE)
            except ValueError:  # nested past the limit too: a reader that dies ends the chat
                logger.warning("an agent wrote a line that is not JSON: %r", line[:200])
                continue
            if not isinstance(message, dict):
                continue
            handed = await self._route(src, message)
            if handed is not None:
                return handed

    async def close(self) -> None:
        self.closed = True
        self.stream.close()

    async def _route(self, src: int, message: dict[str, Any]) -> dict[str, Any] | None:
        method, wire_id = message.get("method"), message.get("id")
        if method is None and "id" in message:  # an answer to one of svc's requests
            if isinstance(wire_id, int) and wire_id // ID_SPAN == self._base_id // ID_SPAN:
                sdk_id = wire_id - self._base_id
                if sdk_id in self._prompts:  # done once the turn's end is stored
                    self._prompts.discard(sdk_id)
                    self.turn_src = src
                    self._open[src] = "turn end"
                return {**message, "id": sdk_id}
            if self.on_orphan is not None:  # asked by an svc that has since restarted
                self._open[src] = "orphan"
                try:
                    await self.on_orphan(src, message)
                finally:
                    self.done(src)
            return None
        if method is None:
            return None
        current_src.set(src)
        if "id" in message:
            self._agent_requests[wire_id] = src
            self._open[src] = "answer"
        elif method == "session/update":
            self._open[src] = "stored"
        return message

    async def _next_line(self) -> tuple[int, bytes] | None:
        """The next whole line and its offset; None when the stream ended."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                src, line = self._pos, bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                self._pos += end + 1
                if line.strip():
                    return src, line
                self._advance()
                continue
            frame = await self.stream.read()
            if frame is None:
                self.ended.set()  # the holder went away: exit_code stays None
                return None
            kind, data = frame
            if kind == frames.OUTPUT:
                self._buffer += data
            elif kind == frames.EXIT:
                self.exit_code = json.loads(data)["exit_code"]
                self.ended.set()
                return None

    # --- what svc has finished --------------------------------------------------------------

    def seen(self, src: int | None) -> bool:
        """Whether the update at `src` was stored by an earlier svc (it is read again)."""
        return src is not None and src <= self.stored_upto

    def done(self, src: int | None) -> None:
        if src is not None and self._open.pop(src, None) is not None:
            self._advance()

    def turn_done(self) -> None:
        self.done(self.turn_src)
        self.turn_src = None

    def _advance(self) -> None:
        if not self._ack_soon:
            self._ack_soon = True
            asyncio.get_running_loop().call_soon(self._ack)

    def _ack(self) -> None:
        self._ack_soon = False
        low = min(self._open) if self._open else self._pos
        if low > self._acked and not self.closed:
            self._acked = low
            self.stream.ack(low)
