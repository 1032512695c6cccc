"""The heartbeat (contract §18 "Machines"), a supervised service of fleet members: every 5 s it
renews this member's signed Machine row, and it re-reads every machine's status — every 5 s and
at the moment the next online machine's row turns 15 s old by the database's clock — pushing the
`machines` list to this member's clients whenever a machine appears, goes, flips status or
changes what it says. So a member killed with SIGKILL reads `unreachable` everywhere 15 s
after its last renewal at the latest, which is within 15 s of its death."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from datetime import datetime
from typing import Any

from channels.db import database_sync_to_async
from django.db import InterfaceError, OperationalError

from core.supervisor import Supervisor
from fleet_app import conf, membership, selectors
from fleet_app.models import STALE_AFTER

logger = logging.getLogger(__name__)

BEAT_S = 5.0
# A status is read a moment after a row's 15 s are up, so the read sees it stale.
EXPIRY_MARGIN_S = 0.05
# What of a row is not a change worth a frame: it moves on every beat.
_RESTLESS = ("last_seen", "load")
LEAVE_WAIT_S = 2.0  # of the 5 s an orderly stop has (svcproject.startup)


class Heartbeat:
    name = "fleet-heartbeat"
    list_name = "internal"  # shown by /api/status

    def __init__(
        self,
        fleet: conf.FleetConfig,
        publish: Callable[[str], Awaitable[None]],
        on_statuses: Callable[[dict[str, tuple[str, str]]], Awaitable[None]] | None = None,
    ) -> None:
        self.fleet, self.publish, self.on_statuses = fleet, publish, on_statuses
        self._started_at: datetime | None = None
        self._seen: tuple | None = None  # what the last frame of `machines` showed
        self._refused: set[str] = set()  # rows logged as not verifying

    def settings_key(self, settings: Any) -> Hashable:
        return None  # the name is read on every beat; the rest needs a restart

    async def run(self, online: Callable[[str], None]) -> None:
        loop = asyncio.get_running_loop()
        next_beat, trouble = 0.0, "not yet"
        while True:
            try:
                if loop.time() >= next_beat:
                    next_beat = loop.time() + BEAT_S
                    await database_sync_to_async(self._beat)()
                expiry = await self._evaluate()
            except (OperationalError, InterfaceError) as exc:
                # PostgreSQL gone: keep trying at the same pace (no supervisor backoff, which
                # would keep this member away for up to a minute after the database returns).
                if trouble in ("", "not yet"):
                    logger.warning("fleet heartbeat: the database is unreachable: %s", exc)
                trouble = f"the database is unreachable: {' '.join(str(exc).split())[:200]}"
                online(trouble)
                expiry = None
            else:
                if trouble:
                    logger.info("fleet: this is machine %s, in the fleet", self.fleet.machine_id)
                trouble = ""
                online(f"machine {self.fleet.machine_id}, renewed every {BEAT_S:g} s")
            wait = next_beat - loop.time()
            if expiry is not None:
                wait = min(wait, expiry + EXPIRY_MARGIN_S)
            await asyncio.sleep(max(wait, EXPIRY_MARGIN_S))

    async def leave(self, supervisor: Supervisor) -> None:
        """The daemon stops in order: no more beats, and the row says so at once."""
        await supervisor.remove(self.name)
        if self._started_at is None:
            return
        try:
            await asyncio.wait_for(
                database_sync_to_async(membership.leave)(self.fleet), LEAVE_WAIT_S
            )
        except (TimeoutError, OperationalError, InterfaceError) as exc:
            logger.info("fleet: could not mark this machine as gone (%s): it will be in 15 s", exc)

    def _beat(self) -> None:
        self._started_at = membership.beat(self.fleet, self._started_at)

    async def _evaluate(self) -> float | None:
        """Push `machines` if it changed; returns the seconds until an online machine's row
        turns stale (None when none is online)."""
        found = await database_sync_to_async(selectors.machines_read)(
            using=conf.FLEET_ALIAS, secret=self.fleet.secret
        )
        for refused in set(found.refused) - self._refused:
            # A member with another secret (or a row written by hand): never shown, said once.
            logger.warning(
                "fleet: ignoring machine %s, its row is not signed with this fleet's secret",
                refused,
            )
        self._refused = set(found.refused)
        shown, expiries, statuses = [], [], {}
        for machine in found.verified:
            status = machine.status_at(machine.db_now)
            statuses[machine.id] = (machine.name, status)
            row = machine.to_dict(status=status, own_id=self.fleet.machine_id)
            shown.append(tuple((k, str(v)) for k, v in row.items() if k not in _RESTLESS))
            if status == "online":
                expiries.append((machine.last_seen + STALE_AFTER - machine.db_now).total_seconds())
        if self.on_statuses is not None:
            await self.on_statuses(statuses)
        if tuple(shown) != self._seen:
            self._seen = tuple(shown)
            await self.publish("machines")
        return min(expiries) if expiries else None
