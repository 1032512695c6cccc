"""One view (contract §18): every live list on every member carries every member's rows.

Each member publishes its own rows of a shared list whenever they change: at once on the bus
(kind "list", signed like every fleet message) for the members listening now, and into its
`FleetList` row in the shared schema (signed) for those that start later or were away. A member
keeps the others' rows in memory, appends them to its own (each row tagged with `machine` and
`machine_name`), and tells its own clients. While a machine is `unreachable` its live sessions
read `status: "unreachable"`, not `exited`: their processes may well be running there.

Pairings stay out: a device is paired with one member and opens the fleet through it only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import DatabaseError

from core import live
from fleet_app import conf, row_signature
from fleet_app.bus import Bus, FleetUnreachable
from fleet_app.membership import db_now
from fleet_app.models import FleetList
from fleet_app.signing import Envelope

logger = logging.getLogger(__name__)

SHARED = ("sessions", "agents_runtime", "notifications", "channels", "tunnels")
LIVE_STATUSES = ("starting", "running")
REPUBLISH_S = 2.0  # a list that could not be read (the database away) is tried again this often
PERSIST_EVERY_S = 1.0  # a list's FleetList row is written at most this often
Rows = list[dict[str, Any]]


class FleetLists:
    def __init__(
        self,
        fleet: conf.FleetConfig,
        bus: Bus,
        read_own: Callable[[str], Rows],
        own_name: Callable[[], str],
    ) -> None:
        self.fleet, self.bus = fleet, bus
        self._read_own, self.own_name = read_own, own_name
        self._rows: dict[str, dict[str, Rows]] = {}  # machine id → list → its rows
        self._seen: dict[str, tuple[str, int]] = {}  # machine id → (its boot, last seq)
        self.names: dict[str, str] = {}  # machine id → its name
        self.status: dict[str, str] = {}  # machine id → online | unreachable (the heartbeat's)
        self._boot, self._seq = secrets.token_hex(6), 0
        self._dirty: set[str] = set(SHARED)
        self._wake = asyncio.Event()
        self._unsaved: dict[str, Rows] = {}  # list → the rows published last, not yet in FleetList
        self._save = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # --- reading -------------------------------------------------------------------------------

    def extend(self, name: str, rows: Rows) -> Rows:
        """This member's rows of `name` with every other member's after them (core.live)."""
        if name not in SHARED:
            return rows
        merged = self._tagged(self.fleet.machine_id, self.own_name(), rows)
        for machine, lists in self._rows.items():
            if machine != self.fleet.machine_id and name in lists:
                merged.extend(self.remote_rows(machine, name))
        return merged

    def remote_rows(self, machine: str, name: str) -> Rows:
        name_of = self.names.get(machine, machine[:8])
        rows = self._tagged(machine, name_of, self._rows[machine][name])
        if name == "sessions" and self.status.get(machine) == "unreachable":
            for row in rows:
                if row.get("status") in LIVE_STATUSES:
                    row["status"] = "unreachable"
        return rows

    def others(self, name: str) -> Rows:
        """Every other member's rows of `name`, tagged, as this member's clients see them."""
        found: Rows = []
        for machine, lists in self._rows.items():
            if machine != self.fleet.machine_id and name in lists:
                found.extend(self.remote_rows(machine, name))
        return found

    def session_owner(self, given: str) -> str | None:
        """The member whose session this is (its id, or a unique prefix of 4+ characters), when
        it is another member's; None when no other member has it (or the prefix is ambiguous)."""
        wanted = given.strip().lower()
        if len(wanted) < 4:
            return None
        owners = {
            machine
            for machine, lists in self._rows.items()
            if machine != self.fleet.machine_id
            for row in lists.get("sessions", ())
            if str(row.get("id", "")).startswith(wanted)
        }
        return owners.pop() if len(owners) == 1 else None

    def learn_session(self, machine: str, row: dict[str, Any]) -> None:
        """A session another member just answered for (it started it for a person here):
        known as that member's at once, before its next publication arrives — the person's
        next step is opening it."""
        if machine == self.fleet.machine_id or not isinstance(row.get("id"), str):
            return
        rows = self._rows.setdefault(machine, {}).setdefault("sessions", [])
        self._rows[machine]["sessions"] = [row, *(r for r in rows if r.get("id") != row["id"])]

    @staticmethod
    def _tagged(machine: str, name: str, rows: Rows) -> Rows:
        return [{**row, "machine": machine, "machine_name": name} for row in rows]

    # --- the machines' statuses (the heartbeat) -------------------------------------------------

    async def statuses_changed(self, machines: dict[str, tuple[str, str]]) -> None:
        """The heartbeat's latest view, machine id → (name, status): a member that went or came
        back changes how its sessions read."""
        flipped = any(self.status.get(m) != status for m, (_, status) in machines.items())
        self.names = {m: name for m, (name, _) in machines.items()}
        self.status = {m: status for m, (_, status) in machines.items()}
        if flipped:
            await self._tell_clients(SHARED)

    # --- start, stop -----------------------------------------------------------------------------

    async def start(self) -> None:
        self.bus.handle("list", self._on_list)
        self.bus.handle("hello", self._on_hello)
        self.bus.on_rejoin(self._rejoined)
        with contextlib.suppress(DatabaseError):
            await database_sync_to_async(self._load_published)()
        layer = get_channel_layer()
        channel = await layer.new_channel()
        for name in SHARED:
            await layer.group_add(live.group_name(name), channel)
        self._tasks = [
            asyncio.create_task(self._hear_own_changes(layer, channel), name="fleet lists: hear"),
            asyncio.create_task(self._publish_loop(), name="fleet lists: publish"),
            asyncio.create_task(self._persist_loop(), name="fleet lists: persist"),
        ]
        await self._tell_clients(SHARED)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._persist_unsaved()  # what changed in the last second, for who starts next

    def _load_published(self) -> None:
        """What the others last published, from the shared schema: a member that starts (or
        rejoins) shows them at once, the ones away included."""
        for row in FleetList.objects.using(conf.FLEET_ALIAS).filter(list_name__in=SHARED):
            if row.machine_id == self.fleet.machine_id:
                continue
            if not row_signature.verify(self.fleet.secret, row.signed_fields(), row.signature):
                continue  # another secret's (the heartbeat logs its machine once)
            self._rows.setdefault(row.machine_id, {})[row.list_name] = list(row.rows)

    # --- publishing this member's rows ------------------------------------------------------------

    async def _hear_own_changes(self, layer: Any, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            name = message.get("list")
            if message.get("type") == "list.changed" and not message.get("elsewhere"):
                self._dirty.add(name) if name in SHARED else self._dirty.update(SHARED)
                self._wake.set()

    async def _publish_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            dirty, self._dirty = self._dirty, set()
            for name in sorted(dirty):
                try:
                    await self._publish(name)
                except DatabaseError as exc:  # PostgreSQL gone: tried again until it is back
                    logger.info("fleet: could not read %s to publish it: %s", name, exc)
                    self._dirty.add(name)
                    asyncio.get_running_loop().call_later(REPUBLISH_S, self._wake.set)
                except Exception:
                    logger.exception("fleet: publishing %s failed", name)

    async def _publish(self, name: str) -> None:
        rows = await database_sync_to_async(self._read_own)(name)
        if name == "notifications":  # what it delivered for others is theirs to show
            rows = [row for row in rows if not row.get("origin")]
        self._seq += 1
        body = {"name": name, "rows": rows, "boot": self._boot, "seq": self._seq}
        body["machine_name"] = self.own_name()
        with contextlib.suppress(FleetUnreachable):  # Redis gone: FleetList still says it
            await self.bus.broadcast("list", body)
        self._unsaved[name] = rows
        self._save.set()

    async def _persist_loop(self) -> None:
        """The rows published last, into FleetList: at once after a quiet second, else at most
        once a second. Written on every change, each write held up the member's next request
        (one thread does a member's database work), and the rows of members listening now
        travel on the bus anyway: FleetList is for those that start later or were away."""
        while True:
            await self._save.wait()
            self._save.clear()
            try:
                kept = await self._persist_unsaved()
            except Exception:  # not the database being away: said, and tried again all the same
                logger.exception("fleet: keeping the lists in the shared schema failed")
                kept = False
            if not kept:  # PostgreSQL gone: the bus said it
                asyncio.get_running_loop().call_later(REPUBLISH_S, self._save.set)
            await asyncio.sleep(PERSIST_EVERY_S)

    async def _persist_unsaved(self) -> bool:
        unsaved, self._unsaved = self._unsaved, {}
        while unsaved:
            name, rows = next(iter(unsaved.items()))
            try:
                await database_sync_to_async(self._persist)(name, rows)
            except DatabaseError as exc:
                logger.info("fleet: could not keep %s in the shared schema: %s", name, exc)
                self._unsaved = unsaved | self._unsaved  # newer rows, if any came meanwhile
                return False
            except BaseException:  # stopped (cancelled) mid-write: stop() writes what is left
                self._unsaved = unsaved | self._unsaved
                raise
            del unsaved[name]
        return True

    def _persist(self, name: str, rows: Rows) -> None:
        alias = conf.FLEET_ALIAS
        row = FleetList(machine_id=self.fleet.machine_id, list_name=name, rows=rows)
        row.updated = db_now(alias)
        row.signature = row_signature.sign(self.fleet.secret, row.signed_fields())
        FleetList.objects.using(alias).bulk_create(
            [row],
            update_conflicts=True,
            unique_fields=["machine", "list_name"],
            update_fields=["rows", "updated", "signature"],
        )

    def republish(self) -> None:
        self._dirty.update(SHARED)
        self._wake.set()

    # --- the others' rows -----------------------------------------------------------------------

    async def _on_list(self, envelope: Envelope) -> None:
        body, sender = envelope.body, envelope.sender
        name, rows = body.get("name"), body.get("rows")
        if name not in SHARED or not isinstance(rows, list):
            return
        boot, seq = str(body.get("boot", "")), int(body.get("seq", 0))
        last_boot, last_seq = self._seen.get(sender, ("", 0))
        if boot == last_boot and seq <= last_seq:
            return  # an older publication overtaken by a newer one
        self._seen[sender] = (boot, seq)
        self._rows.setdefault(sender, {})[name] = rows
        # Heard from: known by name at once (the heartbeat's next look may be 5 s away).
        self.names[sender] = str(body.get("machine_name") or self.names.get(sender, sender[:8]))
        self.status.setdefault(sender, "online")
        await self._tell_clients((name,))

    async def _on_hello(self, envelope: Envelope) -> None:
        """A member started or came back: it needs this member's rows (the bus only carries
        what is said while it listens)."""
        self.republish()

    async def _rejoined(self) -> None:
        """This member's link to Redis came back: what the others said meanwhile is in the
        shared schema; and they heard this member's hello, so they republish."""
        with contextlib.suppress(DatabaseError):
            await database_sync_to_async(self._load_published)()
        self.republish()
        await self._tell_clients(SHARED)

    async def _tell_clients(self, names: Any) -> None:
        for name in names:
            await live.abroadcast(name, elsewhere=True)
