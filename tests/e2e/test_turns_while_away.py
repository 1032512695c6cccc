"""What a chat's agent did while svc was away (contract §17; issue 42, paths 1 and 2): a turn that
ended, failed or was still running when svc came back, and a permission request made before svc
died. A real daphne is SIGKILLed (or SIGTERMed, `host.on_exit: "keep"`) and started again on the
same port (as `make run` starts it), once the holder's journal shows the turn ended — and a tab
left open reopens the chat the moment the port accepts a socket, while svc still starts: the
window test_work_survives.py misses, whose clients open the chat once svc answers HTTP (which
waits for the start to end)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon
from harness.termclient import (
    Chat,
    create_session,
    get_session,
    hosting_settings,
    open_ws,
    shell_env,
)

COUNT = 400
CHUNKS = [f"{i} " for i in range(1, COUNT + 1)]


def start(daemon: Daemon, tmp_path: Path) -> Daemon:
    (daemon.home / "settings.json").write_text(json.dumps(hosting_settings()))
    daemon.env.update(shell_env(tmp_path))
    return daemon.start()


def journal(daemon: Daemon, session_id: str) -> bytes:
    """What the holder journaled of the agent's output and svc has not acknowledged."""
    path = daemon.home / "holder" / "sessions" / session_id / "out"
    return path.read_bytes() if path.exists() else b""


async def until_journaled(daemon: Daemon, session_id: str, needle: bytes) -> None:
    """Until the agent wrote `needle` into the holder's journal (svc is away: nobody reads)."""
    async with asyncio.timeout(60):
        while needle not in journal(daemon, session_id):
            await asyncio.sleep(0.02)


async def until_gone(pid: int) -> None:
    """Until the agent's process has exited (its holder reaps it)."""
    async with asyncio.timeout(60):
        while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid):
            await asyncio.sleep(0.02)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def go_away(daemon: Daemon, how: str) -> None:
    if how == "sigkill":
        daemon.kill()
    else:  # SIGTERM with host.on_exit "keep" (the default): the holder keeps the chat
        assert daemon.stop(keep_sessions=True) == 0


async def back_with_a_tab_open(daemon: Daemon, session_id: str) -> Chat:
    """Start svc again as `make run` does (a cold interpreter: the suite's warm one has the ACP
    SDK imported already, which taking a chat back imports otherwise), and open the chat the
    moment its port accepts a socket — what a dashboard tab left open does when it reconnects
    — while svc is still starting."""
    daemon.cold = True
    starting = asyncio.ensure_future(asyncio.to_thread(daemon.start, 120))
    async with asyncio.timeout(60):
        while True:
            try:
                chat = await Chat.connect(daemon)
                break
            except OSError:
                await asyncio.sleep(0.01)
    await chat.send(type="open", session_id=session_id)
    await starting
    return chat


async def history_of(daemon: Daemon, session_id: str) -> list[dict]:
    """The stored history, as a client that opens the chat replays it."""
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    while True:
        try:
            await chat.next("__none__", timeout=0.5)
        except TimeoutError:
            break
    await chat.close()
    return [e for e in chat.events if e.get("replay")]


async def until_idle(daemon: Daemon, session_id: str, timeout: float = 60) -> None:
    """Until the live list of agents shows the chat not busy (or gone: its agent exited)."""
    runtime = await open_ws(daemon, "/ws/agents/runtime")
    try:
        async with asyncio.timeout(timeout):
            while True:
                entries = json.loads(await runtime.recv())
                mine = [e for e in entries if e["session_id"] == session_id]
                if not mine or not mine[0]["busy"]:
                    return
    finally:
        await runtime.close()


def notices(daemon: Daemon, session_id: str, event: str) -> list[dict]:
    response = httpx.get(f"{daemon.url}/api/notifications", headers=daemon.owner_headers())
    response.raise_for_status()
    return [n for n in response.json() if n["event"] == event and n["session_id"] == session_id]


async def first_of(chat: Chat, *wanted: str, timeout: float = 30) -> dict:
    """The next event of one of the `wanted` kinds."""
    async with asyncio.timeout(timeout):
        while True:
            while chat.cursor < len(chat.events):
                event = chat.events[chat.cursor]
                chat.cursor += 1
                if event["kind"] in wanted:
                    return event
            chat.events.append(json.loads(await chat.ws.recv()))


def said(events: list[dict]) -> list[str]:
    return [e["text"] for e in events if e["kind"] == "agent_message_chunk"]


def kinds(events: list[dict]) -> list[str]:
    return [e["kind"] for e in events]


# --- path 1: a turn that ends while svc is away ------------------------------------------------


@pytest.mark.parametrize(
    ("how", "when"), [("sigkill", "ended"), ("sigterm", "ended"), ("sigkill", "running")]
)
async def test_a_turn_that_went_on_while_svc_was_away_reaches_an_open_tab_and_ends_once(
    fresh_daemon: Daemon, tmp_path: Path, how: str, when: str
) -> None:
    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    ms = 20 if when == "ended" else 60  # the probe's 20 ms; "running": back before its end
    await chat.send(type="prompt", session_id=session_id, text=f"count {COUNT} {ms}")
    await chat.next("agent_message_chunk", timeout=30, text="100 ")
    await chat.send(type="prompt", session_id=session_id, text="echo queued")  # waits its turn
    await chat.next("queue", timeout=30)  # recorded while the turn runs
    go_away(daemon, how)
    if when == "ended":
        await until_journaled(daemon, session_id, b'"stopReason"')
    tab = await back_with_a_tab_open(daemon, session_id)
    opened = await tab.next("session", timeout=30)
    assert opened["status"] == "running", opened
    first = await tab.next("turn_end", timeout=60)
    assert first["stop_reason"] == "end_turn"
    assert said(tab.events) == CHUNKS  # the replayed history, then live: each chunk once
    await tab.next("turn_end", timeout=30)  # the queued prompt, sent once the end was known
    await until_idle(daemon, session_id)
    history = await history_of(daemon, session_id)
    assert said(history) == [*CHUNKS, "queued"]
    assert [e["text"] for e in history if e["kind"] == "user_message_chunk"] == [
        f"count {COUNT} {ms}",
        "echo queued",
    ]
    assert kinds(history).count("turn_end") == 2
    assert get_session(daemon, session_id)["status"] == "running"


@pytest.mark.parametrize("failure", ["error", "exit"])
async def test_a_turn_that_failed_while_svc_was_away_is_recorded_once_and_notified_once(
    fresh_daemon: Daemon, tmp_path: Path, failure: str
) -> None:
    """The agent answers the prompt with a JSON-RPC error, or exits, after streaming the rest of
    its turn into the holder; nobody watches the chat when svc is back."""
    daemon = start(fresh_daemon, tmp_path)
    created = create_session(daemon, tmp_path, agent="fake", kind="chat")
    session_id = created["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    last = "fail out of tokens" if failure == "error" else "crash"
    await chat.send(type="prompt", session_id=session_id, text=f"count {COUNT} 5 ; {last}")
    await chat.next("agent_message_chunk", timeout=30, text="100 ")
    await chat.close()
    go_away(daemon, "sigkill")
    if failure == "error":
        await until_journaled(daemon, session_id, b'"error"')
    else:
        await until_gone(created["pid"])
    daemon.start()
    await until_idle(daemon, session_id)
    if failure == "exit":
        async with asyncio.timeout(30):
            while get_session(daemon, session_id)["status"] != "exited":
                await asyncio.sleep(0.1)
    history = await history_of(daemon, session_id)
    words = [*CHUNKS, "about to crash"] if failure == "exit" else CHUNKS
    assert said(history) == words, (len(said(history)), said(history)[-3:])
    ended = [e for e in history if e["kind"] in ("error", "turn_end")]
    expected = "out of tokens" if failure == "error" else "Connection closed"
    assert [(e["kind"], e.get("message") or e.get("stop_reason")) for e in ended] == [
        ("error", f"prompt failed: {expected}"),
        ("turn_end", "error"),
    ]
    row = get_session(daemon, session_id)
    if failure == "exit":
        assert (row["status"], row["exit_code"]) == ("exited", 3)
    else:
        assert row["status"] == "running"
        assert len(notices(daemon, session_id, "turn_ended")) == 1  # nobody saw it end


# --- path 2: a permission request made before svc died ----------------------------------------


async def asked_then_away(daemon: Daemon, tmp_path: Path, how: str) -> tuple[str, str]:
    """A chat whose agent asks permission; svc goes away ~1.5 s later and is back ~2 s after."""
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="permission")
    asked = await chat.next("permission_request", timeout=30)
    await asyncio.sleep(1.5)  # asked well before the kill, as it is while its person is away
    go_away(daemon, how)
    await asyncio.sleep(2)
    return session_id, asked["request_id"]


async def answered_once(daemon: Daemon, session_id: str, surface: str) -> None:
    history = await history_of(daemon, session_id)
    assert kinds(history).count("permission_request") == 1
    assert kinds(history).count("permission_resolved") == 1
    assert said(history) == ["permission: allow"]  # the agent had the answer once
    approvals = httpx.get(
        f"{daemon.url}/api/approvals",
        params={"session_id": session_id},
        headers=daemon.owner_headers(),
    ).json()
    assert [(a["chosen"], a["decided_by"]["surface"]) for a in approvals] == [("allow", surface)]
    assert len(notices(daemon, session_id, "permission_requested")) <= 1  # never again


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
async def test_a_permission_asked_before_svc_died_is_answered_from_a_tab_left_open(
    fresh_daemon: Daemon, tmp_path: Path, how: str
) -> None:
    daemon = start(fresh_daemon, tmp_path)
    session_id, request_id = await asked_then_away(daemon, tmp_path, how)
    tab = await back_with_a_tab_open(daemon, session_id)
    pending = await tab.next("permission_request", timeout=30)
    assert pending["request_id"] == request_id
    await tab.send(
        type="permission", session_id=session_id, request_id=request_id, option_id="allow"
    )
    ended = await first_of(tab, "turn_end", "error")
    assert ended["kind"] == "turn_end", ended.get("message")  # not refused
    assert ended["stop_reason"] == "end_turn"
    await answered_once(daemon, session_id, "dashboard")


async def test_a_permission_asked_while_svc_was_away_waits_for_an_answer(
    fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """Asked while svc is down: when it is back nobody has opened the chat yet, and the request
    is shown as pending (contract §17), not refused as "nobody to ask"; answered through
    `POST /api/sessions/{id}/permissions`."""
    daemon = start(fresh_daemon, tmp_path)
    session_id = create_session(daemon, tmp_path, agent="fake", kind="chat")["id"]
    chat = await Chat.connect(daemon)
    await chat.open(session_id=session_id)
    await chat.send(type="prompt", session_id=session_id, text="wait 1 ; permission")
    await chat.next("user_message_chunk", timeout=30)
    go_away(daemon, "sigkill")
    await until_journaled(daemon, session_id, b"session/request_permission")
    daemon.start()
    url = f"{daemon.url}/api/sessions/{session_id}/permissions"
    async with asyncio.timeout(30):
        while not (waiting := httpx.get(url, headers=daemon.owner_headers()).json()):
            await asyncio.sleep(0.1)
    answer = {"request_id": waiting[0]["request_id"], "option_id": "allow"}
    answered = httpx.post(url, json=answer, headers=daemon.owner_headers())
    assert answered.status_code == 204, answered.text
    await until_idle(daemon, session_id)
    await answered_once(daemon, session_id, "api")
    assert len(notices(daemon, session_id, "permission_requested")) == 1
