"""settings.json `notifications` (contract §15), read leniently, and the dashboard link a
notification carries."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core import config
from core.public_urls import share_base

logger = logging.getLogger("notifications_app.hub")

EVENTS = (
    "permission_requested",
    "turn_ended",
    "session_failed",
    "subagent_turn_completed",
    "pairing_requested",
)


@dataclass(frozen=True)
class NotifySettings:
    events: frozenset[str]
    urls: Any  # as written: a bad entry fails its own delivery, it never stops svc


def read_settings() -> NotifySettings:
    """settings.json `notifications`, read leniently: svc's settings check does not know this
    section, so what is malformed here is logged (events) or becomes a failed delivery (urls)."""
    section = config.current_settings().raw.get("notifications", {})
    if not isinstance(section, dict):
        logger.warning("settings.json notifications must be an object; using the defaults")
        section = {}
    events = section.get("events", list(EVENTS))
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        logger.warning("settings.json notifications.events must be a list of event names")
        events = list(EVENTS)
    if unknown := sorted(set(events) - set(EVENTS)):
        logger.warning("settings.json notifications.events: unknown %s", ", ".join(unknown))
    return NotifySettings(frozenset(events) & set(EVENTS), section.get("urls", []))


def link(session_id: str | None, online: Mapping[str, str]) -> str:
    """The session in the dashboard: on the tunnel's public URL while one is online."""

    base = share_base(online) or f"http://127.0.0.1:{config.svc_port()}"
    return f"{base}/#session={session_id}" if session_id else f"{base}/"
