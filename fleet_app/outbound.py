"""Asking other members (contract §18 "Act anywhere"): which member a request is for, sending it
there over the signed bus, and fleet-wide reads made of every member's answer.

The person is authenticated by this member (their token or their paired device); the owner runs
the request through its own views (fleet_app.inbound) with the person's surface."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import dataclass
from typing import Any

from fleet_app import conf
from fleet_app.bus import Bus, FleetUnreachable
from fleet_app.lists import FleetLists
from fleet_app.selectors import machine_list_dicts

CALL_TIMEOUT_S = 60.0  # a stop that waits, a merge or a resume may take a while
WHOSE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Forwarded:
    """A request as it travels: what the owner needs to run it, and who asks."""

    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes
    surface: str  # "main" | "remote"
    device: str = ""
    device_name: str = ""

    def message(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": [list(h) for h in self.headers],
            "body": base64.b64encode(self.body).decode(),
            "surface": self.surface,
            "device": self.device,
            "device_name": self.device_name,
        }


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None


class MachineUnknown(Exception):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message, self.status = message, status


class Forwarder:
    def __init__(self, fleet: conf.FleetConfig, bus: Bus, lists: FleetLists) -> None:
        self.fleet, self.bus, self.lists = fleet, bus, lists

    @property
    def machine_id(self) -> str:
        return self.fleet.machine_id

    def name_of(self, machine: str) -> str:
        return self.lists.names.get(machine, machine[:8])

    def resolve(self, given: str) -> str:
        """A machine named by its id or its name → its id (contract §18). Sync: it may read
        the machines (one that joined a moment ago is not in the last heartbeat's view)."""
        wanted = given.strip()
        known = dict(self.lists.names)
        known.setdefault(self.machine_id, self.name_of(self.machine_id))
        if wanted not in known and wanted.lower() not in {n.lower() for n in known.values()}:
            found = {m["id"]: m["name"] for m in machine_list_dicts()}
            known |= found
            for machine, name in found.items():  # until the heartbeat's next look
                self.lists.names.setdefault(machine, name)
        if wanted in known:
            return wanted
        matches = [m for m, name in known.items() if name.lower() == wanted.lower()]
        if not matches:
            raise MachineUnknown(
                f"no machine {given!r} in this fleet: GET /api/machines lists them", 404
            )
        if len(matches) > 1:
            raise MachineUnknown(f"{len(matches)} machines are named {given!r}: give its id", 409)
        return matches[0]

    def others_online(self) -> list[str]:
        return [
            m
            for m, status in self.lists.status.items()
            if m != self.machine_id and status == "online"
        ]

    async def send(self, machine: str, request: Forwarded) -> Reply:
        """Raises FleetUnreachable (the member is away, or Redis is)."""
        if self.lists.status.get(machine) == "unreachable":
            raise FleetUnreachable(machine, "it has not renewed its row for 15 s")
        body = request.message() | {"caller_name": self.lists.own_name()}
        answer = await self.bus.call(machine, "http", body, timeout=CALL_TIMEOUT_S)
        if "error" in answer and "status" not in answer:  # the bus's own: no handler, it failed
            raise FleetUnreachable(machine, str(answer["error"].get("message", "")))
        body = base64.b64decode(str(answer.get("body") or ""))
        return Reply(int(answer.get("status", 502)), str(answer.get("content_type", "")), body)

    async def send_each(
        self, machines: list[str], request: Forwarded
    ) -> dict[str, Reply | FleetUnreachable]:
        replies = await asyncio.gather(
            *(self.send(m, request) for m in machines), return_exceptions=True
        )
        out: dict[str, Reply | FleetUnreachable] = {}
        for machine, reply in zip(machines, replies, strict=True):
            if isinstance(reply, BaseException) and not isinstance(reply, FleetUnreachable):
                reply = FleetUnreachable(machine, f"{type(reply).__name__}: {reply}")
            out[machine] = reply  # type: ignore[assignment]
        return out

    async def picked_up_elsewhere(self, request: Forwarded) -> tuple[str, Reply] | None:
        """A handover pickup (`request`) asked of the other members, one at a time (a code is
        used once): the member whose code it was and its answer, or None when none had it.
        The caller counts a failure once, here, so guessing costs the same on every member."""
        for machine in self.others_online():
            try:
                reply = await self.send(machine, request)
            except FleetUnreachable:
                continue
            if reply.status == 200:
                return machine, reply
        return None

    async def whose(self, kind: str, given: str) -> str | None:
        """The other member that has this subagent run or turn, if one answers that it does."""
        machines = self.others_online()
        answers = await asyncio.gather(
            *(
                self.bus.call(m, "whose", {"kind": kind, "id": given}, timeout=WHOSE_TIMEOUT_S)
                for m in machines
            ),
            return_exceptions=True,
        )
        for machine, answer in zip(machines, answers, strict=True):
            if isinstance(answer, dict) and answer.get("has"):
                return machine
        return None
