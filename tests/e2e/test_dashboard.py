"""The dashboard in Debian's Chromium (issue 13, acceptance 1), at a desktop and a phone size:
log in with the token URL, start a shell from the pickers and type, chat with the scripted agent
(streamed answer, permission), see an agent's handover code and pick it up, see a preview's share
countdown, see a subagent turn's reports, watch the sessions list follow the API live — then a
screenshot that is not blank, and axe-core on the main page."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.daemon import ROOT, Daemon
from harness.dashboard import show
from harness.mcp import tool
from harness.termclient import create_session, start_hosting_daemon
from harness.upstream import Upstream

ARTIFACTS = Path(os.environ.get("SVC_TEST_ARTIFACTS", ROOT / "test-artifacts"))
ACTIVE = "#session-panel .session-view.active"  # the session tab shown
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-dashboard"))
    yield server
    server.stop()


@pytest.fixture(params=list(VIEWPORTS))
def page(request: pytest.FixtureRequest, browser: Browser, host: Daemon) -> Iterator[Page]:
    context = browser.new_context(**VIEWPORTS[request.param])
    page = context.new_page()
    page.viewport_name = request.param  # type: ignore[attr-defined]
    yield page
    context.close()


def run(coroutine):  # type: ignore[no-untyped-def]
    """An MCP call from a sync test: Playwright's own loop runs on this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def start_from_pickers(page: Page, agent: str, workspace: Path, kind: str) -> None:
    show(page, "sessions")
    page.select_option("#new-agent", agent)
    page.select_option("#new-workspace", str(workspace))
    page.select_option("#new-kind", kind)
    page.click("#new-session button[type=submit]")


def not_blank(page: Page, png: bytes) -> int:
    """Distinct colours in the screenshot (drawn into a canvas by the browser itself)."""
    data = "data:image/png;base64," + base64.b64encode(png).decode()
    return page.evaluate(
        """async (src) => {
        const img = new Image(); img.src = src; await img.decode();
        const canvas = document.createElement('canvas');
        canvas.width = img.width; canvas.height = img.height;
        const ctx = canvas.getContext('2d'); ctx.drawImage(img, 0, 0);
        const px = ctx.getImageData(0, 0, img.width, img.height).data, seen = new Set();
        for (let i = 0; i < px.length; i += 4 * 97) {
            seen.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
        }
        return seen.size;
    }""",
        data,
    )


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}-{page.viewport_name}.png"  # type: ignore[attr-defined]
    png = page.screenshot(path=str(path), full_page=True)
    assert not_blank(page, png) > 20, f"{path} is blank"
    return path


def serious_violations(page: Page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


def test_the_dashboard_shows_everything_svc_does(page: Page, host: Daemon, tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator("h1")).to_have_text("svc")
    assert ".localhost:" in page.url  # the browser session lives on svc's own host name
    expect(page.locator("#new-agent option[value=shell]")).to_have_count(1)
    assert serious_violations(page) == []

    # Register the workspace from Settings; it becomes a choice of the picker.
    show(page, "settings")
    page.fill("#register-workspace input[name=path]", str(workspace))
    page.click("#register-workspace button")
    expect(page.locator(f"#new-workspace option[value='{workspace}']")).to_have_count(1)

    # A shell from the pickers, typed into.
    start_from_pickers(page, "shell", workspace, "terminal")
    rows = page.locator(f"{ACTIVE} .xterm-rows")
    expect(rows).to_be_visible()
    expect(page.locator(f"{ACTIVE} .xterm-helper-textarea")).to_be_focused()
    page.keyboard.type("echo ui-$((6*7))")
    page.keyboard.press("Enter")
    expect(rows).to_contain_text("ui-42")

    # The live list follows a session created through the API, without a reload.
    made = create_session(host, workspace)
    # (the sidebar's list; on a phone it is the sessions view's table, drawn when shown)
    listed = f"#sidebar-tree li[data-session-id='{made['id']}']"
    if page.viewport_name == "phone":  # type: ignore[attr-defined]
        show(page, "sessions")
        listed = f"#sessions tr[data-session-id='{made['id']}']"
    expect(page.locator(listed)).to_contain_text("running")

    # A chat with the scripted agent: a streamed answer, then a permission answered here.
    start_from_pickers(page, "fake", workspace, "chat")
    box = page.locator(f"{ACTIVE} .chat-input textarea")
    expect(box).to_be_visible()
    box.fill("echo hello dashboard")
    box.press("Enter")
    expect(page.locator(".chat-agent").last).to_have_text("hello dashboard")
    box.fill("permission")
    box.press("Enter")
    page.locator(".chat-permission button:text('Allow once')").click()
    expect(page.locator(".chat-agent").last).to_have_text("permission: allow")

    # The agent prepares a handover code: it shows in its chat, and the pickup box takes it.
    chat_id = page.locator("#session-panel").get_attribute("data-session-id")
    code = run(tool(host, "prepare_handover", session_id=chat_id))["code"]
    expect(page.locator(".chat-handover").last).to_contain_text(code)
    # Sessions are tabs: the shell is still there, connected, with what it printed.
    page.locator(
        ".session-tab[title*='shell · terminal']"
    ).first.click()  # named now; the title says what it is
    expect(page.locator(f"{ACTIVE} .xterm-rows")).to_contain_text("ui-42")
    page.locator(".session-tab[title*='fake · chat']").click()
    show(page, "sessions")
    page.fill("#pickup-code", code)
    page.click("#pickup button")
    expect(page.locator("#pickup-status")).to_contain_text("picked up fake session")

    # A preview an agent made: owner link, share link and its countdown.
    with Upstream() as upstream:
        title = f"site on {page.viewport_name}"  # type: ignore[attr-defined]
        httpx.post(
            f"{host.url}/api/previews",
            json={"port": upstream.port, "title": title},
            headers=host.owner_headers(),
        ).raise_for_status()
        show(page, "previews")
        card = page.locator("#previews li.card", has_text=title)
        expect(card.locator(".countdown")).to_contain_text("share expires in", timeout=10000)
        before = card.locator(".countdown").inner_text()
        expect(card.locator(".countdown")).not_to_have_text(before, timeout=3000)
        expect(card.locator("button:text('Copy share link')")).to_be_visible()

    # A subagent turn's reports.
    agents = [{"name": "scout", "agent": "fake", "task": 'report {"summary": "scouted it"}'}]
    turn = run(
        tool(host, "initialize_subagents", mode="parallel", cwd=str(workspace), agents=agents)
    )
    run(tool(host, "wait_for_subagents", turn_id=turn["turn_id"], timeout_s=60))
    show(page, "turns")
    row = page.locator(f"article[data-turn='{turn['turn_id']}'] tr[data-subagent=scout]")
    expect(row).to_contain_text("scouted it")
    expect(row).to_contain_text("done")
    row.locator("button:text('Open chat')").click()
    expect(page.locator(f"{ACTIVE} .chat-user").first).to_contain_text("scout")

    # Readable on a phone: nothing makes the page itself scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "dashboard")


TYPED_EARLY = {  # kind → (agent, what the user types, what must then show)
    "terminal": ("shell", "echo early-$((6*7))", f"{ACTIVE} .xterm-rows", "early-42"),
    "chat": ("fake", "echo early chat", f"{ACTIVE} .chat-agent", "early chat"),
}


@pytest.mark.parametrize("kind", list(TYPED_EARLY))
def test_input_given_while_the_session_connects_is_not_lost(
    browser: Browser, host: Daemon, tmp_path: Path, kind: str
) -> None:
    """On a busy machine a session's socket can still be opening when the user types: the input
    waits for it instead of being dropped. The daemon is paused (SIGSTOP) so the socket stays in
    CONNECTING while the user types."""
    agent, typed, shown, expected = TYPED_EARLY[kind]
    made = create_session(host, tmp_path, agent=agent, kind=kind)
    context = browser.new_context()
    assert host.proc is not None
    try:
        page = context.new_page()
        page.goto(f"{host.url}/login?token={host.owner_token}")
        row = page.locator(f"#sessions tr[data-session-id='{made['id']}']")
        expect(row).to_contain_text("running")
        os.kill(host.proc.pid, signal.SIGSTOP)
        try:
            row.locator(f"button:text('Open {kind}')").click()
            expect(page.locator(f"{ACTIVE} :focus")).to_have_count(1)
            page.keyboard.type(typed)
            page.keyboard.press("Enter")
        finally:
            os.kill(host.proc.pid, signal.SIGCONT)
        expect(page.locator(shown).last).to_contain_text(expected)
    finally:
        context.close()


def test_the_banner_says_what_to_do_when_svc_is_unreachable(
    browser: Browser, tmp_path: Path
) -> None:
    server = start_hosting_daemon(tmp_path)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{server.url}/login?token={server.owner_token}")
        expect(page.locator("#new-agent option[value=shell]")).to_have_count(1)
        expect(page.locator("#banner")).to_be_hidden()
        server.stop()
        # The command that starts it again as it ran (test_first_hour_dashboard.py runs it).
        expect(page.locator("#banner")).to_contain_text(
            f"bin/svc run --port {server.port}", timeout=15000
        )
        server.start()
        expect(page.locator("#banner")).to_be_hidden(timeout=30000)  # it reconnects by itself
    finally:
        context.close()
        server.stop()


def test_the_page_loads_without_a_single_failed_request(page: Page, host: Daemon) -> None:
    """Not even the favicon: every load used to cost a 404."""
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(f"{host.url}/login?token={host.owner_token}")
    expect(page.locator("h1")).to_have_text("svc")
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.querySelector('link[rel=icon]').href").endswith("favicon.svg")
    assert failed == []


def test_a_broken_settings_edit_shows_as_a_banner_until_it_is_fixed(
    page: Page, host: Daemon
) -> None:
    path = host.home / "settings.json"
    good = path.read_text()
    page.goto(f"{host.url}/login?token={host.owner_token}")
    problem = page.locator("#settings-problem")
    expect(problem).to_be_hidden()
    try:
        path.write_text(good.replace('"profiles"', '"profiles": 7, "was_profiles"', 1))
        expect(problem).to_be_visible(timeout=10000)
        expect(problem).to_contain_text("profiles: must be an object")
        expect(problem).to_contain_text(str(path))
    finally:
        path.write_text(good)
    expect(problem).to_be_hidden(timeout=10000)
