"""The dashboard's side of "no frame over 1 MiB" (issue 41, finding 6; docs/sessions.md "Frames,
the queue's limits, backpressure"), in Debian's Chromium against a live daemon: what svc now sends
in pieces, the page puts together. The prompt queue comes once as `queue`, then as
`queue_change {added, removed, order}` (chat-log.js applies them); an event too large for a frame
comes cut, with where it is whole (chat.js links it); a session list over 512 KiB comes as pages
`{part, parts, items}` (api.js `live()` joins them).

The other clients are outside svc's code: a `websockets` client on /ws/chat, rows written into the
database file, the API over HTTP. Each check fails when the page's joining is broken (checked by
breaking queueChanged, the cut row's link and live()'s pages, one at a time)."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect
from websockets.sync.client import ClientConnection, connect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.termclient import create_session, start_hosting_daemon
from tests.e2e.test_frames import start, write_sessions

ACTIVE = "#session-panel .session-view.active"
MIB = 1 << 20


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-frames-browser"))
    yield server
    server.stop()


@pytest.fixture
def workspace(host: Daemon, tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    httpx.post(
        f"{host.url}/api/workspaces", json={"path": str(path)}, headers=host.owner_headers()
    ).raise_for_status()
    return path


def logged_in(browser: Browser, daemon: Daemon) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    return page


def send(page: Page, text: str) -> None:
    box = page.locator(f"{ACTIVE} .chat-input textarea")
    box.fill(text)
    box.press("Enter")


class SyncChat:
    """A /ws/chat client outside svc (Playwright's sync API holds this thread's event loop, so a
    blocking `websockets` client): it reads up to the event wanted, keeping the queue sent."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.queued: list[dict[str, Any]] = []

    def send(self, **message: Any) -> None:
        self.ws.send(json.dumps(message))

    def next(self, kind: str, timeout: float = 15) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            event = json.loads(self.ws.recv(timeout=max(0.0, deadline - time.monotonic())))
            if event["kind"] == "queue":
                self.queued = event["items"]
            if event["kind"] == kind:
                return event


def chat_socket(daemon: Daemon) -> ClientConnection:
    return connect(
        f"{daemon.ws_url}/ws/chat",
        origin=daemon.origin,  # type: ignore[arg-type]
        additional_headers=daemon.owner_headers(),
    )


def take_back(daemon: Daemon, session_id: str, text: str) -> None:
    """Another client opens the chat, takes the queued prompt `text` back and cancels the
    running turn (the queue then goes on)."""
    with chat_socket(daemon) as ws:
        chat = SyncChat(ws)
        chat.send(type="open", session_id=session_id)
        chat.next("queue")
        (item,) = [i for i in chat.queued if i["text"] == text]
        chat.send(type="unqueue", session_id=session_id, id=item["id"])
        change = chat.next("queue_change")
        assert change["removed"] == [item["id"]] and change["added"] == [], change
        chat.send(type="cancel", session_id=session_id)
        chat.next("turn_end")


def test_the_queue_shown_follows_its_changes_made_elsewhere(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    """Three prompts queued from the page behind a long turn; the middle one taken back by
    another client: the page shows the other two, in order (from `queue_change` alone: the page
    opened the chat before anything waited), and they run in that order."""
    page = logged_in(browser, host)
    try:
        expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)
        page.select_option("#new-agent", "fake")
        page.select_option("#new-workspace", str(workspace))
        page.select_option("#new-kind", "chat")
        page.click("#new-session button[type=submit]")
        send(page, "count 600 50")  # 30 s, unless cancelled
        agent = page.locator(f"{ACTIVE} .chat-agent")
        expect(agent.last).to_contain_text("3 ")
        session_id = page.locator(ACTIVE).get_attribute("data-session-id")
        assert session_id
        queued = page.locator(f"{ACTIVE} .chat-queued li .queued-text")
        for text in ("echo first", "echo second", "echo third"):
            send(page, text)
        expect(queued).to_have_text(["echo first", "echo second", "echo third"])

        take_back(host, session_id, "echo second")
        expect(queued).to_have_text(["echo first", "echo third"])

        users = page.locator(f"{ACTIVE} .chat-user")
        expect(users).to_have_text(["count 600 50", "echo first", "echo third"], timeout=20_000)
        expect(agent.last).to_have_text("third")
        expect(queued).to_have_count(0)
        expect(page.locator(f"{ACTIVE} .chat-turn-end", has_text="turn cancelled")).to_have_count(1)
    finally:
        page.context.close()


def a_turn(daemon: Daemon, session_id: str) -> int:
    """One turn from a `websockets` client; the seq of its end."""
    with chat_socket(daemon) as ws:
        chat = SyncChat(ws)
        chat.send(type="open", session_id=session_id)
        chat.next("session")
        chat.send(type="prompt", session_id=session_id, text="echo before")
        return chat.next("turn_end")["seq"]


def test_an_event_too_large_for_a_frame_shows_a_line_that_links_it_whole(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    """A stored tool call of 2.4 MB as JSON (written into the database, as an agent's huge tool
    output would be): the chat shows the tool, a line saying it is too large, and a link that
    opens it whole; the chat goes on."""
    session_id = create_session(host, workspace, agent="fake", kind="chat")["id"]
    seq = a_turn(host, session_id) + 1
    huge = {"toolCallId": "t1", "title": "cat big.log", "status": "completed"}
    huge["rawOutput"] = {"output": "\x01" * 400_000}
    with sqlite3.connect(host.home / "db.sqlite3") as db:
        db.execute(
            "INSERT INTO sessions_app_sessionevent (session_id, seq, kind, payload, created_at)"
            " VALUES (?, ?, 'tool_call', ?, '2025-01-01 00:00:00')",
            (uuid.UUID(session_id).hex, seq, json.dumps(huge)),
        )
    page = logged_in(browser, host)
    try:
        page.locator(f"#sidebar-tree li[data-session-id='{session_id}'] a").click()
        expect(page.locator(ACTIVE)).to_have_attribute("data-session-id", session_id)
        expect(page.locator(f"{ACTIVE} .chat-tool .tool-title")).to_have_text("⚙ cat big.log")
        line = page.locator(f"{ACTIVE} .chat-end", has_text="too large to show here")
        expect(line).to_have_count(1)
        expect(line).to_contain_text("tool_call too large to show here (")
        bytes_said = int(line.inner_text().split("(")[1].split(" bytes")[0])
        assert bytes_said > MIB, line.inner_text()
        link = line.get_by_role("link")
        fetch = f"/api/sessions/{session_id}/events/{seq}"
        expect(link).to_have_attribute("href", f"{fetch}?format=json")
        with page.context.expect_page() as opened:
            link.click()
        whole = opened.value
        whole.wait_for_load_state()
        shown = json.loads(whole.evaluate("() => document.body.innerText"))
        assert shown == {**huge, "kind": "tool_call", "seq": seq, "session_id": session_id}
        whole.close()
        # What the link opens is never a page of svc's origin, whatever an agent put in it.
        answer = httpx.get(
            f"{host.url}{fetch}?format=json",
            headers={**host.owner_headers(), "Accept": "text/html"},
            timeout=30,
        )
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers["x-content-type-options"] == "nosniff"

        send(page, "echo after")
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("after")
    finally:
        page.context.close()


def test_a_session_list_sent_in_pages_is_shown_whole(
    browser: Browser, fresh_daemon: Daemon, tmp_path: Path
) -> None:
    """2,500 sessions: /ws/sessions sends ~1 MB as pages. The Sessions table shows every one,
    and again after a change (a new list, in pages, replaces the one shown)."""
    written = write_sessions(fresh_daemon.home, 2500)
    daemon = start(fresh_daemon)
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    pages: list[int] = []  # how many parts each list /ws/sessions sent the page came in

    def heard(frame: str | bytes) -> None:
        said = json.loads(frame)
        pages.append(1 if isinstance(said, list) else said["parts"])

    page.on("websocket", lambda ws: "/ws/sessions" in ws.url and ws.on("framereceived", heard))
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    try:
        show(page, "sessions")
        rows = page.locator("#sessions tbody tr[data-session-id]")
        expect(rows).to_have_count(2500, timeout=30_000)
        ids = page.eval_on_selector_all(
            "#sessions tbody tr[data-session-id]", "(rows) => rows.map((r) => r.dataset.sessionId)"
        )
        assert set(ids) == written
        assert pages and pages[0] >= 2, pages  # the list came in pages
        titles = set(page.locator("#sessions tbody td.title").all_inner_texts())
        assert titles == {f"session number {n} with a title of a usual length" for n in range(2500)}

        made = create_session(daemon, tmp_path)["id"]
        expect(rows).to_have_count(2501, timeout=30_000)
        expect(page.locator(f"#sessions tbody tr[data-session-id='{made}']")).to_have_count(1)
    finally:
        page.context.close()
