"""Whoever can write svc's database, and nothing else, cannot make svc act (issue 41, finding 2;
docs/security.md, attacker 8). The attacker here is plain SQL on the daemon's database file —
Python's sqlite3, no svc code, no token — against a live daemon; what they try:

- flip a waiting pairing to `approved` (or hand an approved one's cookie out again), write a
  paired device of their own, point a real one at their cookie: no cookie, nothing opens;
- queue a prompt: it never reaches the agent, nor any viewer's queue;
- store a prompt's key before the owner sends it: the owner's prompt is still sent;
- write or change a handover code: pickup refuses it;
- share a local port: nothing is served;
- flip a session to `running`, or point one at another folder: it is not started again;
- read a logged-in browser's session from the database and, as another local user, replay it on
  the dashboard host (a loopback request): it opens nothing.

tests/e2e/test_database_writer_fleet.py does the pairing on a fleet's PostgreSQL, up to a shell.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import sqlite3
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.browser_login import logged_in
from harness.daemon import Daemon, migrated_home
from harness.holders import end_holder
from harness.other_user import run_as_other
from harness.termclient import Chat, create_session, hosting_settings, shell_env
from harness.upstream import Upstream
from tests.e2e.test_queued_prompts import prompts, stored
from tests.e2e.test_remote_tunnel import Remote

DOCUMENT = {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"}


class SqlWriter:
    """Write access to the daemon's database and nothing else: sqlite3 on its file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, query: str, *params: Any) -> list[tuple]:
        with sqlite3.connect(self.path, timeout=20) as db:
            return db.execute(query, params).fetchall()

    def insert(self, table: str, **values: Any) -> None:
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self.run(f"INSERT INTO {table} ({names}) VALUES ({marks})", *values.values())


def stamp(at: datetime | None = None) -> str:
    """A datetime as Django keeps it in SQLite (UTC, no zone)."""
    return (at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def in_db(session_id: str) -> str:
    return uuid.UUID(session_id).hex  # Django keeps UUIDs as 32 hex characters in SQLite


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def refusals(daemon: Daemon, kind: str) -> list[str]:
    return [
        line
        for line in daemon.log().splitlines()
        if f"ignored a {kind} row" in line and "svc did not write" in line
    ]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-database-writer")
    settings = {**hosting_settings(), "workspaces": [str(tmp)]}
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sql(daemon: Daemon) -> SqlWriter:
    return SqlWriter(daemon.home / "db.sqlite3")


@pytest.fixture(scope="module")
def remote(daemon: Daemon) -> Remote:
    return Remote(daemon, daemon.auth()["remote_port"])


# --- pairing ------------------------------------------------------------------------------------


def test_a_pairing_flipped_to_approved_by_sql_hands_out_no_cookie(
    daemon: Daemon, sql: SqlWriter, remote: Remote
) -> None:
    with remote.client() as phone:
        started = phone.post("/pair/start").json()
        # The attacker's own browser: it knows the code it shows.
        sql.run(
            "UPDATE remote_app_pairingrequest SET status = 'approved', approved_via = 'api' "
            "WHERE code = ? AND status = 'pending'",
            started["code"],
        )
        status = phone.get("/pair/status", params={"pair_id": started["pair_id"]})
        assert "svc_remote" not in phone.cookies, "the database alone paired a browser"
        assert status.json()["status"] == "pending", status.text
        assert phone.get("/api/sessions").status_code == 401
    assert len(refusals(daemon, "pairing request")) == 1

    # The owner approves a phone; the attacker copies the approved row before the phone takes
    # its cookie, puts the copy back after, and asks for the cookie under the id it read.
    with remote.client() as owners_phone:
        started = owners_phone.post("/pair/start").json()
        approved = httpx.post(
            f"{daemon.url}/api/pairings/approve",
            json={"code": started["code"]},
            headers=daemon.owner_headers(),
        )
        assert approved.status_code == 200, approved.text
        copy = sql.run(
            "SELECT * FROM remote_app_pairingrequest WHERE code = ? AND NOT cookie_sent",
            started["code"],
        )
        assert len(copy) == 1
        owners_phone.get("/pair/status", params={"pair_id": started["pair_id"]})
        assert owners_phone.cookies.get("svc_remote")
    pair_id = copy[0][0]
    sql.run("DELETE FROM remote_app_pairingrequest WHERE pair_id = ?", pair_id)
    sql.run(
        f"INSERT INTO remote_app_pairingrequest VALUES ({', '.join('?' * len(copy[0]))})", *copy[0]
    )
    with remote.client() as attacker:
        attacker.get("/pair/status", params={"pair_id": pair_id})
        assert "svc_remote" not in attacker.cookies, "the database handed a cookie out twice"


def test_a_paired_device_written_by_sql_and_a_forged_cookie_open_nothing(
    daemon: Daemon, sql: SqlWriter, remote: Remote
) -> None:
    with remote.client() as owners_phone:
        real = remote.pair(owners_phone)["device"]["id"]
    # Everything of a real device's row but its cookie, which only the phone holds.
    (fingerprint,) = sql.run(
        "SELECT token_fingerprint FROM remote_app_paireddevice WHERE id = ?", real
    )[0]
    page_key = secrets.token_hex(32)
    # A cookie of the attacker's making: unsigned, and signed with a made-up MAC.
    for n, cookie in enumerate(("made-up-by-sql", f"{secrets.token_urlsafe(24)}.{'0' * 32}")):
        sql.insert(
            "remote_app_paireddevice",
            id=f"sql{n}",
            cookie_hash=sha256(cookie),
            page_key=page_key,
            device="",
            host="",
            first_seen=stamp(),
            last_seen=stamp(),
            token_fingerprint=fingerprint,
        )
        answer = httpx.get(
            f"{remote.url}/api/sessions",
            headers={"X-Svc-Page-Key": page_key, "Cookie": f"svc_remote={cookie}"},
        )
        assert answer.status_code == 401, f"a device row written by SQL opened /api/: {answer}"
    # The real device's row pointed at the attacker's cookie opens nothing either.
    mine = "attackers-own-cookie"
    sql.run(
        "UPDATE remote_app_paireddevice SET cookie_hash = ?, page_key = ? WHERE id = ?",
        sha256(mine),
        page_key,
        real,
    )
    answer = httpx.get(
        f"{remote.url}/api/sessions",
        headers={"X-Svc-Page-Key": page_key, "Cookie": f"svc_remote={mine}"},
    )
    assert answer.status_code == 401, answer.text
    listed = httpx.get(f"{daemon.url}/api/pairings", headers=daemon.owner_headers()).json()
    assert {"sql0", "sql1"}.isdisjoint({d["id"] for d in listed})


REPLAY_SESSION = """
import http.client, os, re
port = int(os.environ["PORT"])
ask = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
ask.request("GET", "/", headers={"Accept": "text/html"})  # where the dashboard lives
host = re.match(r"http://([^/:]+):", ask.getresponse().getheader("Location")).group(1)
for stolen in os.environ["STOLEN"].split():
    replay = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    cookie = "svc_session=" + stolen
    replay.request("GET", "/api/sessions", headers={"Host": f"{host}:{port}", "Cookie": cookie})
    print(replay.getresponse().status)
"""


def test_a_browser_session_read_from_the_database_opens_nothing_for_another_user(
    daemon: Daemon, sql: SqlWriter
) -> None:
    with logged_in(daemon) as browser:
        assert browser.get("/api/sessions").status_code == 200
        stolen = [key for (key,) in sql.run("SELECT session_key FROM django_session")]
        assert stolen
        replayed = run_as_other(
            REPLAY_SESSION, env={"PORT": str(daemon.port), "STOLEN": " ".join(stolen)}
        )
        assert replayed.returncode == 0, replayed.stderr
        statuses = replayed.stdout.split()
        assert statuses == ["401"] * len(stolen), f"a session id read from the database: {statuses}"
        assert browser.get("/api/sessions").status_code == 200  # the owner's browser still is


# --- prompts ------------------------------------------------------------------------------------


async def test_a_queued_prompt_inserted_by_sql_never_reaches_the_agent(
    daemon: Daemon, sql: SqlWriter, tmp_path: Path
) -> None:
    sid = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=sid)
    await chat.send(type="prompt", session_id=sid, text="count 30 50")
    await chat.next("agent_message_chunk", timeout=15)
    sql.insert(
        "sessions_app_queuedprompt",
        session_id=in_db(sid),
        position=0,  # before anything the owner queues
        text="echo forged-by-sql",
        source="dashboard",
        who="owner",
        created_at=stamp(),
    )
    await chat.send(type="prompt", session_id=sid, text="echo genuine")
    while not (queue := await chat.next("queue", timeout=15))["items"]:
        pass  # the queue as it was before (empty)
    assert [i["text"] for i in queue["items"]] == ["echo genuine"], queue
    history = await stored(daemon, sid, turns=2)
    await asyncio.sleep(1)  # a third turn, if one were coming, would have started
    history = await stored(daemon, sid, turns=2)
    assert prompts(history) == ["count 30 50", "echo genuine"], prompts(history)
    assert not sql.run("SELECT 1 FROM sessions_app_queuedprompt WHERE session_id = ?", in_db(sid))
    await chat.close()


async def test_a_prompt_key_inserted_by_sql_cannot_keep_the_owners_prompt_from_being_sent(
    daemon: Daemon, sql: SqlWriter, tmp_path: Path
) -> None:
    sid = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    # Keys are often predictable (a chat platform's update ids): stored before the owner's turn.
    sql.insert(
        "sessions_app_promptkey", session_id=in_db(sid), key="client:k-1", received_at=stamp()
    )
    chat = await Chat.connect(daemon)
    await chat.open(session_id=sid)
    await chat.send(type="prompt", session_id=sid, text="echo keyed", key="k-1")
    received = await chat.next("prompt_received", timeout=15)
    assert received["again"] is False, "a key written by SQL kept the owner's prompt back"
    assert prompts(await stored(daemon, sid, turns=1)) == ["echo keyed"]
    # The same key again from the owner is still recognised as sent before.
    await chat.send(type="prompt", session_id=sid, text="echo keyed", key="k-1")
    assert (await chat.next("prompt_received", timeout=15))["again"] is True
    await chat.close()


# --- handover codes -----------------------------------------------------------------------------


def test_a_handover_code_written_or_changed_by_sql_is_refused_at_pickup(
    daemon: Daemon, sql: SqlWriter, tmp_path: Path
) -> None:
    mine = create_session(daemon, tmp_path)["id"]
    theirs = create_session(daemon, tmp_path)["id"]

    def pickup(code: str) -> httpx.Response:
        return httpx.post(
            f"{daemon.url}/api/handover/pickup",
            json={"code": code},
            headers=daemon.owner_headers(),
        )

    now = datetime.now(UTC)
    sql.insert(
        "sessions_app_handovercode",
        code="QQQQ",
        session_id=in_db(theirs),
        created_at=stamp(now),
        expires_at=stamp(now + timedelta(seconds=100)),
    )
    assert pickup("QQQQ").status_code == 404, "a handover code written by SQL was picked up"

    # A real code, pointed at another session by SQL: the owner does not pick that one up.
    code = httpx.post(
        f"{daemon.url}/api/sessions/{mine}/handover", headers=daemon.owner_headers()
    ).json()["code"]
    sql.run(
        "UPDATE sessions_app_handovercode SET session_id = ? WHERE code = ?", in_db(theirs), code
    )
    assert pickup(code).status_code == 404
    # What the owner issues still works.
    code = httpx.post(
        f"{daemon.url}/api/sessions/{mine}/handover", headers=daemon.owner_headers()
    ).json()["code"]
    picked = pickup(code)
    assert picked.status_code == 200 and picked.json()["id"] == mine, picked.text
    for sid in (mine, theirs):
        httpx.delete(f"{daemon.url}/api/sessions/{sid}", headers=daemon.owner_headers())


# --- shares -------------------------------------------------------------------------------------


def test_a_share_written_by_sql_serves_nothing(daemon: Daemon, sql: SqlWriter) -> None:
    share = secrets.token_hex(16)
    with Upstream() as upstream:
        sql.insert(
            "previews_app_preview",
            slug=f"sql-{share[:8]}",
            share_slug=share,
            kind="port",
            port=upstream.port,
            file="",
            workspace="",
            title="",
            created_at=stamp(),
            share_expires_at=stamp(datetime.now(UTC) + timedelta(days=30)),
        )
        answer = httpx.get(f"{daemon.url}/preview/s/{share}/")
        assert answer.status_code == 404, "a share written by SQL served a local port"
        assert not upstream.requests


# --- sessions started again ---------------------------------------------------------------------


def session_row(sid: str, workspace: Path, status: str) -> dict[str, Any]:
    return {
        "id": in_db(sid),
        "agent": "fake",
        "workspace": str(workspace),
        "profile_id": "",
        "kind": "chat",
        "status": status,
        "title": "",
        "created_at": stamp(),
        "updated_at": stamp(),
        "agent_session_id": "",
        "ended_by": "",
        "detail": "",
        "title_by": "",
    }


def status_of(daemon: Daemon, sid: str) -> str:
    answer = httpx.get(f"{daemon.url}/api/sessions/{sid}", headers=daemon.owner_headers())
    return answer.json()["status"]


def test_a_session_flipped_or_inserted_by_sql_is_not_started_again(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    (fresh_daemon.home / "settings.json").write_text(json.dumps(hosting_settings()))
    daemon, sql = fresh_daemon.start(), SqlWriter(fresh_daemon.home / "db.sqlite3")
    elsewhere = tmp_path / "a folder the attacker chose"
    elsewhere.mkdir()
    # A witness: a real chat whose process goes while svc is away is started again at start.
    witness = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    # The owner's ended chat, pointed at another folder and set running again; and one made up.
    ended = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    httpx.delete(
        f"{daemon.url}/api/sessions/{ended}", params={"wait": "1"}, headers=daemon.owner_headers()
    )
    made_up = str(uuid.uuid4())
    daemon.kill()
    end_holder(daemon.home)  # the witness's process is gone: it is resumed at the next start
    sql.run(
        "UPDATE sessions_app_session SET status = 'running', workspace = ? WHERE id = ?",
        str(elsewhere),
        in_db(ended),
    )
    sql.insert("sessions_app_session", **session_row(made_up, elsewhere, "running"))
    daemon.start()
    deadline = time.monotonic() + 30
    while status_of(daemon, witness) != "running":
        assert time.monotonic() < deadline, "the witness was never resumed"
        time.sleep(0.2)
    time.sleep(1)  # resumes run one by one, in the order svc found them
    assert status_of(daemon, ended) != "running", "svc started a session SQL pointed elsewhere"
    assert status_of(daemon, made_up) != "running", "svc started a session SQL made up"
    refused = httpx.post(
        f"{daemon.url}/api/sessions/{made_up}/resume", headers=daemon.owner_headers()
    )
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_sealed"
    assert len(refusals(daemon, "session")) == 2
