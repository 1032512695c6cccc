"""What fleet_app's middleware reads of the daemon's parts, which reach it in the ASGI scope
(svcproject.parts checks `Parts` against this)."""

from __future__ import annotations

from typing import Protocol

from fleet_app.outbound import Forwarder
from sessions_app.handover import FailureWindow


class FleetParts(Protocol):
    @property
    def fleet_forward(self) -> Forwarder | None: ...  # None: this daemon is in no fleet
    @property
    def handover_failures(self) -> FailureWindow: ...
