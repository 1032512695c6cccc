"""A dashboard tab left open while svc restarts (issue 42, path 3), in Chromium against a live
daemon, the real holder, the fake ACP agent and a real shell: svc stopped with Ctrl-C (SIGINT) or
killed (SIGKILL) and started again on the same port while the page stays open on a chat and a
terminal. What is typed while svc is down, and right after it is back, reaches the agent and the
shell exactly once; the chat shows every event once.

Earlier tests missed it: the ones that restart svc open a fresh page (or a fresh socket) after
the restart, and the ones with a page open across a change changed the session's process (a
resume), which gives the pane a new socket. A restart whose holder keeps the agent keeps its pid:
the pane kept its socket object, closed, and sent into it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.termclient import (
    Chat,
    Term,
    create_session,
    open_ws,
    start_hosting_daemon,
    stop_session,
)

ACTIVE = "#session-panel .session-view.active"
SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}
STOPS: dict[str, Callable[[Daemon], object]] = {
    "SIGINT": Daemon.interrupt,  # Ctrl-C where `make run` runs
    "SIGKILL": Daemon.kill,  # a crash, the OOM killer
}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-open-tab")
    server = start_hosting_daemon(tmp)
    work = tmp / "work"
    work.mkdir()
    httpx.post(
        f"{server.url}/api/workspaces", json={"path": str(work)}, headers=server.owner_headers()
    ).raise_for_status()
    server.work = work  # type: ignore[attr-defined]
    yield server
    server.stop()


def show_session(page: Page, session_id: str) -> None:
    """As a link to the session does (a notification, a search hit): its tab, shown."""
    page.evaluate("(id) => { location.hash = `#session=${id}`; }", session_id)
    expect(page.locator(ACTIVE)).to_have_attribute("data-session-id", session_id)


def send(page: Page, text: str) -> None:
    box = page.locator(f"{ACTIVE} .chat-input textarea")
    box.fill(text)
    box.press("Enter")


def type_into_terminal(page: Page, text: str) -> None:
    page.locator(f"{ACTIVE} .xterm-helper-textarea").focus()
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def screen_lines(page: Page) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll(
             "#session-panel .session-view.active .xterm-rows > div")].map((d) => d.textContent.trim())"""
    )


def prompts_the_agent_got(host: Daemon, session_id: str) -> list[str]:
    """The chat's stored prompts, as a client opening it now reads them."""

    async def read() -> list[str]:
        chat = await Chat.connect(host)
        try:
            await chat.open(session_id=session_id)
            return [e["text"] for e in chat.events if e["kind"] == "user_message_chunk"]
        finally:
            await chat.close()

    return asyncio.run(read())


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("stop", list(STOPS))
def test_what_an_open_tab_sends_across_a_restart_arrives_once(
    browser: Browser, host: Daemon, stop: str, size: str
) -> None:
    work = host.work  # type: ignore[attr-defined]
    chat = create_session(host, work, agent="fake", kind="chat")["id"]
    term = create_session(host, work)["id"]
    context = browser.new_context(**SIZES[size])  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(f"{host.url}/login?token={host.owner_token}")
        show_session(page, chat)
        send(page, "echo before")
        agent = page.locator(f"{ACTIVE} .chat-agent")
        expect(agent.last).to_have_text("before")
        show_session(page, term)
        type_into_terminal(page, "echo t-$((1+1))")
        expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("t-2")

        STOPS[stop](host)
        expect(page.locator("#banner")).to_contain_text("not answering")
        # While svc is down: keys into the terminal, a prompt into the chat (which the page
        # must keep, in sight, until it can send it).
        type_into_terminal(page, "echo down-$((2+3))")
        show_session(page, chat)
        send(page, "echo while-down")
        expect(page.locator(ACTIVE).get_by_text("echo while-down")).to_be_visible()

        host.start()
        # Right after the start, before the page has its sockets back.
        send(page, "echo right-after")
        show_session(page, term)
        type_into_terminal(page, "echo after-$((3+4))")
        for line in ("down-5", "after-7"):
            expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text(line)
        lines = screen_lines(page)
        assert (lines.count("down-5"), lines.count("after-7")) == (1, 1), lines
        assert not [line for line in lines if "command not found" in line], lines

        show_session(page, chat)
        expect(agent).to_have_text(["before", "while-down", "right-after"], timeout=30_000)
        users = page.locator(f"{ACTIVE} .chat-user")
        expect(users).to_have_text(["echo before", "echo while-down", "echo right-after"])
        expect(page.locator(f"{ACTIVE} .chat-unsent")).to_have_count(0)
        assert prompts_the_agent_got(host, chat) == [
            "echo before",
            "echo while-down",
            "echo right-after",
        ]
    finally:
        context.close()
        if host.proc is None:  # failed while svc was down
            host.start()
        for session in (chat, term):
            httpx.delete(
                f"{host.url}/api/sessions/{session}?wait=1", headers=host.owner_headers()
            )


async def first_socket(host: Daemon, path: str) -> object:
    """The page's reconnect as early as it can be: a socket the moment the port takes one."""
    while True:
        try:
            return await open_ws(host, path)
        except OSError:
            await asyncio.sleep(0.01)


async def test_a_socket_back_while_svc_starts_finds_its_session_running(host: Daemon) -> None:
    """svc listens before it has taken its held sessions back (contract §12: the port is open at
    once). A page that reconnects in that window was told its terminal had exited (the terminal
    then stopped reconnecting: what was typed next went nowhere) and its chat was not live (a
    prompt answered `no live chat session`). HTTP requests waited for the start; sockets did not."""
    work = host.work  # type: ignore[attr-defined]
    term = create_session(host, work)["id"]
    chat = create_session(host, work, agent="fake", kind="chat")["id"]
    host.interrupt()
    starting = asyncio.create_task(asyncio.to_thread(host.start))
    terminal_ws, chat_ws = await asyncio.gather(
        first_socket(host, f"/ws?session_id={term}"), first_socket(host, "/ws/chat")
    )
    viewer, talker = Term(terminal_ws), Chat(chat_ws)
    await talker.send(type="open", session_id=chat)
    await talker.send(type="prompt", session_id=chat, text="echo in the window", key="k1")
    viewer.scrollback = await asyncio.wait_for(terminal_ws.recv(), 30)
    viewer.state = json.loads(await asyncio.wait_for(terminal_ws.recv(), 30))
    assert viewer.state == {"type": "running"}
    await viewer.run("echo window-$((6*7))")
    await viewer.expect(b"window-42", timeout=30)
    opened = await talker.next("session", session_id=chat, timeout=30)
    assert opened["status"] == "running", opened
    received = await talker.next("prompt_received", timeout=30)
    assert (received["key"], received["again"]) == ("k1", False)
    await talker.next("turn_end", session_id=chat, timeout=30)
    assert talker.texts().endswith("in the window")
    await starting
    await viewer.close()
    await talker.close()
    for session in (term, chat):
        stop_session(host, session)
