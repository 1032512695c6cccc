"""The fleet's shared rows (contract §18), in the shared schema (fleet_app.routers): one
`Machine` per member, renewed by its heartbeat, and each member's published rows of each live
list (`FleetList`). Every row carries an HMAC of the fleet secret over its other fields
(fleet_app.row_signature); a row whose signature does not verify is ignored everywhere."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal, TypedDict

from django.db import models

# A machine whose row was not renewed for this long is `unreachable` (by the database's clock:
# members' clocks may disagree, the database's is one).
STALE_AFTER = timedelta(seconds=15)

MachineStatus = Literal["online", "unreachable"]


class MachineDict(TypedDict):
    id: str
    name: str
    version: str
    url: str
    agents: list[str]
    workspaces: list[str]
    sessions_running: int
    load: float
    last_seen: str | None
    started_at: str | None
    status: MachineStatus
    self: bool


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


class Machine(models.Model):
    id = models.CharField(max_length=32, primary_key=True)  # $SVC_HOME/machine.json
    name = models.CharField(max_length=64)  # settings `fleet.machine`
    version = models.CharField(max_length=64, blank=True)
    url = models.CharField(max_length=300, blank=True)  # the member's main port
    agents = models.JSONField(default=list)  # enabled agents' names
    workspaces = models.JSONField(default=list)  # paths
    sessions_running = models.IntegerField(default=0)
    load = models.FloatField(default=0.0)  # 1-minute load average
    last_seen = models.DateTimeField()  # the database's clock at the last heartbeat
    started_at = models.DateTimeField()  # the database's clock at the member's first one
    signature = models.CharField(max_length=64)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def signed_fields(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "url": self.url,
            "agents": self.agents,
            "workspaces": self.workspaces,
            "sessions_running": self.sessions_running,
            "load": self.load,
            "last_seen": self.last_seen,
            "started_at": self.started_at,
        }

    def status_at(self, db_now: datetime) -> MachineStatus:
        return "online" if db_now - self.last_seen < STALE_AFTER else "unreachable"

    def to_dict(self, *, status: MachineStatus, own_id: str) -> MachineDict:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "url": self.url,
            "agents": list(self.agents),
            "workspaces": list(self.workspaces),
            "sessions_running": self.sessions_running,
            "load": self.load,
            "last_seen": _iso(self.last_seen),
            "started_at": _iso(self.started_at),
            "status": status,
            "self": self.id == own_id,
        }


class FleetList(models.Model):
    """One member's own rows of one live list, as it last published them (contract §18 "One
    view"): the other members append them to their lists."""

    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="lists")
    list_name = models.CharField(max_length=64)
    rows = models.JSONField(default=list)
    updated = models.DateTimeField()
    signature = models.CharField(max_length=64)

    class Meta:
        ordering = ["machine", "list_name"]
        constraints = [
            models.UniqueConstraint(fields=["machine", "list_name"], name="fleet_list_per_machine")
        ]

    def __str__(self) -> str:
        return f"{self.list_name} of {self.machine_id}"

    def signed_fields(self) -> dict[str, Any]:
        return {
            "machine": self.machine_id,
            "list_name": self.list_name,
            "rows": self.rows,
            "updated": self.updated,
        }
