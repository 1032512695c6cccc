"""The `mcp` SDK's client against a daemon's /mcp, as an agent's injected entry calls it."""

from __future__ import annotations

from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.daemon import Daemon


def mcp_client(daemon: Daemon, session_id: str | None = None) -> Client:
    """The MCP token, and the caller's session in `X-Svc-Session-Id` when it has one."""
    headers = {"Authorization": f"Bearer {daemon.mcp_token}"}
    if session_id:
        headers["X-Svc-Session-Id"] = session_id
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    return Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http))


async def tool(daemon: Daemon, name: str, session_id: str | None = None, **arguments: Any) -> Any:
    """A tool's structured result; a tool error fails the test with its message."""
    async with mcp_client(daemon, session_id) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content
