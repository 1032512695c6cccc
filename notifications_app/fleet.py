"""A fleet member's notifications for the other members' devices (contract §18: notifications
cover the fleet). A person pairs a phone, subscribes a browser or runs a chat bot on one member;
a session on another member that asks for permission or ends its turn must reach them too. So
each member tells the others of its own sessions' notifications over the signed bus, and each
delivers what it hears to its own devices and chat channels — marked with the machine it
happened on, and linked through its own dashboard (which hands the session to its owner)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from fleet_app.bus import Bus, FleetUnreachable
from fleet_app.signing import Envelope

logger = logging.getLogger(__name__)

TOLD = ("event", "session_id", "agent", "title", "body")


class FleetNotices:
    def __init__(self, bus: Bus, notifier: Any, machine_name: Callable[[], str]) -> None:
        self.bus, self.notifier, self.machine_name = bus, notifier, machine_name
        bus.handle("notify", self._heard)
        notifier.fleet = self

    async def tell(self, fields: dict[str, Any]) -> None:
        """A notification of this member's own session, for the others (not a pairing request:
        a device pairs with the member it asked)."""
        if not fields.get("session_id"):
            return
        body = {key: fields.get(key) for key in TOLD} | {"machine_name": self.machine_name()}
        with contextlib.suppress(FleetUnreachable):  # Redis gone: this member's own went out
            await self.bus.broadcast("notify", body)

    async def _heard(self, envelope: Envelope) -> None:
        told = envelope.body
        await self.notifier.notify(
            str(told.get("event", "")),
            session_id=str(told.get("session_id") or "") or None,
            agent=str(told.get("agent") or ""),
            title=str(told.get("title") or ""),
            body=str(told.get("body") or ""),
            origin=str(told.get("machine_name") or envelope.sender[:8]),
        )
