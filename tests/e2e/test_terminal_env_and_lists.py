"""What a hosted agent sees in its environment, and /ws/sessions following a session's life
(issue 4, acceptance 4)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.daemon import Daemon
from harness.termclient import (
    Term,
    create_session,
    open_ws,
    start_hosting_daemon,
    stop_session,
)

SHOW_ENV = (
    "for v in SVC_SESSION_ID SVC_AGENT SVC_WORKSPACE SVC_PROFILE_ID SVC_MCP_URL SVC_MCP_TOKEN "
    "SVC_BRIDGE_URL OPENAI_BASE_URL ANTHROPIC_BASE_URL GOOGLE_GEMINI_BASE_URL; "
    'do printf "%s=<%s>\\n" $v "${!v}"; done; echo env-$((1+1))-done'
)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    server = start_hosting_daemon(tmp_path_factory.mktemp("svc-env"))
    yield server
    server.stop()


async def shown_env(host: Daemon, session: dict[str, Any]) -> dict[str, str]:
    term = await Term.open(host, session["id"])
    await term.run(SHOW_ENV)
    await term.expect(b"env-2-done")
    await term.close()
    stop_session(host, session["id"])
    text = term.out.decode(errors="replace")
    return {
        line.split("=", 1)[0].split()[-1]: line.split("=<", 1)[1].split(">", 1)[0]
        for line in text.split("\r\n")
        if "=<" in line and ">" in line.split("=<", 1)[1]
    }


async def test_the_agent_sees_its_session_variables(host: Daemon, tmp_path: Path) -> None:
    session = create_session(host, tmp_path)
    env = await shown_env(host, session)
    assert env["SVC_SESSION_ID"] == session["id"]
    assert env["SVC_AGENT"] == "shell"
    assert env["SVC_WORKSPACE"] == str(tmp_path.resolve())
    assert env["SVC_PROFILE_ID"] == ""
    assert env["SVC_MCP_URL"] == f"http://127.0.0.1:{host.port}/mcp"
    assert env["SVC_MCP_TOKEN"] == host.mcp_token
    assert env["SVC_BRIDGE_URL"] == ""


async def test_with_a_profile_the_agent_gets_the_bridge(host: Daemon, tmp_path: Path) -> None:
    session = create_session(host, tmp_path, profile_id="p1")
    env = await shown_env(host, session)
    scope = f"{session['agent']}.{session['id']}"  # contract §0: agent and session
    bridge = f"http://127.0.0.1:{host.port}/svc/local-api/p1/{scope}"
    assert env["SVC_PROFILE_ID"] == "p1"
    assert env["SVC_BRIDGE_URL"] == bridge
    assert env["OPENAI_BASE_URL"] == f"{bridge}/openai-chat/v1"
    assert env["ANTHROPIC_BASE_URL"] == f"{bridge}/anthropic"
    assert env["GOOGLE_GEMINI_BASE_URL"] == f"{bridge}/gemini"


async def next_snapshot_where(ws: Any, predicate: Any, timeout: float = 5) -> list[dict]:
    async with asyncio.timeout(timeout):
        while True:
            items = json.loads(await ws.recv())
            if predicate(items):
                return items


async def test_sessions_list_follows_creation_and_exit_within_a_second(
    host: Daemon, tmp_path: Path
) -> None:
    sessions_ws = await open_ws(host, "/ws/sessions")
    json.loads(await sessions_ws.recv())
    created = time.monotonic()
    session = await asyncio.to_thread(create_session, host, tmp_path)

    def has(status: str) -> Any:
        return lambda items: any(s["id"] == session["id"] and s["status"] == status for s in items)

    await next_snapshot_where(sessions_ws, has("running"))
    assert time.monotonic() - created < 1.0  # measured from before the POST
    term = await Term.open(host, session["id"])
    await term.run("exit 5")
    exited_at = time.monotonic()
    items = await next_snapshot_where(sessions_ws, has("exited"))
    assert time.monotonic() - exited_at < 1.0
    row = next(s for s in items if s["id"] == session["id"])
    assert row["exit_code"] == 5
    await sessions_ws.close()
