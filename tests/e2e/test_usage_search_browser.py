"""Usage and Search as a new user met them (issue 34, friction 10), in Chromium against a live
daemon at desktop and phone sizes: a request to a profile settings.json does not have ("nope")
and one the provider refused (401, the fake provider) are counted as failed, not as requests,
with no "nope" row and no "(none)" model; a search snippet of a long message starts and ends
on whole words; an error shown in either view goes when the next request succeeds."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
from playwright.sync_api import Browser, Page, Route, expect

from harness.daemon import ROOT, Daemon, migrated_home
from harness.fakes.bridge_clients import DRIVERS
from harness.fakes.bridge_setup import ALIAS, base_url, bridge_settings
from harness.fakes.fake_provider import FakeProvider
from harness.termclient import Chat, hosting_settings, shell_env
from tests.e2e.test_usage_browser import until

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
# Hyphenated and quoted words around the word looked for: the database's snippet cuts at its own
# tokens (`w27-x` is two), which are not words.
FILLER = " ".join(f"well-{i}-known" for i in range(40))
LONG = f"{FILLER} don't narwhalsnippet it's {FILLER} end-of-text"
WORDS = set(LONG.split())


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("svc-usage-search")
    fake = FakeProvider().start()
    settings = hosting_settings()
    settings["profiles"]["chat"] = bridge_settings(fake)["profiles"]["chat"]
    work = tmp / "work"
    work.mkdir()
    server = Daemon(migrated_home(tmp / "home", settings), env=shell_env(tmp)).start()
    try:
        for profile, marker in (("chat", "fine"), ("chat", "[status:401]"), ("nope", "typo")):
            client = openai.OpenAI(
                base_url=base_url(server, "openai-chat", profile), api_key="x", max_retries=0
            )
            try:
                DRIVERS["openai-chat"](client, ALIAS, marker, False)
            except openai.APIStatusError as refused:
                assert refused.status_code in (401, 404), refused

        def logged() -> bool:
            rows = httpx.get(
                f"{server.url}/api/usage",
                params={"group_by": "day"},
                headers=server.owner_headers(),
            ).json()
            return sum(r["requests"] + r.get("errors", 0) for r in rows) == 3

        until(logged, what="the three requests in the log")
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, say(server, work, LONG)).result()
        server.fake = fake  # type: ignore[attr-defined]
        yield server
    finally:
        server.stop()
        fake.stop()


async def say(server: Daemon, work: Path, text: str) -> None:
    chat = await Chat.connect(server)
    ready = await chat.open(agent="fake", workspace=str(work))
    await chat.send(type="prompt", session_id=ready["session_id"], text=f"echo {text}")
    await chat.next("turn_end")
    await chat.close()


@pytest.fixture(params=list(VIEWPORTS))
def page(request: pytest.FixtureRequest, browser: Browser, daemon: Daemon) -> Iterator[Page]:
    context = browser.new_context(**VIEWPORTS[request.param])
    page = context.new_page()
    page.goto(f"{daemon.url}/login?token={daemon.owner_token}")
    yield page
    context.close()


def failing_once(page: Page, pattern: str) -> Callable[[], None]:
    """The next request to `pattern` fails as a dropped connection does; later ones go through."""
    state = {"failed": False}

    def handle(route: Route) -> None:
        if not state["failed"]:
            state["failed"] = True
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route(pattern, handle)
    return lambda: page.unroute(pattern, handle)


def axe_serious(page: Page, where: str) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async (where) => (await axe.run(where)).violations", where)
    return [v["id"] for v in found if v["impact"] in ("serious", "critical")]


def test_usage_counts_failed_requests_apart_and_lists_only_real_profiles_and_models(
    page: Page,
) -> None:
    stop = failing_once(page, re.compile(r"/api/usage\?group_by=day"))
    page.evaluate("location.hash = 'view=usage'")
    error = page.locator("#usage .usage-error")
    expect(error).to_be_visible()
    stop()
    page.get_by_role("button", name="7 days").click()  # the next load succeeds
    expect(error).to_have_count(0)

    expect(page.locator("[data-total='Requests']")).to_have_text("1")
    expect(page.locator("[data-total='Failed requests']")).to_have_text("2")
    profiles = page.locator("table[data-group=profile] tbody tr")
    expect(profiles).to_have_count(1)
    expect(profiles.locator("th")).to_have_text("chat")
    expect(profiles.locator("td").nth(1)).to_have_text("1")  # the 401 is chat's failed one
    expect(page.locator("#usage .usage-unknown-profiles")).to_contain_text("1 request named a")
    usage = page.locator("#usage")
    expect(usage).not_to_contain_text("nope")
    expect(usage).not_to_contain_text("(none)")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert axe_serious(page, "#usage-box") == []


def test_a_snippet_starts_and_ends_on_whole_words_and_a_failed_search_clears(
    page: Page,
) -> None:
    page.evaluate("location.hash = 'view=search'")
    stop = failing_once(page, re.compile(r"/api/search\?"))
    box = page.get_by_role("searchbox", name="Search chat history")
    box.fill("narwhalsnippet")
    box.press("Enter")
    error = page.locator("#search .search-error")
    expect(error).to_be_visible()
    stop()
    box.press("Enter")
    hits = page.locator("#search .search-snippet")
    expect(hits.first).to_contain_text("narwhalsnippet")
    expect(error).to_have_count(0)
    texts = hits.all_inner_texts()
    # The prompt is one long event (the fake agent streams its answer a word per event).
    assert any(len(text.split()) > 4 and text.startswith("…") for text in texts), texts
    for text in texts:
        words = text.strip("…").split()
        assert words[0] in WORDS and words[-1] in WORDS, text
    assert axe_serious(page, "#search-box") == []
