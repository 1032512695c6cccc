"""One test per finding of the outside probe (issue: security, findings 3, 5, 6, 7, 10), each
against a live daemon, each failing on the code the probe found."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.browser_login import dashboard_url, localhost_client
from harness.daemon import Daemon, migrated_home

# contract §0: the only SVC_* variables a hosted agent may see.
AGENT_SVC_VARS = {
    "SVC_SESSION_ID",
    "SVC_AGENT",
    "SVC_WORKSPACE",
    "SVC_PROFILE_ID",
    "SVC_MCP_URL",
    "SVC_MCP_TOKEN",
    "SVC_BRIDGE_URL",
    "SVC_SUBAGENT_ID",
    "SVC_SUBAGENT_TURN_ID",
    "SVC_AGENT_ROLE",
}


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, Path]]:
    root = tmp_path_factory.mktemp("findings")
    dump = f"env > {root}/env.tmp; mv {root}/env.tmp {root}/env"
    settings = {
        "agents": {"envdump": {"command": ["sh", "-c", dump]}},
        "profiles": {
            "p1": {
                "provider": "openai-chat",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-SECRET-123",
                "headers": {"X-Secret-Header": "hdr-SECRET-456"},
            }
        },
    }
    env = {"DATABASE_URL": ""}  # the daemon's own variables must not reach agents either
    server = Daemon(migrated_home(root / "home", settings), env=env).start()
    yield server, root
    server.stop()


def test_3_profile_header_values_are_redacted_and_kept_when_written_back(svc) -> None:
    daemon, _ = svc
    shown = httpx.get(f"{daemon.url}/api/settings", headers=daemon.owner_headers()).json()
    profile = shown["profiles"]["p1"]
    assert profile["headers"] == {"X-Secret-Header": "[redacted]"}
    assert "SECRET" not in json.dumps(shown)
    written = httpx.put(f"{daemon.url}/api/settings", json=shown, headers=daemon.owner_headers())
    assert written.status_code == 200, written.text
    stored = json.loads((daemon.home / "settings.json").read_text())
    assert stored["profiles"]["p1"]["headers"] == {"X-Secret-Header": "hdr-SECRET-456"}
    assert stored["profiles"]["p1"]["api_key"] == "sk-SECRET-123"


def test_5_hosted_agents_get_only_the_svc_variables_the_spec_lists(svc) -> None:
    daemon, root = svc
    created = httpx.post(
        f"{daemon.url}/api/sessions",
        json={"agent": "envdump", "workspace": str(root)},
        headers=daemon.owner_headers(),
    )
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + 30
    while not (root / "env").exists():
        assert time.monotonic() < deadline, "the agent never wrote its environment"
        time.sleep(0.05)
    names = {line.split("=", 1)[0] for line in (root / "env").read_text().splitlines()}
    svc_names = {n for n in names if n.startswith("SVC_")}
    assert "SVC_HOME" not in svc_names and "DATABASE_URL" not in names
    assert svc_names <= AGENT_SVC_VARS, svc_names - AGENT_SVC_VARS
    assert {"SVC_SESSION_ID", "SVC_MCP_URL", "SVC_MCP_TOKEN"} <= svc_names


def test_6_a_markdown_preview_needs_a_registered_workspace(svc) -> None:
    daemon, _ = svc
    refused = httpx.post(
        f"{daemon.url}/api/previews",
        json={"workspace": "/", "file": str(daemon.home / "auth.json")},
        headers=daemon.owner_headers(),
    )
    assert refused.status_code == 400
    assert "registered workspace" in refused.json()["error"]["message"]


OFF_SITE = ("https://evil.com/", "//evil.com/", "/\\evil.com")


def test_7_admin_login_never_redirects_off_svc(svc) -> None:
    daemon, _ = svc
    with httpx.Client(base_url=daemon.url, headers=daemon.owner_headers()) as client:
        for target in OFF_SITE:
            answer = client.get("/admin/login/", params={"next": target})
            assert answer.status_code in (302, 401)
            assert "evil.com" not in answer.headers.get("location", "")


def test_7_the_token_login_never_redirects_off_svc(svc) -> None:
    daemon, _ = svc
    for target in OFF_SITE:
        with localhost_client() as browser:
            params = {"token": daemon.owner_token, "next": target}
            handover = browser.get(f"{daemon.url}/login", params=params)
            assert handover.status_code == 302
            assert handover.headers["location"].startswith(dashboard_url(daemon))
            landed = browser.get(handover.headers["location"])
            assert landed.status_code == 302 and landed.headers["location"] == "/", target


def raw_status(daemon: Daemon, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
    conn.putrequest("GET", path, skip_accept_encoding=True)  # the path byte for byte
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status


def test_10_a_static_path_that_leaves_the_folder_is_404(svc) -> None:
    daemon, _ = svc
    for path in (
        "/static/../x",
        "/static/%2e%2e/settings.py",
        "/static/svc/../../manage.py",
        "/static/no-such-file.js",
    ):
        assert raw_status(daemon, path) == 404, path


@pytest.mark.parametrize("port", [2375, 2376, 5900, 6443, 9222, 9229, 10250])
def test_10_debugger_and_container_ports_cannot_be_previewed(svc, port: int) -> None:
    daemon, root = svc
    refused = httpx.post(
        f"{daemon.url}/api/previews",
        json={"port": port, "workspace": str(root)},
        headers=daemon.owner_headers(),
    )
    assert refused.status_code == 400 and "deny-list" in refused.json()["error"]["message"]


# contract §2: every header a proxy or tunnel adds. Before, only five of them were refused.
FORWARDING = [
    ("Forwarded", "for=203.0.113.7"),
    ("X-Forwarded-For", "203.0.113.7"),
    ("X-Forwarded-Host", "tunnel.example"),
    ("X-Forwarded-Proto", "https"),
    ("X-Forwarded-Port", "443"),
    ("X-Original-Forwarded-For", "203.0.113.7"),
    ("X-Real-IP", "203.0.113.7"),
    ("True-Client-IP", "203.0.113.7"),
    ("CF-Connecting-IP", "203.0.113.7"),
    ("CF-Ray", "8a1b2c3d4e5f-AMS"),
    ("Fastly-Client-IP", "203.0.113.7"),
    ("Via", "1.1 tunnel"),
    ("Tailscale-Funnel-Request", "?1"),
    ("Ngrok-Trace-Id", "abc123"),
]


@pytest.mark.parametrize(("name", "value"), FORWARDING, ids=[h for h, _ in FORWARDING])
def test_9_the_bridge_refuses_every_relayed_request(svc, name: str, value: str) -> None:
    daemon, _ = svc
    url = f"{daemon.url}/svc/local-api/p1/t/openai-chat/v1/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = httpx.post(url, json=body, headers={name: value})
    assert refused.status_code == 403, refused.text
    assert "relayed" in refused.json()["error"]["message"]  # OpenAI's own error shape
