"""svc learns the port it is bound to (contract §0): `runserver 127.0.0.1:<port>` with no SVC_PORT
makes auth.json, the login URL, the agents' environment, MCP and preview URLs and the own-port
refusal all use that port."""

from __future__ import annotations

import http.server
import json
import re
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.daemon import Daemon, migrated_home

PROBE = textwrap.dedent(
    """
    # A hosted "agent": records its svc variables, then asks svc over MCP who it is.
    import asyncio, json, os, sys
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> None:
        headers = {"Authorization": "Bearer " + os.environ["SVC_MCP_TOKEN"],
                   "X-Svc-Session-Id": os.environ["SVC_SESSION_ID"]}
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        async with Client(streamable_http_client(os.environ["SVC_MCP_URL"], http_client=http)) as c:
            result = await c.call_tool("get_session_id", {})
        env = {k: v for k, v in os.environ.items() if k.startswith("SVC_")}
        out = {"env": env, "mcp": result.structured_content}
        with open(sys.argv[1] + ".tmp", "w") as f:
            json.dump(out, f)
        os.replace(sys.argv[1] + ".tmp", sys.argv[1])

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Path]]:
    root = tmp_path_factory.mktemp("port")
    (root / "probe.py").write_text(PROBE)
    settings = {
        "agents": {
            "probe": {"command": [sys.executable, str(root / "probe.py"), str(root / "out")]}
        },
        "profiles": {"p1": {"provider": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}},
    }
    server = Daemon(migrated_home(root / "home", settings), env={"SVC_PRINT_LOGIN": "1"})
    server.start()
    yield server, root
    server.stop()


def test_auth_json_and_the_printed_login_url_name_the_bound_port(svc) -> None:
    daemon, _ = svc
    assert daemon.auth()["port"] == daemon.port
    deadline = time.monotonic() + 20
    while not (found := re.search(r"http://127\.0\.0\.1:(\d+)/login\?token=", daemon.log())):
        assert time.monotonic() < deadline, f"no login URL printed:\n{daemon.log()[-2000:]}"
        time.sleep(0.1)
    assert int(found.group(1)) == daemon.port


def test_a_hosted_agent_gets_the_port_and_reaches_svc_over_mcp(svc) -> None:
    daemon, root = svc
    workspace = root / "work"
    workspace.mkdir(exist_ok=True)
    created = httpx.post(
        f"{daemon.url}/api/sessions",
        json={"agent": "probe", "workspace": str(workspace), "profile_id": "p1"},
        headers=daemon.owner_headers(),
        timeout=30,
    )
    assert created.status_code == 201, created.text
    session_id = created.json()["id"]
    out = root / "out"
    deadline = time.monotonic() + 60
    while not out.exists():
        assert time.monotonic() < deadline, f"the probe never wrote its answer:\n{daemon.log()}"
        time.sleep(0.1)
    report = json.loads(out.read_text())
    env = report["env"]
    assert env["SVC_MCP_URL"] == f"http://127.0.0.1:{daemon.port}/mcp"
    # The scope names the agent and the session (contract §0), so its bridge requests are
    # counted to it (§16).
    bridge = f"http://127.0.0.1:{daemon.port}/svc/local-api/p1/probe.{session_id}"
    assert env["SVC_BRIDGE_URL"] == bridge
    assert report["mcp"]["session_id"] == session_id


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<h1>hello from the dev server</h1>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_preview_urls_use_the_bound_port_and_are_fetched_end_to_end(svc) -> None:
    daemon, root = svc
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        created = httpx.post(
            f"{daemon.url}/api/previews",
            json={"port": server.server_address[1], "workspace": str(root)},
            headers=daemon.owner_headers(),
            timeout=30,
        )
        assert created.status_code == 201, created.text
        links = created.json()
        assert links["share_url"].startswith(f"http://127.0.0.1:{daemon.port}/"), links
        dashboard = f"http://{daemon.auth()['browser_host']}:{daemon.port}/"
        assert links["owner_url"].startswith(dashboard), links
        shared = httpx.get(links["share_url"], timeout=30)
        assert shared.status_code == 200 and b"hello from the dev server" in shared.content
    finally:
        server.shutdown()


def test_a_preview_of_svcs_own_port_is_refused(svc) -> None:
    daemon, root = svc
    refused = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": daemon.port, "workspace": str(root)},
        headers=daemon.owner_headers(),
        timeout=30,
    )
    assert refused.status_code == 400
    assert "svc's own port" in refused.json()["error"]["message"]
