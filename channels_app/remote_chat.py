"""Another fleet member's chat session, followed by a chat here (contract §18 "Act anywhere"):
a person's one bot, on one member, talks to the agents of every member.

It stands in for the process host's live chat in a Room: the owning member serves its own
`/ws/chat` consumer over a relay (fleet_app.sockets), and this speaks that socket's messages —
prompts (queued there while a turn runs), cancel, permission answers, the queue's buttons — each
saying which chat platform and person it passes on (`as`), so the owner records the decision
as made on Telegram or Slack by that person, through this member. A prompt goes under a key
(this member, the channel, the platform's event) and counts as handed over only once the owner
says it has it: sent again after a restart, the owner takes it once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from core import untrusted_json
from core.errors import DomainError
from sessions_app.prompt_queue import queue_changed

logger = logging.getLogger(__name__)

OPEN_TIMEOUT_S = 15.0
MAX_FRAME = 64 * 1024 * 1024  # an event of the owner's /ws/chat, relayed whole
RECEIVED_TIMEOUT_S = 15.0  # the owner records a prompt in a database write or two
Listener = Callable[[dict[str, Any]], None]


class RemoteChatUnavailable(Exception):
    pass


class RemoteChat:
    def __init__(self, fleet: Any, machine: str, surface: str) -> None:
        self.fleet, self.machine, self.surface = fleet, machine, surface
        self.session_id = ""
        self.agent = ""
        self.busy = False
        self.queued: list[dict[str, Any]] = []  # what waits there for the running turn
        self._socket: Any = None
        self._listener: Listener | None = None
        self._pump: asyncio.Task[None] | None = None
        self._opened: asyncio.Future[dict[str, Any]] | None = None
        self._sending: set[asyncio.Future[None]] = set()
        self._receipts: dict[str, asyncio.Future[dict[str, Any]]] = {}  # prompt key → its answer

    @property
    def machine_name(self) -> str:
        return str(self.fleet.name_of(self.machine))

    async def open(self, listener: Listener, **fields: Any) -> str:
        """Follow the session (`session_id=`), or start one there (`agent=`, `workspace=`);
        returns its id. RemoteChatUnavailable when the member cannot be reached or refuses."""
        self._listener = listener
        try:
            self._socket = await self.fleet.open_socket(self.machine, "/ws/chat", "", {})
        except Exception as exc:
            problem = f"machine {self.machine_name} cannot be reached: {exc}"
            raise RemoteChatUnavailable(problem) from exc
        self._opened = asyncio.get_running_loop().create_future()
        self._pump = asyncio.create_task(self._events(), name=f"remote chat on {self.machine}")
        await self._send({"type": "open", **fields})
        try:
            session = await asyncio.wait_for(asyncio.shield(self._opened), OPEN_TIMEOUT_S)
        except TimeoutError:
            await self.close()
            raise RemoteChatUnavailable(f"machine {self.machine_name} did not answer") from None
        self.session_id, self.agent = str(session["session_id"]), str(session.get("agent", ""))
        self.busy = bool(session.get("busy"))
        # A chat app is not a dashboard tab: a turn that ends is still notified (contract §15).
        await self._send({"type": "visible", "session_id": self.session_id, "visible": False})
        return self.session_id

    async def _events(self) -> None:
        while (frame := await self._socket.recv()) is not None and frame[0] == "text":
            try:
                event = untrusted_json.loads(frame[1], max_bytes=MAX_FRAME)
            except ValueError:
                continue
            if isinstance(event, dict):
                self._heard(event)
        if self._opened is not None and not self._opened.done():
            self._opened.set_exception(RemoteChatUnavailable("the relay ended"))
        for waiting in self._receipts.values():
            if not waiting.done():
                ended = f"the connection to machine {self.machine_name} ended"
                waiting.set_exception(RemoteChatUnavailable(ended))

    def _heard(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "error" and self._opened is not None and not self._opened.done():
            self._opened.set_exception(RemoteChatUnavailable(str(event.get("message", ""))))
            return
        if kind == "session" and self._opened is not None and not self._opened.done():
            self._opened.set_result(event)
            return
        if event.get("replay"):
            return  # its history: a chat following a session shows what happens from now on
        waiting = self._receipts.get(str(event.get("key") or ""))
        if waiting is not None and kind in ("prompt_received", "error") and not waiting.done():
            if kind == "error":
                waiting.set_exception(DomainError(str(event.get("message", ""))))
            else:
                waiting.set_result(event)
            return
        if kind == "queue":
            self.queued = list(event.get("items") or [])
        elif kind == "queue_change":
            self.queued = queue_changed(self.queued, event)
        elif kind == "user_message_chunk":
            self.busy = True
        elif kind == "turn_end":
            self.busy = False
        if self._listener is not None and kind not in ("queue", "queue_change"):
            self._listener(event)

    async def _send(self, message: dict[str, Any]) -> None:
        if self._socket is None:
            raise RemoteChatUnavailable(f"machine {self.machine_name} is not connected")
        await self._socket.send_text(json.dumps(message))

    def _as(self, who: str) -> dict[str, str]:
        return {"surface": self.surface, "who": who}

    async def prompt(self, text: str, who: str, key: str) -> dict[str, Any]:
        """Send a prompt under `key` and wait until the owner has it recorded: its answer
        (`again`: it had it already; `waiting`: how many wait there). DomainError: the owner
        refused it; RemoteChatUnavailable: no answer (it may still have it)."""
        waiting = asyncio.get_running_loop().create_future()
        self._receipts[key] = waiting
        message = {"type": "prompt", "session_id": self.session_id, "text": text, "key": key}
        try:
            await self._send(message | {"as": self._as(who)})
            return await asyncio.wait_for(waiting, RECEIVED_TIMEOUT_S)
        except TimeoutError:
            problem = f"machine {self.machine_name} did not say it has the message"
            raise RemoteChatUnavailable(problem) from None
        finally:
            self._receipts.pop(key, None)

    async def cancel(self) -> None:
        await self._send({"type": "cancel", "session_id": self.session_id})

    def answer_permission(
        self, request_id: str, option_id: str, decided_by: dict[str, str]
    ) -> str | None:
        """As the host's chat answers; the owner checks the request (None: sent)."""
        message = {
            "type": "permission",
            "session_id": self.session_id,
            "request_id": request_id,
            "option_id": option_id,
            "as": self._as(str(decided_by.get("who", ""))),
        }
        sending = asyncio.ensure_future(self._send(message))
        self._sending.add(sending)
        sending.add_done_callback(self._sending.discard)
        return None

    async def queue_action(self, queued_id: int, action: str) -> None:
        kind = "send_now" if action == "now" else "unqueue"
        await self._send({"type": kind, "session_id": self.session_id, "id": queued_id})

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
            self._socket = None
