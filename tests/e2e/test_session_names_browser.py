"""Sessions have names (issue 34, friction 8: "shell terminal" twice in the sidebar, "(untitled)"
in the table, full UUIDs in the CLI): the agent's own title, else the first prompt's first words,
else `<agent> in <folder>`; renamed in the dashboard; short ids in `bin/svc sessions` and
`manage.py sessions`. Against a live daemon, in Chromium, and the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import websockets
import websockets.sync.client as ws_sync
from playwright.sync_api import Browser, Page, expect

from harness.daemon import ROOT, Daemon
from harness.daemon import manage as manage_py
from harness.dashboard import session_action, show
from harness.termclient import create_session, get_session, start_hosting_daemon, stop_session
from tests.e2e.test_approvals_browser import PHONE, serious_violations
from tests.e2e.test_remote_tunnel import Remote

ACTIVE = "#session-panel .session-view.active"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-names"))
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path, host: Daemon) -> Path:
    path = tmp_path / "webshop"
    path.mkdir()
    httpx.post(
        f"{host.url}/api/workspaces", json={"path": str(path)}, headers=host.owner_headers()
    ).raise_for_status()
    return path


def open_page(browser: Browser, host: Daemon, workspace: Path, **context: object) -> Page:
    page = browser.new_context(**context).new_page()  # type: ignore[arg-type]
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)
    return page


def start_chat(page: Page, workspace: Path) -> str:
    show(page, "sessions")
    page.select_option("#new-agent", "fake")
    page.select_option("#new-workspace", str(workspace))
    page.select_option("#new-kind", "chat")
    page.click("#new-session button[type=submit]")
    expect(page.locator(f"{ACTIVE} .chat-input textarea")).to_be_visible()
    sid = page.locator(ACTIVE).get_attribute("data-session-id")
    assert sid
    return sid


def send(page: Page, text: str) -> None:
    box = page.locator(f"{ACTIVE} .chat-input textarea")
    box.fill(text)
    box.press("Enter")
    expect(page.locator(f"{ACTIVE} .chat-turn-end")).to_have_count(
        page.locator(f"{ACTIVE} .chat-user").count()
    )


def side_title(page: Page, sid: str):  # type: ignore[no-untyped-def]
    return page.locator(f"#sidebar li[data-session-id='{sid}'] .side-title")


def test_sessions_are_named_by_the_agent_the_prompt_or_agent_and_folder(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    terminals = [create_session(host, workspace)["id"] for _ in range(2)]
    page = open_page(browser, host, workspace, viewport={"width": 1280, "height": 800})
    try:
        for sid in terminals:  # no title: `<agent> in <folder>`, never "shell terminal"
            expect(side_title(page, sid)).to_have_text("shell in webshop")
        expect(page.locator("#sidebar")).not_to_contain_text("shell terminal")

        asked = start_chat(page, workspace)
        send(page, "echo please fix the login form and then run the tests")
        expect(side_title(page, asked)).to_have_text("echo please fix the login form…")

        titled = start_chat(page, workspace)
        send(page, "title Fix the flaky checkout test")
        expect(side_title(page, titled)).to_have_text("Fix the flaky checkout test")
        expect(page.locator(f"{ACTIVE} .session-head h2")).to_have_text(
            "Fix the flaky checkout test"
        )
        assert get_session(host, titled)["title_by"] == "agent"

        show(page, "sessions")
        table = page.locator("#sessions")
        expect(table.locator(f"tr[data-session-id='{titled}'] td.title")).to_have_text(
            "Fix the flaky checkout test"
        )
        expect(table.locator(f"tr[data-session-id='{terminals[0]}'] td.title")).to_have_text(
            "shell in webshop"
        )
        expect(table).not_to_contain_text("(untitled)")
        assert serious_violations(page) == []
    finally:
        page.context.close()
        for sid in terminals:
            stop_session(host, sid)


def test_a_session_is_renamed_in_its_head_and_the_agent_does_not_rename_it_back(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    page = open_page(browser, host, workspace, **PHONE)
    try:
        sid = start_chat(page, workspace)
        send(page, "echo hello")
        head = page.locator(f"{ACTIVE} .session-head")
        session_action(page, "Rename")  # behind "⋯" on a phone
        head.get_by_label("Name").fill("checkout work")
        assert serious_violations(page) == []
        head.get_by_role("button", name="Save").click()
        expect(head.locator("h2")).to_have_text("checkout work")
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the session head scrolls sideways by {wide}px"
        send(page, "title Something else")
        row = get_session(host, sid)
        assert (row["title"], row["title_by"]) == ("checkout work", "user"), row
        expect(head.locator("h2")).to_have_text("checkout work")

        # A blank name gives naming back: `<agent> in <folder>` until the agent names it again.
        cleared = httpx.patch(
            f"{host.url}/api/sessions/{sid[:8]}", json={"title": ""}, headers=host.owner_headers()
        )
        assert cleared.status_code == 200 and cleared.json()["name"] == "fake in webshop"
        expect(head.locator("h2")).to_have_text("fake in webshop")
    finally:
        page.context.close()

    # Renaming is the machine's own (deny by default on the remote listener).
    remote = Remote(host, host.auth()["remote_port"])
    with remote.client() as client:
        key = {"X-Svc-Page-Key": remote.pair(client)["page_key"]}
        refused = client.patch(f"/api/sessions/{sid}", json={"title": "x"}, headers=key)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "main_port_only"
    stop_session(host, sid)


def test_a_name_being_typed_is_kept_when_the_agent_names_the_session_meanwhile(
    browser: Browser, host: Daemon, workspace: Path
) -> None:
    """The agent (or the first prompt) may name the session while the person types a name: the
    form kept its text only until the next list frame, so Save then sent the agent's name."""
    page = open_page(browser, host, workspace)
    try:
        sid = start_chat(page, workspace)
        head = page.locator(f"{ACTIVE} .session-head")
        head.get_by_role("button", name="Rename").click()
        head.get_by_label("Name").fill("checkout work")
        prompt_elsewhere(host, sid, "title Named by the agent")
        deadline = time.monotonic() + 15
        while get_session(host, sid)["title_by"] != "agent":
            assert time.monotonic() < deadline, get_session(host, sid)
            time.sleep(0.1)
        page.wait_for_timeout(300)  # the list frame with the agent's name reaches the page
        expect(head.get_by_label("Name")).to_have_value("checkout work")
        head.get_by_role("button", name="Save").click()
        expect(head.locator("h2")).to_have_text("checkout work")
        assert get_session(host, sid)["title"] == "checkout work"
    finally:
        page.context.close()
    stop_session(host, sid)


def prompt_elsewhere(host: Daemon, sid: str, text: str) -> None:
    """A prompt from another client (/ws/chat), as a phone or a chat app would send it."""
    url = f"{host.ws_url}/ws/chat?token={host.owner_token}"
    with ws_sync.connect(url, origin=websockets.Origin(host.origin)) as ws:
        ws.send(json.dumps({"type": "open", "session_id": sid}))
        ws.send(json.dumps({"type": "prompt", "session_id": sid, "text": text}))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            event = json.loads(ws.recv(timeout=15))
            if event.get("kind") == "turn_end" or event.get("type") == "turn_end":
                return
        raise AssertionError("the turn never ended")


def test_the_cli_lists_show_short_ids_and_names(host: Daemon, workspace: Path) -> None:
    made = create_session(host, workspace)
    httpx.patch(
        f"{host.url}/api/sessions/{made['id']}",
        json={"title": "log tail"},
        headers=host.owner_headers(),
    ).raise_for_status()
    env = {k: v for k, v in os.environ.items() if k not in ("SVC_PRINT_LOGIN", "SVC_PORT")}
    fast = subprocess.run(
        [str(ROOT / "bin" / "svc"), "sessions"],
        env={**env, "SVC_HOME": str(host.home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    slow = manage_py(host.home, "sessions")
    for output in (fast.stdout, slow.stdout):
        line = next(x for x in output.splitlines() if x.startswith(made["id"][:8]))
        assert made["id"] not in output, output
        assert "log tail" in line and "name" in output.splitlines()[0], output
    stop_session(host, made["id"])
