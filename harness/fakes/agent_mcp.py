"""What the scripted agent (acp_agent.py) does with the MCP entry svc gives it: call svc's tools
as a real agent's injected configuration would."""

from __future__ import annotations

import os
from typing import Any


async def svc_tool(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call svc's MCP tool the way an agent's injected configuration does: the MCP URL and token
    from the environment, and its own session in `X-Svc-Session-Id`."""
    # Only `mcp` and `delegate` turns need the MCP SDK: importing it would slow every start.
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {
        "Authorization": f"Bearer {os.environ['SVC_MCP_TOKEN']}",
        "X-Svc-Session-Id": os.environ["SVC_SESSION_ID"],
    }
    http = httpx2.AsyncClient(headers=headers, timeout=300)
    async with Client(streamable_http_client(os.environ["SVC_MCP_URL"], http_client=http)) as c:
        result = await c.call_tool(tool, arguments)
    return result.structured_content if not result.is_error else {"error": str(result.content)}
