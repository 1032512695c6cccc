"""No WebSocket frame over 1 MiB, and no slow client holding svc's memory (issue 41, finding 6 and
the low about the queue and backpressure). daphne refuses to send a message over 1 MiB by raising
inside the consumer, which closed the socket 1011: a 99,000-emoji prompt made its chat unviewable
for good, a queue over 1 MiB silenced every viewer, and /ws/sessions closed past ~2,000 sessions.

Everything from outside: real daphne (harness), the scripted ACP agent, `websockets` clients with
their default 1 MiB `max_size` (what a browser takes), rows written into the database file."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from harness.daemon import Daemon
from harness.termclient import Chat, create_session, hosting_settings

MIB = 1 << 20
EMOJI_PROMPT = "😀" * 99_000
CONTROL_PROMPT = "\x01" * 99_000


def start(daemon: Daemon) -> Daemon:
    (daemon.home / "settings.json").write_text(json.dumps(hosting_settings()))
    return daemon.start()


async def socket(daemon: Daemon, path: str, **kwargs: Any) -> ClientConnection:
    """A client as a browser is: it takes messages of up to 1 MiB (websockets' default)."""
    return await connect(
        f"{daemon.ws_url}{path}",
        origin=daemon.origin,  # type: ignore[arg-type]
        additional_headers=daemon.owner_headers(),
        max_size=MIB,
        **kwargs,
    )


async def chat_on(daemon: Daemon) -> Chat:
    return Chat(await socket(daemon, "/ws/chat"))


async def send_prompt(chat: Chat, session_id: str, text: str, key: str = "") -> None:
    # As a browser's JSON.stringify: UTF-8, no \\u escapes (396 KB for the emoji prompt).
    message = {"type": "prompt", "session_id": session_id, "text": text}
    await chat.ws.send(json.dumps(message | ({"key": key} if key else {}), ensure_ascii=False))


def whole_user_prompts(events: list[dict[str, Any]]) -> list[str]:
    """The prompts as a client puts them together: the parts of a split event in order."""
    prompts: list[str] = []
    for event in events:
        if event["kind"] != "user_message_chunk":
            continue
        if event.get("part", 0) > 0:
            prompts[-1] += event["text"]
        else:
            prompts.append(event["text"])
    return prompts


async def test_a_99000_emoji_prompt_replays_whole_and_the_chat_stays_usable(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    first = await chat_on(daemon)
    await first.open(session_id=session_id)
    await send_prompt(first, session_id, EMOJI_PROMPT)
    await first.next("turn_end", timeout=30)  # the agent answers "unknown command"
    # 99,000 control characters: 594 KB escaped even as UTF-8 JSON.
    await send_prompt(first, session_id, CONTROL_PROMPT)
    await first.next("turn_end", timeout=30)
    assert whole_user_prompts(first.events) == [EMOJI_PROMPT, CONTROL_PROMPT]
    await first.close()
    for _ in range(2):  # every later open: the history replays, and the socket stays open
        again = await chat_on(daemon)
        opened = await again.open(session_id=session_id, timeout=30)
        assert opened["status"] == "running"
        replayed = [e for e in again.events if e.get("replay")]
        assert whole_user_prompts(replayed)[:2] == [EMOJI_PROMPT, CONTROL_PROMPT]
        await send_prompt(again, session_id, "echo still here")
        await again.next("turn_end", timeout=15)
        assert again.texts().endswith("still here")
        await again.close()


async def test_an_event_too_large_for_any_frame_is_cut_and_fetched_whole(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """A stored event that is not text (written here into the database, as an agent's huge tool
    output would be) is sent cut, with `truncated`, and the route it names answers it whole."""
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await chat_on(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="echo before")
    ended = await chat.next("turn_end", timeout=15)
    await chat.close()
    huge = {"toolCallId": "t1", "title": "cat big.log", "status": "completed"}
    huge["rawOutput"] = {"output": "\x01" * 400_000}  # 2.4 MB escaped
    seq = ended["seq"] + 1
    with sqlite3.connect(daemon.home / "db.sqlite3") as db:
        db.execute(
            "INSERT INTO sessions_app_sessionevent (session_id, seq, kind, payload, created_at)"
            " VALUES (?, ?, 'tool_call', ?, '2025-01-01 00:00:00')",
            (uuid.UUID(session_id).hex, seq, json.dumps(huge)),
        )
    again = await chat_on(daemon)
    await again.open(session_id=session_id, timeout=30)
    cut = next(e for e in again.events if e["kind"] == "tool_call")
    assert cut["truncated"] is True and cut["bytes"] > MIB and cut["title"] == "cat big.log"
    assert cut["fetch"] == f"/api/sessions/{session_id}/events/{seq}"
    whole = httpx.get(f"{daemon.url}{cut['fetch']}", headers=daemon.owner_headers(), timeout=30)
    assert whole.status_code == 200 and whole.json()["rawOutput"] == huge["rawOutput"]
    refused = httpx.get(f"{daemon.url}{cut['fetch']}", timeout=30)
    assert refused.status_code in (401, 403)
    await again.send(type="prompt", session_id=session_id, text="echo after")
    await again.next("turn_end", timeout=15)
    await again.close()


async def test_a_full_queue_refuses_the_next_prompt_and_viewers_hear_only_changes(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    sender, viewer = await chat_on(daemon), await chat_on(daemon)
    await sender.open(session_id=session_id)
    await viewer.open(session_id=session_id)
    await sender.send(type="prompt", session_id=session_id, text="sleep 60")
    await sender.next("agent_message_chunk", timeout=15)
    # Two emoji prompts wait (792 KB); a third would pass 1 MiB: refused, saying why.
    for n in range(2):
        await send_prompt(sender, session_id, EMOJI_PROMPT, key=f"big{n}")
        assert (await sender.next("prompt_received", key=f"big{n}"))["waiting"] == n + 1
    await send_prompt(sender, session_id, EMOJI_PROMPT, key="big2")
    refusal = await sender.next("error", key="big2")
    assert "queue is full" in refusal["message"], refusal
    # Count: 50 prompts at most.
    for n in range(48):
        await send_prompt(sender, session_id, f"echo {n}", key=f"small{n}")
        await sender.next("prompt_received", key=f"small{n}")
    await send_prompt(sender, session_id, "echo one too many", key="last")
    assert "queue is full" in (await sender.next("error", key="last"))["message"]
    # The viewer kept its socket and holds the queue from the changes alone.
    while len(viewer.queued) < 50:
        await viewer.next("queue_change", timeout=15)
    assert [i["text"] for i in viewer.queued[2:]] == [f"echo {n}" for n in range(48)]
    assert viewer.queued[0]["truncated"] and viewer.queued[0]["length"] == 99_000
    changes = [e for e in viewer.events if e["kind"] == "queue_change"]
    assert all(len(c["added"]) <= 1 for c in changes), "a change carries what changed"
    biggest = max(len(json.dumps(c, ensure_ascii=False).encode()) for c in changes)
    assert biggest < 64 << 10, biggest
    # Taking one back is a change too; a chat opened now gets the whole queue once.
    await viewer.send(type="unqueue", session_id=session_id, id=viewer.queued[1]["id"])
    change = await viewer.next("queue_change", timeout=15)
    assert change["added"] == [] and len(change["removed"]) == 1 and len(change["order"]) == 49
    late = await chat_on(daemon)
    await late.open(session_id=session_id)
    assert len((await late.next("queue"))["items"]) == 49
    await sender.send(type="cancel", session_id=session_id)
    for chat in (sender, viewer, late):
        await chat.close()


def write_sessions(home: Path, count: int) -> set[str]:
    """Ended sessions written straight into the database file (fast; svc lists every row)."""
    rows, ids = [], set()
    for n in range(count):
        session_id = uuid.uuid4()
        ids.add(str(session_id))
        at = f"2025-01-01 00:{n // 60 % 60:02d}:{n % 60:02d}"
        rows.append(
            (session_id.hex, "shell", f"/tmp/workspace-{n}", "", "terminal", "exited", 0, None,
             f"session number {n} with a title of a usual length", at, at, at, "", "user",
             "stopped by you", "user", "")
        )  # fmt: skip
    with sqlite3.connect(home / "db.sqlite3") as db:
        db.executemany(
            "INSERT INTO sessions_app_session (id, agent, workspace, profile_id, kind, status,"
            " exit_code, pid, title, created_at, updated_at, ended_at, agent_session_id,"
            " ended_by, detail, title_by, seal) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
    return ids


async def read_list(ws: ClientConnection) -> list[dict[str, Any]]:
    """One whole list: a JSON array, or its pages `{part, parts, items}` put together."""
    pages: list[list[dict[str, Any]]] = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if isinstance(frame, list):
            return frame
        if frame["part"] == 0:
            pages = []
        pages.append(frame["items"])
        if len(pages) == frame["parts"]:
            return [item for page in pages for item in page]


async def test_2500_sessions_reach_a_sessions_socket_that_stays_open(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    written = write_sessions(fresh_daemon.home, 2500)
    daemon = start(fresh_daemon)
    ws = await socket(daemon, "/ws/sessions")
    listed = await read_list(ws)
    assert {s["id"] for s in listed} == written
    made = create_session(daemon, tmp_path)  # a change: the list comes again, whole
    listed = await read_list(ws)
    while made["id"] not in {s["id"] for s in listed}:
        listed = await read_list(ws)
    assert len(listed) == 2501
    await ws.close()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def flood_turn(driver: Chat, session_id: str, flood: str, pid: int) -> tuple[int, dict]:
    """One flooding turn; svc's peak RSS during it, and its `turn_end`."""
    await driver.send(type="prompt", session_id=session_id, text=f"flood {flood}")
    ended = asyncio.create_task(driver.next("turn_end", timeout=600))
    peak = rss_bytes(pid)
    while not ended.done():
        peak = max(peak, rss_bytes(pid))
        await asyncio.sleep(0.2)
    return peak, await ended


@pytest.mark.timeout(300)
async def test_a_viewer_that_stops_reading_keeps_svc_memory_bounded_and_loses_nothing(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """Two turns of 200 chunks of 128 KB (each event ~256 KB as sent, its text twice: ~100 MB
    in all; SVC_TEST_FLOOD="30000 4096" for the issue's 30,000-chunk turn): the first read by
    its one viewer (what svc itself needs for such a turn), the second while another viewer,
    which opened the chat from its start, reads nothing. The stalled viewer adds a bounded
    amount to svc's peak memory (before the outbox: the history and every event it had not
    read, +175 MiB here), and once it reads again it gets every event, in order, once — read
    back from the database where it fell behind, without being closed for it (4008 is for a
    client that never reads)."""
    daemon = start(fresh_daemon)
    pid = daemon.proc.pid  # type: ignore[union-attr]
    flood = os.environ.get("SVC_TEST_FLOOD") or "200 131072"
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    driver = await chat_on(daemon)
    await driver.open(session_id=session_id)
    before = rss_bytes(pid)
    read_peak, first_end = await flood_turn(driver, session_id, flood, pid)
    # The stalled viewer: its client takes 4 messages into its own buffer, then stops reading.
    stalled = await socket(daemon, "/ws/chat", max_queue=4)
    await stalled.send(json.dumps({"type": "open", "session_id": session_id}))
    await asyncio.sleep(1)
    started = time.monotonic()
    stalled_peak, turn_end = await flood_turn(driver, session_id, flood, pid)
    seconds = time.monotonic() - started
    print(
        f"\nflood {flood}: RSS {before >> 20} MiB; peak {read_peak >> 20} MiB read, "
        f"{stalled_peak >> 20} MiB with a stalled viewer; second turn {seconds:.1f} s"
    )
    assert stalled_peak - read_peak < 48 * MIB, (read_peak >> 20, stalled_peak >> 20)
    # Reading again: every stored event once, in order, up to the turn's end. A client that
    # read nothing for longer than daphne's ping timeout (30 s) was let go meanwhile: it opens
    # the chat again after the last event it has, as the dashboard's chat-link.js does.
    seqs: list[int] = []
    closed: list[int | None] = []
    async with asyncio.timeout(120):
        while not seqs or seqs[-1] < turn_end["seq"]:
            try:
                event = json.loads(await stalled.recv())
            except ConnectionClosed:
                closed.append(stalled.close_code)
                stalled = await socket(daemon, "/ws/chat")
                after = seqs[-1] if seqs else 0
                await stalled.send(
                    json.dumps({"type": "open", "session_id": session_id, "after": after})
                )
                continue
            if isinstance(event.get("seq"), int) and event.get("part", 0) == 0:
                seqs.append(event["seq"])
    print(f"read back in {time.monotonic() - started - seconds:.1f} s; closed {closed}")
    assert seqs == list(range(1, turn_end["seq"] + 1)), "a gap or a repeat"
    assert 4008 not in closed, closed
    assert first_end["seq"] < turn_end["seq"]
    await stalled.close()
    await driver.close()


async def test_a_history_of_large_events_opens_whole_without_the_socket_closing(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """60 events of ~512 KB each (chunks of 256 KB: the text twice). Opening the chat sends a
    first page and reads the rest back as the socket drains; that read-back held a page of 50
    such events (26 MB) at once, past the 16 MiB at which a socket is taken for one that never
    reads, so the next thing put (the `session` event) closed it 4008 — on every open, each
    `after` where the last one stopped: the chat could not be read."""
    daemon = start(fresh_daemon)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    driver = await chat_on(daemon)
    await driver.open(session_id=session_id)
    await driver.send(type="prompt", session_id=session_id, text="flood 60 262144")
    last = (await driver.next("turn_end", timeout=120))["seq"]
    await driver.close()
    viewer = await socket(daemon, "/ws/chat")
    await viewer.send(json.dumps({"type": "open", "session_id": session_id}))
    seqs: list[int] = []
    async with asyncio.timeout(60):
        while not seqs or seqs[-1] < last:
            try:
                event = json.loads(await viewer.recv())
            except ConnectionClosed:
                pytest.fail(f"closed {viewer.close_code} after {len(seqs)} of {last} events")
            if isinstance(event.get("seq"), int) and event.get("part", 0) == 0:
                seqs.append(event["seq"])
    assert seqs == list(range(1, last + 1))
    await viewer.close()
