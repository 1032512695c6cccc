"""An agent that fails says why, and a custom agent is checked when saved (issue 34, friction 2:
"could not start 'acme': Connection lost" and "session exited", with the cause only in
`$SVC_HOME/logs/agent-<id>.log`). Against a live daemon, in Chromium at desktop and phone sizes,
with a custom agent whose acp_command is a Python script that dies on a missing module."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import Daemon
from harness.dashboard import show
from harness.termclient import FAKE_ACP, start_hosting_daemon
from tests.e2e.test_approvals_browser import PHONE, serious_violations
from tests.e2e.test_remote_tunnel import Remote

ACTIVE = "#session-panel .session-view.active"
CAUSE = "ModuleNotFoundError: No module named 'acme_sdk'"
BROKEN_AGENT = """\
import sys
sys.stderr.write("acme 0.1 starting\\n")
import acme_sdk  # not installed: the traceback goes to stderr, the exit code is 1
"""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-agent-failure")
    server = start_hosting_daemon(tmp)
    work = tmp / "work"
    work.mkdir()
    script = tmp / "acme_agent.py"
    script.write_text(BROKEN_AGENT)
    headers = server.owner_headers()
    httpx.post(
        f"{server.url}/api/workspaces", json={"path": str(work)}, headers=headers
    ).raise_for_status()
    saved = httpx.put(
        f"{server.url}/api/agents/acme",
        json={"acp_command": [sys.executable, str(script)], "enabled": True},
        headers=headers,
        timeout=30,
    )
    assert saved.status_code == 201, saved.text
    server.acme_check = saved.json().get("check")  # type: ignore[attr-defined]
    server.work = work  # type: ignore[attr-defined]
    yield server
    server.stop()


def open_page(browser: Browser, host: Daemon, **context: object) -> Page:
    page = browser.new_context(**context).new_page()  # type: ignore[arg-type]
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator("#new-agent option[value='acme']")).to_have_count(1)
    return page


def start_acme(page: Page) -> None:
    page.select_option("#new-agent", "acme")
    page.select_option("#new-kind", "chat")
    page.click("#new-session button[type=submit]")


def test_a_failed_start_says_why_in_the_api_the_form_and_the_chat_pane(
    browser: Browser, host: Daemon
) -> None:
    page = open_page(browser, host, viewport={"width": 1280, "height": 800})
    try:
        start_acme(page)
        # The form's refusal names the cause, not "Connection lost" alone.
        expect(page.locator("#new-status")).to_contain_text("could not start 'acme'")
        expect(page.locator("#new-status")).to_contain_text(CAUSE)

        rows = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
        row = next(s for s in rows if s["agent"] == "acme")
        assert (row["status"], row["exit_code"]) == ("failed", 1), row
        assert CAUSE in row["detail"] and "exited with code 1" in row["detail"], row["detail"]
        assert "acme 0.1 starting" in row["detail"]  # the last lines, not the last one alone

        # The chat pane of that session says the same, with Resume and the log one click away.
        page.locator(f"#sidebar li[data-session-id='{row['id']}'] a").click()
        ended = page.locator(f"{ACTIVE} .chat-ended")
        expect(ended).to_contain_text("exit code 1")
        expect(ended.locator(".chat-ended-detail")).to_contain_text(CAUSE)
        expect(ended.get_by_role("button", name="Resume")).to_be_visible()
        with page.context.expect_page() as opened:
            ended.get_by_role("link", name="Open the log").click()
        log = opened.value
        expect(log.locator("body")).to_contain_text(CAUSE)
        expect(log.locator("body")).to_contain_text("Traceback (most recent call last)")
        assert serious_violations(page) == []
    finally:
        page.context.close()


def test_the_ended_pane_on_a_phone_shows_the_cause_without_scrolling_sideways(
    browser: Browser, host: Daemon
) -> None:
    rows = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
    failed = [s for s in rows if s["agent"] == "acme" and s["status"] == "failed"]
    if not failed:  # this test alone: make the failed session first
        answer = httpx.post(
            f"{host.url}/api/sessions",
            json={"agent": "acme", "kind": "chat", "workspace": str(host.work)},  # type: ignore[attr-defined]
            headers=host.owner_headers(),
            timeout=30,
        )
        assert answer.status_code == 502 and CAUSE in answer.text, answer.text
        rows = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
        failed = [s for s in rows if s["agent"] == "acme"]
    page = open_page(browser, host, **PHONE)
    try:
        page.goto(f"{host.url}/#session={failed[0]['id']}")
        ended = page.locator(f"{ACTIVE} .chat-ended")
        expect(ended.locator(".chat-ended-detail")).to_contain_text(CAUSE)
        expect(ended.get_by_role("button", name="Resume")).to_be_visible()
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the ended chat scrolls sideways by {wide}px"
        assert serious_violations(page) == []
    finally:
        page.context.close()


def test_the_log_is_text_on_the_main_port_and_refused_to_a_paired_device(host: Daemon) -> None:
    rows = httpx.get(f"{host.url}/api/sessions", headers=host.owner_headers()).json()
    sid = next(s["id"] for s in rows if s["agent"] == "acme")
    text = httpx.get(
        f"{host.url}/api/sessions/{sid}/log",
        params={"as": "text", "kib": 1},
        headers=host.owner_headers(),
    )
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert CAUSE in text.text and len(text.content) <= 1024
    remote = Remote(host, host.auth()["remote_port"])
    with remote.client() as client:
        paired = remote.pair(client)
        key = {"X-Svc-Page-Key": paired["page_key"]}
        assert client.get(f"/api/sessions/{sid}", headers=key).status_code == 200
        refused = client.get(f"/api/sessions/{sid}/log", params={"as": "text"}, headers=key)
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "main_port_only"
        assert CAUSE not in refused.text


def test_a_custom_agent_is_checked_when_saved(browser: Browser, host: Daemon) -> None:
    # Through the API: the broken agent saved in the fixture was checked then.
    check = host.acme_check  # type: ignore[attr-defined]
    assert check is not None and check["ok"] is False and CAUSE in check["message"], check
    assert "exited with code 1 before answering initialize" in check["message"]

    page = open_page(browser, host, viewport={"width": 1280, "height": 800})
    try:
        show(page, "settings")
        form = page.locator("#agent-form")
        status = page.locator("#agent-status")
        form.locator("input[name=agent_name]").fill("ghost")
        form.locator("input[name=acp_command]").fill("no-such-agent-cli --acp")
        form.get_by_role("button", name="Save agent").click()
        expect(status).to_contain_text("saved ghost, but it will not start")
        expect(status).to_contain_text("'no-such-agent-cli' was not found on PATH")

        form.get_by_role("button", name="New agent").click()
        form.locator("input[name=agent_name]").fill("fake2")
        form.locator("input[name=acp_command]").fill(f"{sys.executable} {FAKE_ACP}")
        form.get_by_role("button", name="Save agent").click()
        expect(status).to_contain_text("saved fake2 — checked: answered ACP initialize")
        assert serious_violations(page) == []
    finally:
        page.context.close()
