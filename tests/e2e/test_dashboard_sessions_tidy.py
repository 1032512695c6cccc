"""The sessions table in Chromium, tidied: a chat's title (its first prompt), an age that ticks,
who ended a session ("stopped when svc stopped", "stopped by you") instead of a bare exit code,
the All / Live / Exited filter, and Remove taking an ended row away."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from playwright.sync_api import Browser, expect

from harness.termclient import (
    Chat,
    create_session,
    hosting_settings,
    start_hosting_daemon,
    stop_session,
)


async def prompt(daemon, session_id: str, text: str) -> None:  # type: ignore[no-untyped-def]
    chat = await Chat.connect(daemon)
    try:
        await chat.open(session_id=session_id)
        await chat.send(type="prompt", session_id=session_id, text=text)
        await chat.next("turn_end", timeout=20)
    finally:
        await chat.close()


def test_the_sessions_table_tidies_up(browser: Browser, tmp_path: Path) -> None:
    daemon = start_hosting_daemon(tmp_path)
    context = browser.new_context()
    try:
        # svc stops it at its shutdown (host.on_exit "stop"; by default the holder keeps it).
        settings = {**hosting_settings(), "host": {"on_exit": "stop"}}
        (daemon.home / "settings.json").write_text(json.dumps(settings))
        before = create_session(daemon, tmp_path)
        daemon.restart()
        chat = create_session(daemon, tmp_path, agent="fake", kind="chat")
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, prompt(daemon, chat["id"], "echo tidy the table")).result()
        stopped = create_session(daemon, tmp_path)
        assert stop_session(daemon, stopped["id"]).status_code == 200

        page = context.new_page()
        page.goto(f"{daemon.url}/login?token={daemon.owner_token}")

        def row(session: dict):  # type: ignore[no-untyped-def]
            return page.locator(f"#sessions tr[data-session-id='{session['id']}']")

        expect(row(chat).locator("td.title")).to_have_text("echo tidy the table")
        expect(row(before).locator("td.status")).to_have_text("stopped when svc stopped")
        expect(row(stopped).locator("td.status")).to_have_text("stopped by you")

        # The age ticks by itself (no new list from svc in between).
        age = row(chat).locator("td.age")
        first = age.inner_text()
        expect(age).not_to_have_text(first, timeout=15000)

        # The filter.
        page.select_option("#sessions-filter", "live")
        expect(row(chat)).to_be_visible()
        expect(row(before)).to_have_count(0)
        expect(row(chat).get_by_role("button", name="Remove")).to_have_count(0)  # live: none
        page.select_option("#sessions-filter", "exited")
        expect(row(chat)).to_have_count(0)
        expect(row(before)).to_be_visible()
        expect(row(stopped)).to_be_visible()
        page.select_option("#sessions-filter", "")
        expect(row(chat)).to_be_visible()

        # Remove takes the ended row away, for good.
        row(stopped).get_by_role("button", name="Remove").click()
        expect(row(stopped)).to_have_count(0)
        gone = httpx.get(
            f"{daemon.url}/api/sessions/{stopped['id']}", headers=daemon.owner_headers()
        )
        assert gone.status_code == 404
        page.reload()
        expect(row(before)).to_be_visible()
        expect(row(stopped)).to_have_count(0)
    finally:
        context.close()
        daemon.stop()
