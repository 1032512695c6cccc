"""Handover end to end: an agent prepares a code over MCP (or a person over the API), a person
picks it up (API, CLI)."""

from __future__ import annotations

import os
import re
import subprocess
import termios
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.daemon import PYTHON, ROOT, Daemon
from harness.termclient import create_session, start_hosting_daemon, stop_session
from tests.e2e.test_terminal_cli import read_until

MODES = ["auto", "legacy"]  # the current and the 2025-11-25 protocol revisions
TOOLS = {"get_session_id", "prepare_handover", "register_workspace", "preview", "md_preview"}


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-handover"))
    yield server
    server.stop()


def agent_client(daemon: Daemon, session_id: str, mode: str = "auto") -> Client:
    """What an agent's injected MCP entry sends: the MCP token and its session header."""
    headers = {"Authorization": f"Bearer {daemon.mcp_token}", "X-Svc-Session-Id": session_id}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http), mode=mode)


async def prepare(daemon: Daemon, session_id: str, mode: str = "auto") -> dict:
    async with agent_client(daemon, session_id, mode) as client:
        result = await client.call_tool("prepare_handover", {})
    assert not result.is_error, result
    return result.structured_content


def pickup(daemon: Daemon, code: str) -> httpx.Response:
    return httpx.post(
        f"{daemon.url}/api/handover/pickup", json={"code": code}, headers=daemon.owner_headers()
    )


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_are_listed_with_schemas_in_both_revisions(host: Daemon, mode: str) -> None:
    async with agent_client(host, "", mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= TOOLS
    handover = tools["prepare_handover"]
    assert set(handover.input_schema["properties"]) == {"session_id", "cwd"}
    assert set(handover.output_schema["properties"]) == {
        "code",
        "expires_at",
        "expires_in",
        "pickup",
    }


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_gets_a_code_for_its_own_session(host: Daemon, tmp_path: Path, mode: str):
    session = create_session(host, tmp_path)
    made = await prepare(host, session["id"], mode)
    assert re.fullmatch(r"[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{4}", made["code"])
    assert made["expires_in"] == 120 and made["code"] in made["pickup"]
    picked = pickup(host, made["code"].lower())
    assert picked.status_code == 200 and picked.json()["id"] == session["id"]
    again = pickup(host, made["code"])
    wrong = pickup(host, "ZZZZ" if made["code"] != "ZZZZ" else "YYYY")
    assert again.status_code == wrong.status_code == 404
    assert again.json()["error"]["message"] == wrong.json()["error"]["message"]
    stop_session(host, session["id"])


def test_a_person_gets_a_code_from_the_api_and_a_stranger_does_not(
    host: Daemon, tmp_path: Path
) -> None:
    session = create_session(host, tmp_path)
    url = f"{host.url}/api/sessions/{session['id'][:8]}/handover"  # a prefix names it too
    made = httpx.post(url, headers=host.owner_headers())
    assert made.status_code == 201, made.text
    assert set(made.json()) == {"code", "expires_at", "expires_in", "pickup"}
    assert pickup(host, made.json()["code"]).json()["id"] == session["id"]
    assert httpx.post(url).status_code == 401  # no key: no code
    mcp_key = {"Authorization": f"Bearer {host.mcp_token}"}
    assert httpx.post(url, headers=mcp_key).status_code == 401  # an agent uses its MCP tool
    none = httpx.post(f"{host.url}/api/sessions/ffffffff/handover", headers=host.owner_headers())
    assert none.status_code == 404 and "no session" in none.json()["error"]["message"]
    stop_session(host, session["id"])


def test_of_fifty_concurrent_pickups_exactly_one_wins(tmp_path: Path) -> None:
    daemon = start_hosting_daemon(tmp_path / "svc")  # its own: the losers lock pickup a minute
    try:
        session = create_session(daemon, tmp_path)
        import asyncio

        code = asyncio.run(prepare(daemon, session["id"]))["code"]
        with ThreadPoolExecutor(50) as pool:
            statuses = list(pool.map(lambda _: pickup(daemon, code).status_code, range(50)))
        assert statuses.count(200) == 1, statuses
        assert set(statuses) <= {200, 404, 429}
        assert pickup(daemon, "ZZZZ").status_code == 429  # more than 10 failures this minute
    finally:
        daemon.stop()


async def test_pickup_on_the_command_line_attaches_to_the_terminal(
    host: Daemon, tmp_path: Path
) -> None:
    session = create_session(host, tmp_path)
    code = (await prepare(host, session["id"]))["code"]
    master, slave = os.openpty()
    env = {**os.environ, "SVC_HOME": str(host.home)}
    proc = subprocess.Popen(
        [PYTHON, str(ROOT / "manage.py"), "pickup", code],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    try:
        deadline = time.monotonic() + 20
        while termios.tcgetattr(master)[3] & termios.ICANON:
            assert time.monotonic() < deadline, "pickup never attached in raw mode"
            time.sleep(0.02)
        os.write(master, b"echo picked-$((6*7))\r")
        read_until(master, b"picked-42")
        os.write(master, b"\x1d")
        read_until(master, b"detached")
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        os.close(master)
    assert pickup(host, code).status_code == 404  # the CLI used it up
    stop_session(host, session["id"])


def test_a_wrong_code_on_the_command_line_fails_with_the_message(host: Daemon) -> None:
    result = host.manage("pickup", "QQQQ", check=False)
    assert result.returncode != 0
    assert "wrong, used or expired" in result.stderr


async def test_the_dashboards_pickup_box_opens_the_session(host: Daemon, tmp_path: Path) -> None:
    from playwright.async_api import async_playwright

    from harness.browser import FLAGS, HEADLESS_SHELL

    session = create_session(host, tmp_path)
    code = (await prepare(host, session["id"]))["code"]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=HEADLESS_SHELL, args=FLAGS)
        page = await browser.new_page()
        await page.goto(f"{host.url}/login?token={host.owner_token}")
        await page.fill("#pickup-code", code.lower())
        await page.click("#pickup button")
        await page.wait_for_selector("#session-panel .xterm", timeout=20000)
        assert "picked up shell session" in await page.inner_text("#pickup-status")
        await page.locator("#session-panel .xterm").click()
        await page.keyboard.type("echo box-$((6*7))\n")
        await page.wait_for_function(
            "document.querySelector('#session-panel').innerText.includes('box-42')", timeout=20000
        )
        await page.click("#app-nav a.nav-sessions")  # back to the view with the box
        await page.fill("#pickup-code", code)  # used: the same clear message as a wrong one
        await page.click("#pickup button")
        await page.wait_for_function(
            "document.querySelector('#pickup-status').innerText.includes('wrong, used or expired')"
        )
        await browser.close()
    stop_session(host, session["id"])


async def test_pickup_typed_in_a_chat_answers_with_the_session(
    host: Daemon, tmp_path: Path
) -> None:
    from harness.termclient import Chat

    agent_chat = await Chat.connect(host)
    ready = await agent_chat.open(agent="fake", workspace=str(tmp_path))
    sid = ready["session_id"]
    await agent_chat.send(type="prompt", session_id=sid, text="echo handed over")
    await agent_chat.next("turn_end")
    await agent_chat.close()
    code = (await prepare(host, sid))["code"]
    elsewhere = await Chat.connect(host)  # another device, another socket
    await elsewhere.send(type="prompt", text=f"/pickup {code.lower()}")
    picked = await elsewhere.next("pickup")
    assert picked["session"]["id"] == sid and picked["session"]["kind"] == "chat"
    opened = await elsewhere.next("session")
    assert opened["session_id"] == sid and opened["status"] == "running"
    assert "handed over" in elsewhere.texts()  # its history came along
    await elsewhere.send(type="prompt", text=f"/pickup {code}")
    assert "wrong, used or expired" in (await elsewhere.next("error"))["message"]
    await elsewhere.close()
    stop_session(host, sid)


async def test_a_hosted_agent_learns_its_session_and_hands_it_over_with_no_arguments(
    host: Daemon, tmp_path: Path
) -> None:
    """The agent itself calls svc, with nothing but the environment svc gave it."""
    from harness.termclient import Chat

    chat = await Chat.connect(host)
    sid = (await chat.open(agent="fake", workspace=str(tmp_path)))["session_id"]
    await chat.send(type="prompt", session_id=sid, text="mcp get_session_id ; mcp prepare_handover")
    await chat.next("turn_end")
    said = chat.texts()
    await chat.close()
    assert f'"session_id": "{sid}"' in said, said
    code = re.search(r'"code": "([A-Z2-9]{4})"', said)
    assert code, said
    picked = pickup(host, code[1])
    assert picked.status_code == 200 and picked.json()["id"] == sid
    stop_session(host, sid)
