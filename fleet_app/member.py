"""This daemon as a fleet member (contract §18): its bus to the others, started and stopped with
the runtime, and what /api/status says of the fleet. The parts of the fleet that act (one view,
acting on another member's sessions) register their bus handlers on `Member.bus`."""

from __future__ import annotations

from typing import Any

from fleet_app.bus import Bus
from fleet_app.conf import FleetConfig


class Member:
    def __init__(self, fleet: FleetConfig, redis_url: str, prefix: str) -> None:
        self.fleet = fleet
        # The shared prefix: the channel layer has a per-member one, the bus is the fleet's.
        self.bus = Bus(redis_url, prefix, fleet.machine_id, fleet.secret)

    @property
    def machine_id(self) -> str:
        return self.fleet.machine_id

    async def start(self) -> None:
        await self.bus.start()

    async def stop(self) -> None:
        await self.bus.stop()

    def status(self) -> dict[str, Any]:
        """`fleet` of GET /api/status: whether the other members can be reached, and if not why
        (Redis gone: this member goes on serving its own sessions)."""
        return {"machine": self.machine_id, "status": self.bus.status, "detail": self.bus.detail}
