"""Machine rows (contract §18): only rows signed with the fleet secret are read — a tampered
field, another secret or a signature copied from another row and the row is not there — and
whether a machine is online is judged by the database's clock, never the reading member's."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone

from fleet_app import row_signature
from fleet_app.models import Machine
from fleet_app.selectors import machines_read

pytestmark = pytest.mark.django_db

SECRET = "k" * 40


def _row(ident: str, name: str, age_s: float, secret: str = SECRET) -> Machine:
    now = timezone.now()
    machine = Machine(
        id=ident * 32 if len(ident) == 1 else ident,
        name=name,
        version="0.1.0",
        url="http://127.0.0.1:1",
        agents=["shell"],
        workspaces=["/w"],
        sessions_running=2,
        load=0.25,
        last_seen=now - dt.timedelta(seconds=age_s),
        started_at=now - dt.timedelta(hours=1),
    )
    machine.signature = row_signature.sign(secret, machine.signed_fields())
    machine.save(using=connection.alias)
    return machine


def _read(secret: str = SECRET) -> tuple[dict[str, str], list[str]]:
    found = machines_read(using=connection.alias, secret=secret)
    return {m.name: m.status_at(m.db_now) for m in found.verified}, sorted(found.refused)


def test_rows_signed_with_the_secret_are_read_and_others_are_refused() -> None:
    a = _row("a", "a", 1)
    _row("b", "b", 1, secret="x" * 40)  # a member with another secret
    c = _row("c", "c", 1)
    assert _read() == ({"a": "online", "c": "online"}, ["b" * 32])
    Machine.objects.filter(pk=c.pk).update(sessions_running=99)  # tampered after signing
    assert _read() == ({"a": "online"}, ["b" * 32, "c" * 32])
    Machine.objects.filter(pk=c.pk).update(sessions_running=2, signature=a.signature)
    assert _read() == ({"a": "online"}, ["b" * 32, "c" * 32])  # another row's signature
    assert _read("x" * 40) == ({"b": "online"}, ["a" * 32, "c" * 32])


def test_a_row_is_stale_after_15_s_of_the_database_clock_whatever_the_reader_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _row("a", "fresh", 13)
    _row("b", "stale", 17)
    assert _read()[0] == {"fresh": "online", "stale": "unreachable"}
    # The reading member's own clock an hour ahead (or behind) changes nothing.
    for skew in (dt.timedelta(hours=1), -dt.timedelta(hours=1)):
        real_now = timezone.now
        monkeypatch.setattr(timezone, "now", lambda skew=skew, real=real_now: real() + skew)
        assert _read()[0] == {"fresh": "online", "stale": "unreachable"}
        monkeypatch.undo()


def test_signatures_cover_every_field_and_compare_in_constant_time() -> None:
    fields = _row("a", "a", 0).signed_fields()
    signature = row_signature.sign(SECRET, fields)
    assert row_signature.verify(SECRET, fields, signature)
    for key, value in [("name", "b"), ("agents", ["shell", "x"]), ("load", 0.26)]:
        assert not row_signature.verify(SECRET, {**fields, key: value}, signature)
    assert not row_signature.verify(SECRET, fields, signature.upper())
    assert not row_signature.verify("", fields, row_signature.sign("", fields))
    assert not row_signature.verify(SECRET, fields, None)  # type: ignore[arg-type]
