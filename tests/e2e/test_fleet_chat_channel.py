"""A chat channel across the fleet (contract §18 "Act anywhere"): a person's one Telegram bot, run
by member a, starts a chat on member b, prompts it, and answers its permission request with a
button; b records the decision as made on Telegram by that person, through a. /handover and
/pickup reach b's sessions. A message a passed on is taken once by b when a is killed before b
said it has it. Against two live members, one PostgreSQL, one Redis and the fake Bot API."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.daemon import Daemon
from harness.fakes.telegram_api import FakeTelegram
from harness.fleet import Fleet, api, hosting_fleet, wait_for, workspace_of

OWNER = 4242


@pytest.fixture(scope="module")
def tg() -> Iterator[FakeTelegram]:
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, tg: FakeTelegram) -> Iterator[Fleet]:
    with hosting_fleet(tmp_path_factory.mktemp("fleet-chat"), ("a", "b")) as running:
        a = running.daemon("a")
        settings = json.loads((a.home / "settings.json").read_text())
        settings["channels"] = {
            "telegram": {
                "bot_token": tg.token,
                "api_base": tg.api_base,
                "allowed_users": [OWNER],
                "agent": "fake",
                "workspace": workspace_of(running, "a"),
            }
        }
        (a.home / "settings.json").write_text(json.dumps(settings, indent=2))
        wait_for(lambda: channel_status(a), lambda s: s == "online")
        yield running


def channel_status(daemon: Daemon) -> str:
    rows = api(daemon, "GET", "/api/channels").json()
    return next((c["status"] for c in rows if c["name"] == "telegram"), "")


def said(tg: FakeTelegram, needle: str) -> dict[str, Any]:
    """The bot's message holding `needle` (waits for it)."""
    return wait_for(
        lambda: next((m for m in tg.sent(OWNER) if needle in m.get("text", "")), None),
        lambda m: m is not None,
    )


def test_a_bot_on_a_drives_a_chat_on_b_and_answers_its_permission(
    fleet: Fleet, tg: FakeTelegram
) -> None:
    a, b = fleet.daemon("a"), fleet.daemon("b")
    tg.send_text(OWNER, "/machines")
    listed = said(tg, "this one")["text"]
    assert "● a — online" in listed and "● b — online" in listed, listed

    tg.send_text(OWNER, f"/new fake {fleet.root / 'work-b'} @b")
    started = said(tg, "New session")["text"]
    assert " on b: fake in " in started, started
    prefix = started.split()[2].rstrip(":")
    sid = wait_for(
        lambda: [r["id"] for r in api(b, "GET", "/api/sessions").json() if r["id"][:8] == prefix],
        bool,
    )[0]  # b hosts it; a does not
    assert api(a, "GET", f"/api/sessions/{sid}").json()["machine_name"] == "b"

    tg.send_text(OWNER, "echo hello from b over telegram")
    said(tg, "hello from b over telegram")

    tg.send_text(OWNER, "permission")
    asked = said(tg, "The agent asks to")
    button = asked["reply_markup"]["inline_keyboard"][0][0]
    tg.tap(OWNER, asked["message_id"], button["callback_data"])
    said(tg, "permission: ")  # the agent heard the answer and said which

    rows = wait_for(
        lambda: api(b, "GET", "/api/approvals", params={"machine": "b"}).json(),
        lambda rows: any(r["session_id"] == sid for r in rows),
    )
    decided = next(r for r in rows if r["session_id"] == sid)["decided_by"]
    assert decided["surface"] == "telegram", decided
    assert decided["who"].endswith("via a") and str(OWNER) in decided["who"], decided

    tg.send_text(OWNER, "/status")
    assert "on b, idle" in said(tg, f"Session {sid[:8]}: fake on b")["text"]
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


def said_next(tg: FakeTelegram, needle: str, after: int) -> str:
    """The text of the bot's first message after the first `after` that holds `needle`."""
    found = wait_for(
        lambda: next((m for m in tg.sent(OWNER)[after:] if needle in m.get("text", "")), None),
        lambda m: m is not None,
    )
    return str(found["text"])


def test_handover_and_pickup_reach_sessions_of_other_members(
    fleet: Fleet, tg: FakeTelegram
) -> None:
    a, b = fleet.daemon("a"), fleet.daemon("b")
    seen = len(tg.sent(OWNER))
    tg.send_text(OWNER, f"/new fake {workspace_of(fleet, 'b')} @b")
    prefix = said_next(tg, "New session", seen).split()[2].rstrip(":")
    sid = next(r["id"] for r in api(b, "GET", "/api/sessions").json() if r["id"][:8] == prefix)

    # /handover of b's session, in a's chat: b issues the code, and it is b's to redeem.
    seen = len(tg.sent(OWNER))
    tg.send_text(OWNER, "/handover")
    code = said_next(tg, "Handover code:", seen).split("Handover code: ", 1)[1][:4]
    picked = api(a, "POST", "/api/handover/pickup", json={"code": code})
    assert picked.status_code == 200, picked.text
    assert (picked.json()["id"], picked.json()["machine_name"]) == (sid, "b")

    # A code for b's session asked of a's API, picked up in a chat that was on a's own session.
    made = api(a, "POST", f"/api/sessions/{sid}/handover")
    assert made.status_code == 201, made.text
    seen = len(tg.sent(OWNER))
    tg.send_text(OWNER, "/new")
    said_next(tg, "New session", seen)
    seen = len(tg.sent(OWNER))
    tg.send_text(OWNER, f"/pickup {made.json()['code'].lower()}")
    assert f"Picked up session {sid[:8]} (fake) on b." in said_next(tg, "Picked up", seen)
    tg.send_text(OWNER, "echo picked up from b")
    said_next(tg, "picked up from b", seen + 1)
    tg.send_text(OWNER, "/status")
    assert "on b, idle" in said_next(tg, f"Session {sid[:8]}: fake on b", seen + 1)

    seen = len(tg.sent(OWNER))
    tg.send_text(OWNER, f"/pickup {made.json()['code']}")  # used: no member has it any more
    assert "No live handover code" in said_next(tg, "handover code", seen)
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})


def prompts_on(fleet: Fleet, member: str, sid: str) -> list[str]:
    """The prompts b's agent was sent in session `sid`, from b's own table."""
    rows = fleet.sql(
        f"SELECT payload->>'text' FROM {fleet.members[member].schema}.sessions_app_sessionevent "
        "WHERE session_id = %s AND kind = 'user_message_chunk' ORDER BY seq",
        sid,
    )
    return [text for (text,) in rows]


def inbox(fleet: Fleet, member: str, needle: str = "", event_id: str = "") -> list[tuple]:
    """(event id, status) of the member's inbox events that hold `needle` (while taken: a
    handed-over event keeps no payload) or have `event_id`."""
    table = f"{fleet.members[member].schema}.channels_app_handledevent"
    if event_id:
        return fleet.sql(f"SELECT event_id, status FROM {table} WHERE event_id = %s", event_id)
    return fleet.sql(
        f"SELECT event_id, status FROM {table} WHERE payload::text LIKE %s", f"%{needle}%"
    )


def sealed_key(fleet: Fleet, member: str, sid: str, key: str) -> str:
    """What the member stores of a prompt key: its HMAC under the member's own row-seal key,
    which the database does not hold (docs/security.md)."""
    seal_key = bytes.fromhex((fleet.daemon(member).home / "row-seal.key").read_text().strip())
    text = json.dumps(["prompt key", sid, key], separators=(",", ":"), sort_keys=True)
    return hmac.new(seal_key, text.encode(), hashlib.sha256).hexdigest()


def test_a_message_passed_on_is_taken_once_when_its_member_dies_before_hearing_back(
    fleet: Fleet, tg: FakeTelegram
) -> None:
    """b is stopped (SIGSTOP) so that it cannot say it has the prompt; a is SIGKILLed while it
    waits to hear so. b, continued, runs the prompt; a, started again, sends it again under the
    same key: b answers that it has it, and its agent was sent it once. (What a says when b
    never answers: tests/channels_app/test_remote_chat.py.)"""
    a, b = fleet.daemon("a"), fleet.daemon("b")
    seen = len(tg.sent(OWNER))
    tg.send_text(OWNER, f"/new fake {workspace_of(fleet, 'b')} @b")
    prefix = said_next(tg, "New session", seen).split()[2].rstrip(":")
    sid = next(r["id"] for r in api(b, "GET", "/api/sessions").json() if r["id"][:8] == prefix)

    os.kill(b.proc.pid, signal.SIGSTOP)
    try:
        tg.send_text(OWNER, "echo taken-once")
        # a took it in (its inbox holds it, not handed over) and sent it on: kill it now.
        taken = wait_for(lambda: inbox(fleet, "a", "taken-once"), lambda rows: len(rows) == 1)
        time.sleep(0.5)  # the prompt is in Redis, and a waits for b's answer
        assert inbox(fleet, "a", event_id=taken[0][0])[0][1] == "taken"
        fleet.kill("a")
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    wait_for(lambda: prompts_on(fleet, "b", sid), lambda p: p == ["echo taken-once"])

    fleet.start("a")  # replays what it took in and never handed over
    event_id = taken[0][0]
    wait_for(lambda: inbox(fleet, "a", event_id=event_id)[0][1], lambda s: s == "done", 30)
    time.sleep(1)  # a second turn, were one started, would have its prompt recorded by now
    assert prompts_on(fleet, "b", sid) == ["echo taken-once"]
    keys = fleet.sql(
        f"SELECT key FROM {fleet.members['b'].schema}.sessions_app_promptkey WHERE session_id = %s",
        sid,
    )
    # Kept under the member that sent it: no browser's key is ever one of these.
    a_id = fleet.members["a"].machine_id  # a's key: its machine, its channel, the update
    assert [k for (k,) in keys] == [
        sealed_key(fleet, "b", sid, f"member {a_id}:{a_id}:telegram:{event_id}")
    ]
    api(a, "DELETE", f"/api/sessions/{sid}", params={"wait": "1"})
