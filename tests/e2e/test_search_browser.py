"""The dashboard's search view (contract §10 Search) in Debian's Chromium, on SQLite (FTS5) and on
PostgreSQL (full-text search, a fresh database on the local server): the scripted agent says a
distinctive word in a chat, svc restarts twice, then typing the word finds the chat's events —
snippet escaped, the word marked — and a hit opens `#session=<id>&at=<seq>` on that event."""

from __future__ import annotations

import asyncio
import html
import json
import re
import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from harness.daemon import ROOT, Daemon, manage
from harness.services import postgres_database
from harness.termclient import (
    Chat,
    hosting_settings,
    shell_env,
    start_hosting_daemon,
    stop_session,
)

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# Chat text that looks like markup must arrive as text, never as an element.
MARKUP = "<img src=x onerror=window.__pwned=1>"


def run(coroutine):  # type: ignore[no-untyped-def]
    """A WebSocket client from a sync test: Playwright's own loop runs on this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Daemon]:
    if request.param == "sqlite":
        daemon = start_hosting_daemon(tmp_path / "svc")
        yield daemon
        daemon.stop()
        return
    with postgres_database() as database_url:
        home = tmp_path / "svc"
        home.mkdir()
        (home / "settings.json").write_text(json.dumps(hosting_settings()))
        env = {**shell_env(tmp_path), "DATABASE_URL": database_url}
        manage(home, "migrate", "--noinput", "-v", "0", env=env)
        daemon = Daemon(home, env=env).start()
        try:
            yield daemon
        finally:
            daemon.stop()


async def chat_saying(server: Daemon, workspace: Path, word: str) -> tuple[str, dict[str, int]]:
    """A chat with the scripted agent that echoes `word`; (session id, {kind: seq} of the
    events that carry the word)."""
    chat = await Chat.connect(server)
    ready = await chat.open(agent="fake", workspace=str(workspace))
    sid = ready["session_id"]
    await chat.send(type="prompt", session_id=sid, text=f"echo we said {word} here {MARKUP}")
    await chat.next("turn_end")
    await chat.close()
    said = {
        e["kind"]: e["seq"]
        for e in chat.events
        if word in (e.get("text") or "") and e["kind"].endswith("_chunk")
    }
    return sid, said


def test_a_word_said_two_restarts_ago_is_found_and_opens_its_event(
    browser: Browser, server: Daemon, tmp_path: Path
) -> None:
    word = f"quokka{secrets.token_hex(4)}"
    sid, said = run(chat_saying(server, tmp_path, word))
    assert set(said) == {"user_message_chunk", "agent_message_chunk"}, said
    stop_session(server, sid)
    server.restart()
    server.restart()
    vendor = server.manage(
        "shell", "-c", "from django.db import connection; print(connection.vendor)"
    )
    on = vendor.stdout.strip().splitlines()[-1]
    assert on == ("postgresql" if "DATABASE_URL" in server.env else "sqlite")
    # The API on this database: the hits name the session and its events.
    answer = httpx.get(
        f"{server.url}/api/search", params={"q": word}, headers=server.owner_headers(), timeout=10
    )
    found: list[dict[str, Any]] = answer.json()
    assert {(h["kind"], h["seq"]) for h in found} == set(said.items())
    assert {(h["session_id"], h["agent"]) for h in found} == {(sid, "fake")}
    assert all(h["title"].startswith(f"echo we said {word}") for h in found)

    context = browser.new_context(locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{server.url}/login?token={server.owner_token}")
        expect(page.locator("h1")).to_have_text("svc")
        base = page.url.split("#")[0].rstrip("/")
        page.goto(base + "/#view=search")

        # Typed, not submitted: the box searches once the typing pauses.
        box = page.get_by_label("Search chat history")
        box.press_sequentially(word, delay=20)
        hits = page.locator("#search .search-hit")
        expect(hits).to_have_count(2)
        expect(page.locator("#search .search-status")).to_have_text(f"2 hits for “{word}”.")
        for seq in said.values():
            hit = page.locator(f"#search .search-hit[data-hit-seq='{seq}']")
            expect(hit.locator("mark")).to_have_text(word)
            expect(hit.locator(".search-title")).to_contain_text(f"echo we said {word}")
            expect(hit.locator(".search-meta")).to_contain_text("fake")
            expect(hit.locator("a")).to_have_attribute("href", f"#session={sid}&at={seq}")
        # Each snippet shows exactly the API's text; the user's message carried markup, which
        # shows as the text it was (PostgreSQL's ts_headline leaves tags out of its snippets).
        for hit in found:
            card = page.locator(f"#search .search-hit[data-hit-seq='{hit['seq']}']")
            shown = card.locator(".search-snippet")
            expect(shown).to_have_text(html.unescape(re.sub(r"</?mark>", "", hit["snippet"])))
        user_hit = page.locator(f"#search .search-hit[data-hit-seq='{said['user_message_chunk']}']")
        if on == "sqlite":
            expect(user_hit.locator(".search-snippet")).to_contain_text(MARKUP)
        expect(page.locator("#search img")).to_have_count(0)
        assert page.evaluate("window.__pwned === undefined")

        page.add_script_tag(path=str(AXE))
        found_a11y = page.evaluate("async () => (await axe.run('#search-box')).violations")
        assert [v["id"] for v in found_a11y if v["impact"] in ("serious", "critical")] == []

        # Nothing found says so; Enter searches at once.
        box.fill(f"{word}zz")
        box.press("Enter")
        expect(page.locator("#search .search-status")).to_have_text(f"No match for “{word}zz”.")
        expect(hits).to_have_count(0)

        # A link with the query fills the box and runs it.
        page.goto(base + f"/#view=search&q={word}")
        expect(box).to_have_value(word)
        expect(hits).to_have_count(2)

        # A hit opens the session on its event.
        # The layout may rewrite the hash once the session is shown (replaceState), so the
        # hash the click set is read from the navigation's own event.
        page.evaluate(
            "window.__hashes = []; addEventListener('hashchange', "
            "(e) => __hashes.push(new URL(e.newURL).hash), {capture: true})"
        )
        seq = said["agent_message_chunk"]
        page.locator(f"#search .search-hit[data-hit-seq='{seq}'] a").click()
        page.wait_for_function("window.__hashes.length > 0")
        assert page.evaluate("window.__hashes") == [f"#session={sid}&at={seq}"]
        # The session view (chat.js) gives each chat message the seq of its first event and
        # marks the message that holds the hit's event (streamed chunks share one message).
        held = page.locator(f"#session-panel .chat-log [data-hit='{seq}']")
        expect(held).to_be_visible()
        expect(held).to_contain_text(word)
        assert int(held.get_attribute("data-seq") or -1) <= seq

        # The user's prompt is one event: its message carries that very seq.
        user_seq = said["user_message_chunk"]
        page.goto(base + f"/#view=search&q={word}")
        page.locator(f"#search .search-hit[data-hit-seq='{user_seq}'] a").click()
        prompt = page.locator(f"#session-panel [data-seq='{user_seq}']")
        expect(prompt).to_be_visible()
        expect(prompt).to_contain_text(word)
        assert errors == []
    finally:
        context.close()
