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
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.termclient import Chat, create_session, start_hosting_daemon, stop_session

pytestmark = pytest.mark.timeout(300)  # each test waits for svc to stop and start again

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
    rows = page.locator(f"{ACTIVE} .xterm-rows > div")
    return [text.strip() for text in rows.all_text_contents()]


def prompts_the_agent_got(host: Daemon, session_id: str) -> list[str]:
    """The chat's stored prompts, as a client opening it now reads them."""

    async def read() -> list[str]:
        chat = await Chat.connect(host)
        try:
            await chat.open(session_id=session_id)
            return [e["text"] for e in chat.events if e["kind"] == "user_message_chunk"]
        finally:
            await chat.close()

    with ThreadPoolExecutor(1) as other:  # Playwright's own loop runs in this thread
        return other.submit(asyncio.run, read()).result()


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

        # And once the page says svc is back (its lists reconnected; the chat's own socket may
        # still be waiting out its backoff).
        expect(page.locator("#banner")).to_be_hidden(timeout=30_000)
        show_session(page, chat)
        send(page, "echo reconnected")
        said = ["before", "while-down", "right-after", "reconnected"]
        expect(agent).to_have_text(said, timeout=30_000)  # each once: none replayed again
        users = page.locator(f"{ACTIVE} .chat-user")
        expect(users).to_have_text([f"echo {word}" for word in said])
        expect(page.locator(f"{ACTIVE} .chat-end")).to_have_count(1)  # "session running", once
        expect(page.locator(f"{ACTIVE} .chat-unsent")).to_have_count(0)
        expect(page.locator(f"{ACTIVE} .chat-error")).to_have_count(0)
        assert prompts_the_agent_got(host, chat) == [f"echo {word}" for word in said]
    finally:
        context.close()
        if host.proc is None:  # failed while svc was down
            host.start()
        for session in (chat, term):
            httpx.delete(f"{host.url}/api/sessions/{session}?wait=1", headers=host.owner_headers())


def test_a_prompt_typed_while_the_machine_reboots_reaches_the_resumed_chat_once(
    browser: Browser, host: Daemon
) -> None:
    """A reboot takes the agent too: the next start resumes the chat (host.resume_on_start)
    with a new process, and the pane draws a new view for it; what was typed meanwhile goes to
    the resumed agent, once."""
    from harness.reboot import simulate_reboot

    chat = create_session(host, host.work, agent="fake", kind="chat")["id"]  # type: ignore[attr-defined]
    context = browser.new_context(**SIZES["desktop"])  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(f"{host.url}/login?token={host.owner_token}")
        show_session(page, chat)
        send(page, "echo before")
        agent = page.locator(f"{ACTIVE} .chat-agent")
        expect(agent.last).to_have_text("before")
        simulate_reboot(host, [chat])
        expect(page.locator("#banner")).to_contain_text("not answering")
        send(page, "echo across-the-reboot")
        expect(page.locator(f"{ACTIVE} .chat-unsent")).to_contain_text("echo across-the-reboot")
        host.start()
        expect(agent).to_have_text(["before", "across-the-reboot"], timeout=30_000)
        expect(page.locator(f"{ACTIVE} .chat-unsent")).to_have_count(0)
        said = prompts_the_agent_got(host, chat)
        assert said == ["echo before", "echo across-the-reboot"], said
    finally:
        context.close()
        if host.proc is None:
            host.start()
        httpx.delete(f"{host.url}/api/sessions/{chat}?wait=1", headers=host.owner_headers())


def test_a_message_svc_will_not_take_stays_in_the_box_said_not_sent(
    browser: Browser, host: Daemon
) -> None:
    """The other way a message may end: svc refuses it (here its chat was stopped elsewhere).
    It used to leave the box all the same, with only an error line in the log."""
    chat = create_session(host, host.work, agent="fake", kind="chat")["id"]  # type: ignore[attr-defined]
    context = browser.new_context(**SIZES["phone"])  # type: ignore[arg-type]
    try:
        page = context.new_page()
        page.goto(f"{host.url}/login?token={host.owner_token}")
        show_session(page, chat)
        send(page, "echo before")
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("before")
        stop_session(host, chat)
        expect(page.locator(f"{ACTIVE} .chat-ended")).to_be_visible()
        send(page, "echo to nobody")
        expect(page.locator(f"{ACTIVE} .chat-not-sent")).to_contain_text("Not sent: no live chat")
        expect(page.locator(f"{ACTIVE} .chat-input textarea")).to_have_value("echo to nobody")
    finally:
        context.close()
