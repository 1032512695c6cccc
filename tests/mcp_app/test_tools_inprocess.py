"""svc's MCP tools in process, through the official `mcp` SDK client: its streamable-HTTP
transport over httpx2's ASGITransport into `mcp_app.asgi.application` (MCPGuard → the started
parts' MCPApp, the test's parts in the scope), as an agent's injected entry calls /mcp — no
daphne, no socket.

The ASGI transport hands a response over only once the app has finished it; the server is
stateless and answers each POST with one short SSE stream, so the SDK's streaming (progress
notifications included) arrives whole, just all at once."""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from asgiref.sync import sync_to_async
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from core import config
from harness.runtime import running, scoped, settings_file
from harness.termclient import hosting_settings
from mcp_app.asgi import application
from sessions_app import selectors
from sessions_app.handover import ALPHABET
from sessions_app.models import Session, Workspace
from subagents_app import subagents
from svcproject.parts import Parts

pytestmark = pytest.mark.django_db(transaction=True)

URL = "http://127.0.0.1:8000/mcp"  # a loopback Host, as the guard and the SDK's check want
TOOLS = {
    "get_session_id",
    "prepare_handover",
    "register_workspace",
    "preview",
    "md_preview",
    "initialize_subagents",
    "wait_for_subagents",
}


@pytest.fixture
def fake_agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SVC_SUBAGENT_PROGRESS_S", "0.2")
    with settings_file(hosting_settings()):
        yield


@pytest.fixture
async def rt(fake_agent: None) -> AsyncIterator[Parts]:
    async with running() as runtime:
        yield runtime


def http_client(
    rt: Parts,
    token: str | None = None,
    session_id: str | None = None,
    peer: str = "127.0.0.1",
    **headers: str,
) -> httpx2.AsyncClient:
    headers["Authorization"] = f"Bearer {token or config.current_auth().mcp_token}"
    if session_id:
        headers["X-Svc-Session-Id"] = session_id
    transport = httpx2.ASGITransport(app=scoped(application, rt), client=(peer, 50123))
    return httpx2.AsyncClient(transport=transport, headers=headers, timeout=30)


@asynccontextmanager
async def mcp(
    rt: Parts, session_id: str | None = None, mode: str = "auto"
) -> AsyncIterator[Client]:
    """The SDK's client; `mode` "legacy" speaks the 2025-11-25 revision (contract §4)."""
    async with (
        http_client(rt, session_id=session_id) as http,
        Client(streamable_http_client(URL, http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def error(client: Client, tool: str, **arguments: Any) -> str:
    """A tool error (`isError: true`): the service's own words, after the SDK's prefix."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = " ".join(getattr(c, "text", "") for c in result.content)
    prefix = f"Error executing tool {tool}: "
    assert text.startswith(prefix), text
    return text.removeprefix(prefix)


async def a_session(workspace: Path, agent: str = "fake", **fields: Any) -> Session:
    """A live row, as a hosted session has (the tools below only read it)."""
    return await Session.objects.acreate(
        agent=agent, workspace=str(workspace.resolve()), kind="chat", status="running", **fields
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_tools_are_listed_with_their_output_schemas(rt: Parts, mode: str) -> None:
    async with mcp(rt, mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert tool.description and tool.output_schema, tool.name
        assert tool.output_schema["type"] == "object"
    outputs = {name: set(t.output_schema["properties"]) for name, t in listed.items()}
    assert outputs["get_session_id"] == {"session_id", "agent", "workspace", "kind", "status"}
    assert outputs["prepare_handover"] == {"code", "expires_at", "expires_in", "pickup"}
    assert outputs["register_workspace"] == {"workspace_id", "path", "name", "created"}
    assert outputs["preview"] == {
        "slug",
        "owner_url",
        "share_url",
        "local_share_url",
        "share_expires_at",
        "warning",
    }
    assert "warning" not in listed["preview"].output_schema.get("required", [])
    assert outputs["md_preview"] == {"slug", "owner_url"}
    assert outputs["initialize_subagents"] == {"turn_id", "mode", "subagents"}
    assert {"turn_id", "status", "completed", "timed_out", "reports"} <= outputs[
        "wait_for_subagents"
    ]
    port = listed["preview"].input_schema["properties"]["port"]
    assert (port["minimum"], port["maximum"]) == (1, 65535)
    mode = listed["initialize_subagents"].input_schema["properties"]["mode"]
    assert set(mode["enum"]) == {"parallel", "collaboration", "brainstorming"}
    assert set(listed["initialize_subagents"].input_schema["required"]) == {"mode", "cwd", "agents"}


async def test_get_session_id_from_the_header_an_explicit_id_or_agent_and_cwd(
    rt: Parts, tmp_path: Path
) -> None:
    mine = await a_session(tmp_path)
    other = await a_session(tmp_path / "..", agent="shell")
    expected = {
        "session_id": str(mine.id),
        "agent": "fake",
        "workspace": str(tmp_path.resolve()),
        "kind": "chat",
        "status": "running",
    }
    async with mcp(rt, session_id=str(mine.id)) as client:
        assert await call(client, "get_session_id") == expected
        explicit = await call(client, "get_session_id", session_id=str(other.id))
        assert explicit["session_id"] == str(other.id)  # an explicit id wins over the header
        missing = await error(
            client, "get_session_id", session_id="00000000-0000-4000-8000-000000000000"
        )
    assert missing == (
        "No svc session '00000000-0000-4000-8000-000000000000'. Pass an existing session_id."
    )
    async with mcp(rt) as client:
        found = await call(client, "get_session_id", agent="fake", cwd=str(tmp_path.resolve()))
        alone = await error(client, "get_session_id", cwd=str(tmp_path.resolve()))
        nothing = await error(client, "get_session_id")
    assert found == expected
    for message in (alone, nothing):  # a workspace alone is not enough: it names what to pass
        assert "Cannot tell which session you are" in message
        assert "Pass session_id (the SVC_SESSION_ID environment variable)" in message
        assert "the agent and cwd" in message
    async with mcp(rt, session_id="not-a-session") as client:
        assert "SVC_SESSION_ID" in await error(client, "get_session_id")


async def test_register_workspace_is_idempotent_and_refuses_what_is_no_directory(
    rt: Parts, tmp_path: Path
) -> None:
    async with mcp(rt) as client:
        first = await call(client, "register_workspace", cwd=str(tmp_path), name="w")
        again = await call(client, "register_workspace", cwd=str(tmp_path))
        missing = await error(client, "register_workspace", cwd=str(tmp_path / "gone"))
        relative = await error(client, "register_workspace", cwd="some/dir")
    assert first == {
        "workspace_id": first["workspace_id"],
        "path": str(tmp_path.resolve()),
        "name": "w",
        "created": True,
    }
    assert again == {**first, "created": False}
    assert await Workspace.objects.acount() == 1
    assert str(tmp_path.resolve()) in config.current_settings().workspaces
    assert missing == (
        f"workspace {str(tmp_path / 'gone')!r} is not an existing directory. "
        "Pass cwd: the absolute path of an existing directory."
    )
    assert "must be absolute" in relative and "Pass cwd" in relative


async def test_prepare_handover_gives_a_four_character_code_for_the_callers_session(
    rt: Parts, tmp_path: Path
) -> None:
    mine = await a_session(tmp_path)
    async with mcp(rt, session_id=str(mine.id)) as client:
        first = await call(client, "prepare_handover")
        second = await call(client, "prepare_handover")
    async with mcp(rt) as client:
        refused = await error(client, "prepare_handover")
    assert re.fullmatch(f"[{ALPHABET}]{{4}}", first["code"]), first["code"]
    assert first["code"] != second["code"]  # each call a fresh code
    assert first["expires_in"] == 120
    assert f"`python manage.py pickup {first['code']}`" in first["pickup"]
    assert f"`/pickup {first['code']}`" in first["pickup"]
    from sessions_app.models import HandoverCode

    stored = await HandoverCode.objects.aget(code=first["code"])
    assert stored.session_id == mine.id and stored.expires_at.isoformat() == first["expires_at"]
    assert "Cannot tell which session you are" in refused


async def test_a_code_prepared_for_a_hosted_chat_shows_in_that_chat(
    rt: Parts, tmp_path: Path
) -> None:
    from sessions_app.services import asession_create

    hosted = await asession_create(host=rt.host, agent="fake", workspace=str(tmp_path), kind="chat")
    chat = rt.host.chat(str(hosted.id))
    assert chat is not None
    seen: list[dict[str, Any]] = []
    subscription = await chat.subscribe(seen.append)
    subscription.start()
    async with mcp(rt, session_id=str(hosted.id)) as client:
        code = await call(client, "prepare_handover")
    subscription.close()
    (shown,) = [e for e in seen if e["kind"] == "handover"]
    assert (shown["code"], shown["expires_in"]) == (code["code"], 120)
    assert shown["expires_at"] == code["expires_at"] and shown["seq"]  # stored, for replay


async def test_subagents_started_over_mcp_have_sessions_and_their_reports_come_back(
    rt: Parts, tmp_path: Path
) -> None:
    parent = await a_session(tmp_path)
    agents = [
        {"name": "helper", "agent": "fake", "task": 'report {"summary": "helped", "ok": true}'},
        {"name": "echo", "agent": "fake", "task": "echo just words"},
    ]
    beats: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        beats.append((value, total, message))

    async with mcp(rt, session_id=str(parent.id)) as client:
        made = await call(
            client, "initialize_subagents", mode="parallel", cwd=str(tmp_path), agents=agents
        )
        ids = [s["session_id"] for s in made["subagents"]]
        assert all(ids) and len(set(ids)) == 2  # non-null, one each, at once
        for sid in ids:
            row = await sync_to_async(selectors.session_get)(sid)
            assert row is not None and row.kind == "subagent"
        result = await client.call_tool(
            "wait_for_subagents",
            {"turn_id": made["turn_id"], "timeout_s": 30},
            progress_callback=progress,
        )
    assert not result.is_error, result.content
    done = result.structured_content
    assert (done["turn_id"], done["mode"], done["status"]) == (
        made["turn_id"],
        "parallel",
        "completed",
    )
    assert done["completed"] and not done["timed_out"]
    helper, echo = done["reports"]
    assert (helper["status"], helper["summary"]) == ("done", "helped")
    assert helper["report"] == {"summary": "helped", "ok": True}
    assert (echo["status"], echo["summary"], echo["report"]) == ("done", "just words", None)
    assert [r["session_id"] for r in done["reports"]] == ids
    assert beats and beats[0][1] == 2 and "subagents ended" in (beats[0][2] or "")
    assert [b[0] for b in beats] == sorted({b[0] for b in beats})  # strictly growing
    snapshot = await sync_to_async(subagents.turn_snapshot)(made["turn_id"])
    assert snapshot["parent_session_id"] == str(parent.id)  # the header's session


async def test_subagent_argument_errors_are_tool_errors_saying_what_to_send(
    rt: Parts, tmp_path: Path
) -> None:
    async with mcp(rt) as client:
        none = await error(
            client, "initialize_subagents", mode="parallel", cwd=str(tmp_path), agents=[]
        )
        unknown = await error(client, "wait_for_subagents", turn_id="no-such-turn")
        turn = await sync_to_async(subagents.turn_create)(
            mode="brainstorming",
            cwd=str(tmp_path),
            agents=[{"name": "a", "agent": "fake", "task": "echo"}],
        )
        too_long = await error(client, "wait_for_subagents", turn_id=str(turn.id), timeout_s=4000)
    assert "agents must list 1 to 8 subagents" in none and "got 0" in none
    assert (
        unknown == "no subagent turn 'no-such-turn'; pass the turn_id initialize_subagents returned"
    )
    assert too_long.startswith("timeout_s must be between 1 and 3600 seconds, got 4000")
    assert "call again to keep waiting" in too_long


async def test_preview_and_md_preview_refusals_are_tool_errors_that_say_why(
    rt: Parts, tmp_path: Path
) -> None:
    mine = await a_session(tmp_path)
    (tmp_path / "notes.md").write_text("# notes\n")
    async with mcp(rt, session_id=str(mine.id)) as client:
        page = await call(client, "md_preview", file=str(tmp_path / "notes.md"))
        live = await call(client, "preview", port=5999, title="app")
        ssh = await error(client, "preview", port=22)
        redis = await error(client, "preview", port=6379, cwd=str(tmp_path))
        zero = await client.call_tool("preview", {"port": 0})
        outside = await error(client, "md_preview", file="/etc/hostname")
        absent = await error(client, "md_preview", file=str(tmp_path / "nope.md"))
        relative = await error(client, "md_preview", file="notes.md", cwd="rel")
    dashboard = f"http://{config.current_auth().browser_host}:"
    assert (
        page["owner_url"].startswith(dashboard)
        and f"/md-preview/{page['slug']}" in page["owner_url"]
    )
    assert (
        live["owner_url"].startswith(dashboard)
        and f"/preview/u/{live['slug']}/" in live["owner_url"]
    )
    assert (live["share_url"] or "").startswith("http://127.0.0.1:") and live["share_expires_at"]
    assert ssh == "port 22 is on the deny-list (databases, mail, ssh…): svc never proxies to it"
    assert "port 6379 is on the deny-list" in redis
    assert zero.is_error and "port" in zero.content[0].text
    assert outside == (
        "'/etc/hostname' is outside every registered workspace and your session's workspace; "
        "register its folder first (register_workspace)"
    )
    assert absent == f"{str(tmp_path / 'nope.md')!r} is not an existing file"
    assert relative == "cwd must be an absolute path, got 'rel'"


async def test_the_guard_refuses_the_owner_token_a_remote_peer_and_a_foreign_host(
    rt: Parts,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    owner = config.current_auth().owner_token
    async with http_client(rt, token=owner, **accept) as http:
        refused = await http.post(URL, json=body)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == 'Bearer realm="svc-mcp"'
    answer = refused.json()
    assert answer["error"]["code"] == -32001 and answer["id"] is None
    assert "Authorization: Bearer <mcp_token>" in answer["error"]["message"]
    async with http_client(rt, token="not-a-token", **accept) as http:
        assert (await http.post(URL, json=body)).status_code == 401
    async with http_client(rt, peer="192.0.2.7", **accept) as http:
        remote = await http.post(URL, json=body)
    assert remote.status_code == 403 and remote.json() == {"error": "forbidden"}
    async with http_client(rt, **accept) as http:
        foreign = await http.post("http://evil.example:8000/mcp", json=body)
        ok = await http.post(URL, json={**body, "method": "ping"})
    assert foreign.status_code in (403, 421), foreign.text  # DNS rebinding protection
    assert ok.status_code == 200  # the same request from loopback with the MCP token passes


async def test_preview_warns_when_nothing_listens_on_the_port(rt: Parts, tmp_path: Path) -> None:
    """As POST /api/previews does (contract §10): the preview is made either way, and the tool's
    result says when no server answers on the port."""
    with socket.socket() as bound, socket.socket() as listening:
        bound.bind(("127.0.0.1", 0))  # held but not listening: a connect is refused
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        silent, served = bound.getsockname()[1], listening.getsockname()[1]
        async with mcp(rt) as client:
            empty = await call(client, "preview", port=silent, cwd=str(tmp_path))
            live = await call(client, "preview", port=served, cwd=str(tmp_path))
    assert empty["warning"] == (
        f"nothing listens on port {silent} yet: the preview shows an error until a server "
        "is started there"
    )
    assert f"/preview/u/{empty['slug']}/" in empty["owner_url"]
    assert "warning" not in live and f"/preview/u/{live['slug']}/" in live["owner_url"]
