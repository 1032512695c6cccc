"""`turn_ended` in Debian's Chromium (contract §15): a page with two chat tabs open tells svc which
one it shows, so a turn that ends in the background tab, under another view or in a hidden
browser tab is notified once, and a turn that ends in the tab shown is not.

The turns in the background are prompted by another client, a /ws/chat socket that opens nothing
(so it shows nothing): the page is the only one subscribed. Each step starts once the page has
sent the `visible` frame it should (Playwright sees the frames a page sends). A step expecting
no notification is followed by one expecting one, for another session, whose arrival is the
point after which the first count is final (the decision is made the moment a turn ends)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, WebSocket, expect
from websockets.sync.client import connect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.termclient import create_session, start_hosting_daemon

ACTIVE = "#session-panel .session-view.active"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-turn-ended"))
    yield server
    server.stop()


@pytest.fixture
def workspace(host: Daemon, tmp_path: Path) -> Path:
    path = tmp_path / "app"
    path.mkdir()
    httpx.post(
        f"{host.url}/api/workspaces",
        json={"path": str(path), "name": "app"},
        headers=host.owner_headers(),
    ).raise_for_status()
    return path


def until(condition: Callable[[], Any], what: str, limit: float = 20.0) -> Any:
    deadline = time.monotonic() + limit
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not in time"
        time.sleep(0.02)
    return value


class Visibility:
    """Every `visible` frame the page sends on its /ws/chat sockets, per session, in order."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.said: dict[str, list[bool]] = {}
        page.on("websocket", self._socket)

    def _socket(self, socket: WebSocket) -> None:
        if "/ws/chat" in socket.url:
            socket.on("framesent", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        message = json.loads(payload)
        if message.get("type") == "visible":
            self.said.setdefault(message["session_id"], []).append(message["visible"])

    def wait(self, session_id: str, visible: bool) -> None:
        """Until the page's last word on `session_id` is `visible` (frames arrive while
        Playwright is asked something: a short wait on the page lets them in)."""
        deadline = time.monotonic() + 20
        while (self.said.get(session_id) or [None])[-1] is not visible:
            assert time.monotonic() < deadline, f"{session_id}: {self.said.get(session_id)}"
            self.page.wait_for_timeout(20)


def turn_ended(host: Daemon, session_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{host.url}/api/notifications", headers=host.owner_headers())
    response.raise_for_status()
    return [
        n for n in response.json() if n["event"] == "turn_ended" and n["session_id"] == session_id
    ]


def notified(host: Daemon, session_id: str, count: int) -> list[dict[str, Any]]:
    return until(
        lambda: (made := turn_ended(host, session_id)) and len(made) >= count and made,
        f"{count} turn_ended for {session_id}",
    )


def prompt_elsewhere(host: Daemon, session_id: str, text: str) -> None:
    """Another client prompts the session without opening it (it shows nothing)."""
    with connect(
        f"{host.ws_url}/ws/chat",
        origin=host.origin,  # type: ignore[arg-type]
        additional_headers=host.owner_headers(),
    ) as ws:
        ws.send(json.dumps({"type": "prompt", "session_id": session_id, "text": text}))
        # The socket's messages are handled in order: an answer to this second one means the
        # prompt has started (an error would say why not).
        ws.send(json.dumps({"type": "visible", "session_id": session_id, "visible": "?"}))
        answer = json.loads(ws.recv(timeout=10))
        assert answer["message"] == "visible must be true or false", answer


def turn_ends(page: Page, session_id: str, count: int) -> None:
    """The page has read the session's `count`th turn end (its tab shown or not)."""
    ends = page.locator(f".session-view[data-session-id='{session_id}'] .chat-turn-end")
    expect(ends).to_have_count(count, timeout=20000)


def test_only_a_turn_that_ends_out_of_sight_is_notified(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    back = create_session(host, workspace, agent="fake", kind="chat")["id"]
    front = create_session(host, workspace, agent="fake", kind="chat")["id"]
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    seen = Visibility(page)
    try:
        page.goto(f"{host.url}/login?token={host.owner_token}")
        for sid in (back, front):  # two chat tabs; the second one opened is shown
            page.locator(f"#sidebar-tree li[data-session-id='{sid}'] a").click()
            expect(page.locator(ACTIVE)).to_have_attribute("data-session-id", sid)
            seen.wait(sid, True)
        seen.wait(back, False)

        # The tab shown: its turn ends in front of the person — nothing to tell.
        box = page.locator(f"{ACTIVE} .chat-input textarea")
        box.fill("echo in front")
        box.press("Enter")
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("in front")
        turn_ends(page, front, 1)

        # The background tab: its turn ends out of sight — one notification, for it alone.
        prompt_elsewhere(host, back, "echo behind")
        turn_ends(page, back, 1)
        made = notified(host, back, 1)
        assert len(made) == 1 and made[0]["title"] == "fake finished its turn"
        assert turn_ended(host, front) == []  # decided at its end, before `back` was prompted

        # Another view shown: the shown tab's turn is out of sight too.
        show(page, "usage")
        seen.wait(front, False)
        prompt_elsewhere(host, front, "echo under usage")
        turn_ends(page, front, 2)
        assert len(notified(host, front, 1)) == 1

        # Back to the session's tab (the tabs stay above every view): seen again; the next
        # background turn is the barrier.
        page.locator(f"#tab-{front}").click()
        seen.wait(front, True)
        box.fill("echo seen again")
        box.press("Enter")
        turn_ends(page, front, 3)
        prompt_elsewhere(host, back, "echo behind again")
        assert len(notified(host, back, 2)) == 2
        assert len(turn_ended(host, front)) == 1

        # The browser tab hidden (another window in front): out of sight again.
        page.evaluate("""() => {
            const hidden = { configurable: true, get: () => "hidden" };
            Object.defineProperty(document, "visibilityState", hidden);
            document.dispatchEvent(new Event("visibilitychange"));
        }""")
        seen.wait(front, False)
        prompt_elsewhere(host, front, "echo while hidden")
        turn_ends(page, front, 4)
        assert len(notified(host, front, 2)) == 2
        assert len(turn_ended(host, back)) == 2
        assert seen.said[back] == [True, False]  # never shown again after `front` opened
    finally:
        page.context.close()
