"""Permission decisions in the dashboard, in Chromium (contract §17, issue 33 item 4): the chat's
history says who decided, from where and when — live, for an answer given elsewhere (the API),
and again after a reload replays it — and the Approvals view lists the decisions, filters them
by session and links each to its place in the history."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import ROOT, Daemon
from harness.dashboard import show
from harness.termclient import Chat, start_hosting_daemon, stop_session

ACTIVE = "#session-panel .session-view.active"  # the session tab shown
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 2,
}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-approvals-browser"))
    yield server
    server.stop()


def open_page(browser: Browser, host: Daemon, workspace: Path) -> Page:
    httpx.post(
        f"{host.url}/api/workspaces", json={"path": str(workspace)}, headers=host.owner_headers()
    ).raise_for_status()
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)
    return page


def start_chat(page: Page, workspace: Path) -> str:
    page.select_option("#new-agent", "fake")
    page.select_option("#new-workspace", str(workspace))
    page.select_option("#new-kind", "chat")
    page.click("#new-session button[type=submit]")
    expect(page.locator(f"{ACTIVE} .chat-input textarea")).to_be_visible()
    session_id = page.locator("#session-panel").get_attribute("data-session-id")
    assert session_id
    return session_id


def ask(page: Page) -> None:
    box = page.locator(f"{ACTIVE} .chat-input textarea")
    box.fill("permission")
    box.press("Enter")


def test_the_history_says_who_decided_and_the_approvals_view_lists_it(
    browser: Browser, host: Daemon, tmp_path: Path
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    page = open_page(browser, host, workspace)
    sid = ""
    try:
        sid = start_chat(page, workspace)
        decisions = page.locator(f"{ACTIVE} .chat-decision")

        # Answered here: the line names the choice, the owner, the dashboard and the moment.
        ask(page)
        page.locator(f"{ACTIVE} .chat-permission button:text('Allow once')").click()
        expect(decisions).to_have_count(1)
        expect(decisions.first).to_contain_text(
            "permission for rm -rf build: Allow once — by owner on the dashboard"
        )
        expect(decisions.first).to_have_attribute("data-surface", "dashboard")
        expect(decisions.first.locator("time")).to_have_count(1)
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("permission: allow")

        # Answered elsewhere (the API): the buttons go and the line says where it was decided.
        ask(page)
        buttons = page.locator(f"{ACTIVE} .chat-permission").last.locator("button")
        expect(buttons.first).to_be_enabled()
        waiting = httpx.get(
            f"{host.url}/api/sessions/{sid}/permissions", headers=host.owner_headers()
        ).json()
        assert len(waiting) == 1
        answered = httpx.post(
            f"{host.url}/api/sessions/{sid}/permissions",
            json={"request_id": waiting[0]["request_id"], "option_id": "reject"},
            headers=host.owner_headers(),
        )
        assert answered.status_code == 204, answered.text
        expect(decisions).to_have_count(2)
        expect(decisions.last).to_contain_text(
            "permission for rm -rf build: Reject — by owner on the API"
        )
        expect(buttons.first).to_be_disabled()
        expect(page.locator(f"{ACTIVE} .chat-agent").last).to_have_text("permission: reject")
        when = decisions.last.locator("time").get_attribute("datetime")
        recorded = httpx.get(
            f"{host.url}/api/approvals", params={"session_id": sid}, headers=host.owner_headers()
        ).json()
        assert when == recorded[0]["decided_at"]

        # A reload replays the history: the same lines, from the stored events.
        page.reload()
        page.goto(f"{host.url}/#session={sid}")
        expect(decisions).to_have_count(2)
        expect(decisions.first).to_contain_text("Allow once — by owner on the dashboard")
        expect(decisions.last).to_contain_text("Reject — by owner on the API")

        # The Approvals view: newest first, who and from where, filtered by session.
        other = httpx.post(  # a session with no decision, to filter by
            f"{host.url}/api/sessions",
            json={"agent": "fake", "workspace": str(workspace), "kind": "chat"},
            headers=host.owner_headers(),
        ).json()["id"]
        show(page, "approvals")
        rows = page.locator("#approvals-table tbody tr")
        mine = rows.filter(has=page.locator(f"a[href^='#session={sid}']"))
        expect(mine).to_have_count(2)  # (other tests of this module may have decided too)
        expect(mine.nth(0)).to_have_attribute("data-surface", "api")
        expect(mine.nth(0).locator(".approval-by")).to_have_text("API: owner")
        expect(mine.nth(0).locator(".approval-answer")).to_have_text("Reject")
        expect(mine.nth(1).locator(".approval-by")).to_have_text("dashboard: owner")
        expect(mine.nth(1).locator(".approval-answer")).to_have_text("Allow once")
        expect(mine.nth(1)).to_contain_text("rm -rf build")
        assert serious_violations(page) == []
        page.select_option("#approvals-session", other)
        expect(page.locator("#approvals .approvals-empty")).to_be_visible()
        page.select_option("#approvals-session", sid)
        expect(rows).to_have_count(2)
        expect(mine).to_have_count(2)

        # A row opens the session's history at that decision.
        rows.nth(1).locator("a").click()
        expect(page.locator(f"{ACTIVE} .chat-hit")).to_contain_text("by owner on the dashboard")
        # A link names the session to filter by.
        page.evaluate(f"location.hash = '#view=approvals&of={other}'")
        expect(page.locator("#approvals-session")).to_have_value(other)
        expect(page.locator("#approvals .approvals-empty")).to_be_visible()
        stop_session(host, other)
    finally:
        page.context.close()
        if sid:
            stop_session(host, sid)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_approvals_view_on_a_phone(
    browser: Browser, host: Daemon, scheme: str, tmp_path: Path
) -> None:
    """Reached from More, its rows as cards: nothing scrolls sideways, axe finds nothing serious."""
    with ThreadPoolExecutor(1) as other:  # Playwright's sync API holds this thread's loop
        other.submit(asyncio.run, decide_once(host, tmp_path)).result()
    page = browser.new_context(**PHONE, color_scheme=scheme).new_page()
    try:
        page.goto(f"{host.url}/login?token={host.owner_token}")
        show(page, "approvals")
        expect(page.locator("#approvals-table tbody tr").first).to_be_visible()
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"the approvals view scrolls sideways by {wide}px"
        assert serious_violations(page) == []
    finally:
        page.context.close()


async def decide_once(host: Daemon, workspace: Path) -> None:
    """One decision made on /ws/chat, so the view has a row to show."""
    chat = await Chat.connect(host)
    sid = (await chat.open(agent="fake", workspace=str(workspace)))["session_id"]
    await chat.send(type="prompt", session_id=sid, text="permission")
    asked = await chat.next("permission_request")
    await chat.send(type="permission", request_id=asked["request_id"], option_id="allow")
    await chat.next("turn_end")
    await chat.close()
    stop_session(host, sid)


def serious_violations(page: Page) -> list[str]:
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]
