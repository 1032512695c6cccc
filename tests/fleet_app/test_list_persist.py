"""A member's published lists go into FleetList at most once a second (fleet_app/lists.py): a
change is on the bus at once, the shared schema gets the newest rows — the first change at once,
a burst coalesced — and rows that could not be written (PostgreSQL gone) are written later,
never dropped for older ones. The bus and the write are stand-ins here: the timing is the unit;
tests/e2e/test_fleet_*.py run the real ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.db import OperationalError

from fleet_app import conf, lists
from fleet_app.lists import FleetLists, Rows

# database_sync_to_async tidies the test's database connections around each stand-in write.
pytestmark = pytest.mark.django_db


class Bus:
    def __init__(self) -> None:
        self.said: list[dict[str, Any]] = []

    async def broadcast(self, kind: str, body: dict[str, Any]) -> None:
        self.said.append(body)


class Written(FleetLists):
    """FleetLists whose FleetList writes are recorded (and fail while `down`)."""

    def __init__(self, bus: Bus, rows: list[Rows]) -> None:
        fleet = conf.FleetConfig(machine_id="m" * 32, secret="s" * 40)
        super().__init__(fleet, bus, lambda name: rows[-1], lambda: "a")  # type: ignore[arg-type]
        self.written: list[tuple[str, Rows]] = []
        self.down = False

    def _persist(self, name: str, rows: Rows) -> None:
        if self.down:
            raise OperationalError("the database is gone")
        self.written.append((name, rows))


async def test_a_burst_is_written_twice_and_the_newest_rows_win(monkeypatch: Any) -> None:
    monkeypatch.setattr(lists, "PERSIST_EVERY_S", 1.0)
    rows: list[Rows] = [[{"id": "s", "title": "0"}]]
    bus = Bus()
    member = Written(bus, rows)
    saver = asyncio.create_task(member._persist_loop())
    try:
        for i in range(20):
            rows.append([{"id": "s", "title": str(i)}])
            await member._publish("sessions")
            await asyncio.sleep(0.01)
        assert len(bus.said) == 20  # every change on the bus, at once
        assert [r[0]["title"] for _, r in member.written] == ["0"]  # the first, at once
        await asyncio.sleep(1.0)
        assert [r[0]["title"] for _, r in member.written] == ["0", "19"]  # then the newest
    finally:
        saver.cancel()


async def test_rows_not_written_while_the_database_is_gone_are_written_later(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(lists, "PERSIST_EVERY_S", 0.05)
    monkeypatch.setattr(lists, "REPUBLISH_S", 0.1)
    rows: list[Rows] = [[{"id": "s"}]]
    member = Written(Bus(), rows)
    member.down = True
    saver = asyncio.create_task(member._persist_loop())
    try:
        await member._publish("sessions")
        await member._publish("channels")
        await asyncio.sleep(0.2)
        assert member.written == []
        member.down = False
        await asyncio.sleep(0.3)
        assert sorted(name for name, _ in member.written) == ["channels", "sessions"]
    finally:
        saver.cancel()


async def test_stopping_writes_what_changed_in_the_last_second() -> None:
    member = Written(Bus(), [[{"id": "s"}]])
    member._unsaved["tunnels"] = [{"name": "t"}]
    await member.stop()
    assert member.written == [("tunnels", [{"name": "t"}])]
