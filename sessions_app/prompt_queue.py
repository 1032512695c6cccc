"""Prompts sent while a turn runs (contract §17, "Nothing sent to svc is lost").

A person's prompt to a chat — from the dashboard or any /ws/chat client, Telegram or Slack — is
recorded (`QueuedPrompt`) and sent from the record: at once when the chat is idle and nothing
waits before it, else when the turns before it have ended, first in first out. Until then it is
shown on every surface (a `queue` event to the chat's clients, `/queue` in a chat channel) and
can be removed; "send now" puts it first and cancels the running turn, whose end sends it.

The record is what survives: svc stopping with prompts waiting sends them once the chat it
takes back (or resumes) is idle. A prompt leaves the record in the step that starts its turn,
so it is sent once: a restart between the two would lose the prompt (one database write and
one message to the holder apart), never send it twice.

Only what svc recorded is sent: each record is sealed (sessions_app/seals.py), and one written
into the database by anyone else is never sent, listed or counted — it is dropped and logged.

A prompt may carry its client's `key`: the same key again for the same session is recorded and
sent once (AlreadyReceived). A fleet member passing on a chat app's message marks it handed over
only once the owner said it has it, and a member that restarted before hearing so sends it again
under the same key.

Programmatic turns (MCP multi-agent turns, the local-agent API, a diff comment) do not queue:
they have their own ways of waiting and of saying "busy".
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async

from core.errors import DomainError, NotFound
from sessions_app import seals
from sessions_app.models import QueuedPrompt
from sessions_app.services.queued_prompts import (
    queued_prompt_add,
    queued_prompt_put_back,
    queued_prompt_remove,
    queued_prompt_take_first,
    queued_prompt_to_front,
)

if TYPE_CHECKING:
    from sessions_app.host.acp import AcpSession

logger = logging.getLogger(__name__)

TEXT_MAX = 100_000  # characters; what a chat message may carry (contract §6)
# What may wait for one chat. The queue is shown on every surface: each prompt's text up to
# SHOWN_CHARS (the rest is in the record and is what is sent), so a `queue` event stays well
# under a WebSocket frame (1 MiB, sessions_app/chat_frames.py) at QUEUE_MAX prompts.
# (QUEUE_MAX and QUEUE_BYTES are the record's, sessions_app/services/queued_prompts.py.)
SHOWN_CHARS = 2000
KEY_MAX = 200  # a client's own; stored with who sent it (consumers_chat)

# One drain at a time per chat: two could both find it idle and both start a turn.
_draining: weakref.WeakKeyDictionary[AcpSession, asyncio.Lock] = weakref.WeakKeyDictionary()
# The ids each chat's clients were last told wait (publish sends what changed since).
_published: weakref.WeakKeyDictionary[AcpSession, list[int]] = weakref.WeakKeyDictionary()


# --- the record -----------------------------------------------------------------------------


def _sealed(session_id: str) -> list[QueuedPrompt]:
    return [r for r in QueuedPrompt.objects.filter(session_id=session_id) if seals.queued_sealed(r)]


def queued_list(session_id: str) -> list[dict[str, Any]]:
    """What waits, first to go first, each text cut to SHOWN_CHARS (`truncated: true`)."""
    return [_shown(row.to_dict()) for row in _sealed(session_id)]


def _shown(item: dict[str, Any]) -> dict[str, Any]:
    text = item.get("text")
    if isinstance(text, str) and len(text) > SHOWN_CHARS:
        return {**item, "text": text[:SHOWN_CHARS], "truncated": True, "length": len(text)}
    return item


def queued_count(session_id: str) -> int:
    return len(_sealed(session_id))


def checked_key(key: Any) -> str:
    """A client's key for a prompt ("" when it gave none)."""
    if key is None or key == "":
        return ""
    if not isinstance(key, str) or len(key) > KEY_MAX:
        raise DomainError(f"a prompt's `key` is a string of at most {KEY_MAX} characters")
    return key


def _check(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise DomainError("a prompt needs a non-empty `text`")
    if len(text) > TEXT_MAX:
        raise DomainError(f"a prompt is at most {TEXT_MAX} characters")
    return text


def _queued_id(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DomainError("`id` names a queued prompt: a number from the queue") from None


# --- what the surfaces call ------------------------------------------------------------------


async def submit(
    chat: AcpSession,
    text: Any,
    *,
    source: str,
    who: str = "",
    recorded: Callable[[], None] | None = None,
    key: str = "",
) -> int:
    """Record the prompt and send what may be sent now; returns how many prompts wait after
    this call (0: this one went to the agent at once). `recorded` runs in the transaction that
    records it: a chat channel marks its inbox event handed over there, so a restart can
    neither lose the message nor queue it twice. AlreadyReceived: `key` was sent before."""
    text = _check(text)
    if chat.exited.is_set():
        raise DomainError("the agent has exited; resume the session or open a new one")
    await database_sync_to_async(queued_prompt_add)(
        session_id=chat.session_id, text=text, source=source, who=who, recorded=recorded, key=key
    )
    await drain(chat)
    waiting = await database_sync_to_async(queued_count)(chat.session_id)
    if waiting:
        await publish(chat)
    return waiting


async def remove(chat: AcpSession, queued_id: Any) -> None:
    removed = database_sync_to_async(queued_prompt_remove)
    if not await removed(session_id=chat.session_id, queued_id=_queued_id(queued_id)):
        raise NotFound(f"no queued prompt {queued_id!r} in this session (sent, or removed)")
    await publish(chat)


async def send_now(chat: AcpSession, queued_id: Any) -> None:
    """Put the prompt first and cancel the running turn: its end sends it."""
    first = database_sync_to_async(queued_prompt_to_front)
    if not await first(session_id=chat.session_id, queued_id=_queued_id(queued_id)):
        raise NotFound(f"no queued prompt {queued_id!r} in this session (sent, or removed)")
    await publish(chat)
    if chat.busy:
        await chat.cancel()
    else:
        await drain(chat)


async def publish(chat: AcpSession) -> None:
    """The chat's clients see what changed in what waits (an event not kept in the history: the
    record is): `queue_change` `{added, removed, order}` — the prompts new since the last change,
    the ids gone, and every id still waiting in order. A client holds the `queue` it got on open
    and applies each change; `order` alone says what waits, so a change seen twice is harmless."""
    items = await database_sync_to_async(queued_list)(chat.session_id)
    order = [item["id"] for item in items]
    before = _published.get(chat)
    if before == order:
        return
    _published[chat] = order
    known = set(before or ())
    added = [item for item in items if item["id"] not in known]
    removed = [i for i in before or () if i not in set(order)]
    change = {"added": added, "removed": removed, "order": order}
    await chat.emit("queue_change", change, store=False)


def queue_changed(items: list[dict[str, Any]], change: dict[str, Any]) -> list[dict[str, Any]]:
    """A client's queue after a `queue_change` (what the dashboard's chat-log.js does too)."""
    known = {item["id"]: item for item in items} | {i["id"]: i for i in change.get("added") or []}
    return [known[i] for i in change.get("order") or [] if i in known]


async def drain(chat: AcpSession) -> None:
    """Send the first waiting prompt when the chat is idle. The host calls this whenever a
    chat becomes idle (a turn ended, taken back at start); a resume calls the chat's on_idle
    once the history says how the chat went on."""
    lock = _draining.setdefault(chat, asyncio.Lock())
    async with lock:
        if chat.busy or chat.exited.is_set() or chat.let_go_done or chat.stopping:
            return
        row = await database_sync_to_async(queued_prompt_take_first)(session_id=chat.session_id)
        if row is None:
            return
        # Started eagerly: the turn marks the chat busy (AcpSession.prompt's first step) before
        # the lock is let go, so the next drain finds it busy.
        turn = asyncio.Task(
            _send(chat, row),
            loop=asyncio.get_running_loop(),
            eager_start=True,
            context=contextvars.Context(),  # the turn outlives whoever asked (a request)
        )
        chat.keep(turn)  # the chat holds its turn: no module keeps a task of its own
    await publish(chat)


async def on_idle(chat: AcpSession) -> None:
    """The host's hook (svcproject/assembly.py): drain, and never fail the caller."""
    try:
        await drain(chat)
    except Exception:
        logger.exception("the queued prompts of session %s could not be sent", chat.session_id)


async def _send(chat: AcpSession, row: QueuedPrompt) -> None:
    try:
        await chat.prompt(row.text)
    except RuntimeError:  # refused before it reached the agent (it exited meanwhile): kept
        await database_sync_to_async(queued_prompt_put_back)(row=row)
    except Exception:
        logger.exception("a queued prompt for session %s could not be sent", chat.session_id)
