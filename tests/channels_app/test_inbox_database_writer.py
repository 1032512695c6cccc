"""A channel's inbox written by whoever can write svc's database (issue 41, finding 2; docs/
security.md, attacker 8): at start a channel hands over what a run before it took in and never
finished (contract §17). A row written there by plain SQL — a message "from" the allowed owner —
must never reach an agent: it is recorded failed, logged, and the channel goes on. Through the
fake Bot API and the real python-telegram-bot; the attacker is sqlite3 on svc's database file."""

from __future__ import annotations

import json
import sqlite3

import pytest
from channels.db import database_sync_to_async

from harness.fakes.telegram_api import FakeTelegram
from harness.runtime import wait_status
from svcproject.parts import Parts
from tests.channels_app.telegram_chat import OWNER, texts

pytestmark = pytest.mark.django_db(transaction=True)


def sql_insert_taken_message(text: str) -> None:
    """What an attacker with the database alone writes: an unfinished message of the owner's."""
    from django.db import connection

    payload = {"chat": str(OWNER), "user": str(OWNER), "text": text, "files": []}
    with sqlite3.connect(connection.settings_dict["NAME"], timeout=20) as db:
        db.execute(
            "INSERT INTO channels_app_handledevent (channel, event_id, at, status, error, payload)"
            " VALUES ('telegram', 'u424242', '2020-01-01 00:00:00', 'taken', '', ?)",
            (json.dumps(payload),),
        )


def prompted_with(needle: str) -> int:
    from sessions_app.models import SessionEvent

    events = SessionEvent.objects.filter(kind="user_message_chunk")
    return sum(needle in str(e.payload.get("text", "")) for e in events)


def inbox_row(event_id: str) -> tuple[str, str]:
    from channels_app.models import HandledEvent

    row = HandledEvent.objects.get(channel="telegram", event_id=event_id)
    return row.status, row.error


def restarts(runtime: Parts) -> int:
    return {s["name"]: s for s in runtime.supervisor.statuses()}["telegram"]["restarts"]


async def answered(tg: FakeTelegram, needle: str) -> None:
    await tg.async_wait_for(
        lambda: [t for t in texts(tg) if needle in t and "— done" in t], timeout=30
    )


async def test_a_message_written_into_the_inbox_by_sql_is_never_handed_to_an_agent(
    tg: FakeTelegram, svc: Parts
) -> None:
    tg.send_text(OWNER, "echo before")
    await answered(tg, "before")
    await database_sync_to_async(sql_insert_taken_message)("echo forged-by-sql")
    # The channel starts again (a failed poll): what the inbox holds unfinished is replayed.
    await tg.async_wait_for(
        lambda: any(c["status"] is None for c in tg.calls("getUpdates")), timeout=10
    )
    tg.fail_next("getUpdates", error_code=502, description="Bad Gateway")
    tg.send_text(OWNER, "echo during")
    await tg.async_wait_for(lambda: restarts(svc) >= 1, timeout=30)
    await wait_status(svc, "telegram", "online")
    await answered(tg, "during")
    tg.send_text(OWNER, "echo after")  # everything before it is handed over by then
    await answered(tg, "after")
    assert await database_sync_to_async(prompted_with)("forged-by-sql") == 0, texts(tg)
    status, error = await database_sync_to_async(inbox_row)("u424242")
    assert (status, "not recorded by svc" in error) == ("failed", True), (status, error)
