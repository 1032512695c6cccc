"""MCP tools over /mcp with the official `mcp` client, in both protocol eras (contract §4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.browser_login import dashboard_url, lget
from harness.daemon import Daemon, migrated_home

MODES = ["auto", "legacy"]


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, dict, Path]]:
    root = tmp_path_factory.mktemp("mcp")
    server = Daemon(migrated_home(root / "home")).start()
    workspace = root / "work"
    workspace.mkdir()
    session = httpx.post(
        f"{server.url}/api/sessions",
        json={"agent": "shell", "workspace": str(workspace), "kind": "terminal"},
        headers=server.owner_headers(),
        timeout=30,
    ).json()
    yield server, session, workspace.resolve()
    server.stop()


def mcp_client(daemon: Daemon, mode: str, session_header: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {daemon.mcp_token}"}
    if session_header:
        headers["X-Svc-Session-Id"] = session_header
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http), mode=mode)


@pytest.mark.parametrize("mode", MODES)
async def test_the_session_comes_from_the_header_the_agent_config_sends(svc, mode: str) -> None:
    daemon, session, workspace = svc
    async with mcp_client(daemon, mode, session_header=session["id"]) as client:
        result = await client.call_tool("get_session_id", {})
    assert not result.is_error
    assert result.structured_content == {
        "session_id": session["id"],
        "agent": "shell",
        "workspace": str(workspace),
        "kind": "terminal",
        "status": "running",
    }


@pytest.mark.parametrize("mode", MODES)
async def test_an_explicit_session_id_wins_and_must_exist(svc, mode: str) -> None:
    daemon, session, _ = svc
    async with mcp_client(daemon, mode, session_header="not-a-session") as client:
        found = await client.call_tool("get_session_id", {"session_id": session["id"]})
        missing = await client.call_tool(
            "get_session_id", {"session_id": "00000000-0000-4000-8000-000000000000"}
        )
    assert found.structured_content["session_id"] == session["id"]
    assert missing.is_error
    assert "Pass an existing session_id" in missing.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_agent_and_cwd_find_the_newest_live_session(svc, mode: str) -> None:
    daemon, session, workspace = svc
    async with mcp_client(daemon, mode) as client:
        result = await client.call_tool("get_session_id", {"agent": "shell", "cwd": str(workspace)})
    assert result.structured_content["session_id"] == session["id"]


@pytest.mark.parametrize("mode", MODES)
async def test_nothing_to_go_on_is_a_tool_error_saying_what_to_pass(svc, mode: str) -> None:
    daemon, _, _ = svc
    async with mcp_client(daemon, mode) as client:
        tools = await client.list_tools()
        result = await client.call_tool("get_session_id", {"agent": "shell", "cwd": "/nowhere"})
    assert "get_session_id" in [t.name for t in tools.tools]
    assert result.is_error
    assert "SVC_SESSION_ID" in result.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_register_workspace_is_idempotent_and_refuses_missing_folders(
    svc, mode: str, tmp_path: Path
) -> None:
    daemon, _, _ = svc
    async with mcp_client(daemon, mode) as client:
        first = await client.call_tool("register_workspace", {"cwd": str(tmp_path), "name": "w"})
        again = await client.call_tool("register_workspace", {"cwd": str(tmp_path)})
        missing = await client.call_tool("register_workspace", {"cwd": "/no/such/dir"})
    assert first.structured_content["created"] is True
    assert again.structured_content == {**first.structured_content, "created": False}
    assert missing.is_error and "existing directory" in missing.content[0].text


async def test_preview_and_md_preview_give_links_that_work(svc) -> None:
    daemon, session, workspace = svc
    (workspace / "notes.md").write_text("# Hello from MCP\n")
    async with mcp_client(daemon, "auto", session_header=session["id"]) as client:
        live = await client.call_tool("preview", {"port": 5999, "title": "app"})
        page = await client.call_tool("md_preview", {"file": str(workspace / "notes.md")})
        denied = await client.call_tool("preview", {"port": 22})
        outside = await client.call_tool("md_preview", {"file": "/etc/hostname"})
    assert live.structured_content["owner_url"].startswith(dashboard_url(daemon) + "/preview/u/")
    assert "/preview/s/" in live.structured_content["share_url"]
    assert live.structured_content["share_expires_at"]
    owner_url = page.structured_content["owner_url"]
    assert owner_url.startswith(f"{dashboard_url(daemon)}/md-preview/")
    rendered = lget(owner_url, headers=daemon.owner_headers())
    assert rendered.status_code == 200 and "Hello from MCP" in rendered.text
    assert denied.is_error and "22" in denied.content[0].text
    assert outside.is_error
