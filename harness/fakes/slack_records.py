"""The fake Slack's methods and tokens it knows, and the records it keeps: Web API calls, Socket
Mode envelopes and their acks, the items each envelope carries, connections; small helpers for
its answers and blocks."""

from __future__ import annotations

import copy
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOT_METHODS = {
    "auth.test",
    "chat.postMessage",
    "chat.update",
    "chat.delete",
    "chat.postEphemeral",
    "reactions.add",
    "reactions.remove",
    "conversations.info",
    "conversations.history",
    "conversations.replies",
    "users.info",
    "files.info",
}
APP_METHODS = {"apps.connections.open"}
INTERACTIVE = ("interactive", "slash_commands")
SIGN_IN_PAGE = (
    "<!DOCTYPE html><html><head><title>Slack</title></head>"
    "<body><h1>Sign in to Fake Workspace</h1></body></html>"
)


@dataclass
class Call:
    """One Web API call as the fake saw it."""

    method: str
    params: dict[str, Any]
    token: str | None
    at: float
    status: int = 200
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))

    @property
    def error(self) -> str | None:
        return self.response.get("error")


@dataclass
class Ack:
    envelope_id: str
    connection: int
    at: float
    payload: dict[str, Any] | None
    known: bool  # False: no envelope with that id was ever sent


@dataclass
class Envelope:
    """One delivery attempt of an item on one connection."""

    envelope_id: str
    type: str
    key: str  # the item: event_id for events, an interaction id otherwise
    attempt: int
    retry_reason: str
    connection: int
    sent_at: float
    body: dict[str, Any]
    acks: list[Ack] = field(default_factory=list)


@dataclass
class Item:
    """Something Slack wants the app to receive: an event or an interaction."""

    key: str
    type: str
    payload: dict[str, Any]
    accepts_response_payload: bool
    created_at: float
    attempts: int = 0  # attempts made so far, delivered or not
    due: float = 0.0
    state: str = "pending"  # pending | sent | acked | dropped (events) | failed (interactions)
    reason: str = ""  # why the next attempt is a retry
    envelopes: list[Envelope] = field(default_factory=list)


@dataclass
class Connection:
    id: int
    ticket: str
    opened_at: float
    ws: web.WebSocketResponse | None = field(default=None, repr=False)
    transport: Any = field(default=None, repr=False)
    ready: bool = False  # hello sent
    draining: bool = False  # sent `disconnect`
    dropped: bool = False  # go_away() is closing it
    closed_at: float | None = None

    @property
    def usable(self) -> bool:
        return self.ready and not self.dropped and self.closed_at is None


def _err(error: str) -> dict:
    return {"ok": False, "error": error}


def _page(messages: list[dict]) -> dict:
    return {
        "ok": True,
        "messages": copy.deepcopy(messages),
        "has_more": False,
        "response_metadata": {"next_cursor": ""},
    }


def _blocks(value: Any) -> tuple[list | None, str]:
    """Blocks arrive as a list (JSON body) or a JSON string (form body)."""
    if value is None:
        return None, ""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError:
            return None, "invalid_blocks_format"
    if not isinstance(value, list) or not all(isinstance(b, dict) and "type" in b for b in value):
        return None, "invalid_blocks"
    return value, ""


def _rich_text(text: str) -> dict:
    return {
        "type": "rich_text",
        "block_id": secrets.token_urlsafe(4),
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def _channel_type(chan: dict) -> str:
    if chan["is_im"]:
        return "im"
    if chan["is_mpim"]:
        return "mpim"
    return "group" if chan["is_private"] else "channel"


def _element(blocks: list[dict], action_id: str) -> tuple[dict | None, str]:
    for block in blocks:
        candidates = list(block.get("elements") or [])
        if block.get("accessory"):
            candidates.append(block["accessory"])
        for element in candidates:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return element, block.get("block_id") or secrets.token_urlsafe(4)
    return None, ""
