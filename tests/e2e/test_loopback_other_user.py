"""The token-less loopback routes serve the user svc runs as (issue 41, finding 8; contract §2,
docs/security.md attacker 5): another unix user's process on the same machine — stdlib
http.client as uid 54321 against svc's loopback port — gets 403 in its own dialect on every
/svc/… route (the model bridge, the legacy bridge, the agent-as-API, with and without a body),
refused on the headers before any body is read; no upstream request reaches the provider, no
agent turn starts and no file is written. The owner's own process (this test) still gets its
answers through the official SDKs. Over IPv4 and IPv6 loopback alike."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from harness.daemon import ROOT, Daemon, migrated_home
from harness.fakes.bridge_setup import ALIAS, bridge_settings
from harness.fakes.fake_provider import FakeProvider
from harness.other_user import OTHER_UID, require_root, run_as_other

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")
CHAT = [{"role": "user", "content": "hello from another user"}]


@pytest.fixture(scope="module", params=["127.0.0.1", "::1"], ids=["ipv4", "ipv6"])
def svc(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Daemon, FakeProvider, Path]]:
    require_root()
    root = tmp_path_factory.mktemp("loopback-users")
    work = root / "work"
    work.mkdir()
    fake = FakeProvider().start()
    settings = {
        **bridge_settings(fake),
        "workspaces": [str(work.resolve())],
        "agents": {"fake": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True}},
        "local_agent_api": {"enabled": True, "agents": ["fake"]},
    }
    server = Daemon(migrated_home(root / "home", settings), host=request.param).start()
    yield server, fake, work
    server.stop()
    fake.stop()


def attacks(target: Path) -> list[tuple[str, str, dict | None, dict[str, str]]]:
    """(method, path, JSON body, headers): every family of /svc/ route, each dialect."""
    write = [{"role": "user", "content": f"write {target}"}]
    agent = {"model": "fake", "max_tokens": 50, "messages": write}
    return [
        ("POST", "/svc/local-api/chat/t/openai-chat/v1/chat/completions",
         {"model": ALIAS, "messages": CHAT}, {}),
        ("POST", "/svc/local-api/responses/t/openai-responses/v1/responses",
         {"model": ALIAS, "input": "hello"}, {}),
        ("POST", "/svc/local-api/claude/t/anthropic/v1/messages",
         {"model": ALIAS, "max_tokens": 50, "messages": CHAT}, {}),
        ("POST", f"/svc/local-api/gemini/t/gemini/v1beta/models/{ALIAS}:generateContent",
         {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}, {}),
        ("GET", "/svc/local-api/chat/t/openai-chat/v1/models", None, {}),
        ("POST", "/svc/bridge/chat/openai-chat/v1/chat/completions",
         {"model": ALIAS, "messages": CHAT}, {}),
        ("POST", "/svc/local-agent/fake/chat/v1/messages", agent,
         {"X-Svc-Permission-Mode": "allow"}),
        ("POST", "/svc/local-agent/fake/chat/v1/chat/completions",
         {"model": "fake", "messages": write},
         {"X-Svc-Permission-Mode": "allow"}),
        ("GET", "/svc/local-agent/fake/chat/v1/models", None, {}),
    ]  # fmt: skip


ATTACKER = """
import http.client, json, socket
HOST, PORT, REQUESTS = {host!r}, {port}, {requests!r}
out = []
for method, path, body, headers in REQUESTS:
    conn = http.client.HTTPConnection(HOST, PORT, timeout=30)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={{"Content-Type": "application/json", **headers}})
    answer = conn.getresponse()
    out.append([answer.status, answer.read().decode("utf-8", "replace")])
    conn.close()
# Headers announcing a 50 MB body that never comes: an answer arrives only if svc decided on them.
with socket.create_connection((HOST, PORT), timeout=10) as raw:
    raw.sendall(("POST /svc/local-api/chat/t/openai-chat/v1/chat/completions HTTP/1.1\\r\\n"
                 "Host: localhost\\r\\nContent-Type: application/json\\r\\n"
                 "Content-Length: 50000000\\r\\n\\r\\n").encode())
    got = b""
    try:
        while chunk := raw.recv(65536):
            got += chunk
    except socket.timeout:
        pass
out.append([got.split(b"\\r\\n", 1)[0].decode(), got.split(b"\\r\\n\\r\\n", 1)[-1].decode()])
print(json.dumps(out))
"""


def api_sessions(daemon: Daemon) -> list[dict]:
    listed = httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json()
    return [s for s in listed if s["kind"] == "api"]


def test_another_user_gets_403_in_its_dialect_on_every_svc_route(svc) -> None:
    daemon, fake, work = svc
    target = work / "written-by-another-user.txt"
    requests_before, sessions_before = len(fake.requests), len(api_sessions(daemon))
    program = ATTACKER.format(host=daemon.host, port=daemon.port, requests=attacks(target))
    ran = run_as_other(program, timeout=120)
    assert ran.returncode == 0, ran.stderr
    answers = json.loads(ran.stdout)
    *routed, (head_line, head_body) = answers
    assert [status for status, _ in routed] == [403] * len(routed), answers
    bodies = [json.loads(body) for _, body in routed]
    for body in bodies:
        assert f"uid {OTHER_UID}" in json.dumps(body), body
    openai_shaped = [bodies[i] for i in (0, 1, 4, 5, 7, 8)]
    for body in openai_shaped:
        assert body["error"]["type"] == "permission_error" and "param" in body["error"], body
    for body in (bodies[2], bodies[6]):  # Anthropic's shape (the agent-as-API's /v1/messages)
        assert body["type"] == "error" and body["error"]["type"] == "permission_error", body
    assert bodies[3]["error"]["status"] == "PERMISSION_DENIED" and bodies[3]["error"]["code"] == 403
    assert head_line.startswith("HTTP/1.1 403"), head_line  # refused on the headers
    assert json.loads(head_body)["error"]["type"] == "permission_error"
    assert not target.exists()  # the owner's agent wrote nothing for them
    assert len(fake.requests) == requests_before  # no upstream request on the owner's keys
    assert len(api_sessions(daemon)) == sessions_before  # no agent turn started


def test_the_owners_own_process_still_gets_answers(svc) -> None:
    daemon, _, work = svc
    bridge = openai.OpenAI(
        base_url=f"{daemon.url}/svc/local-api/chat/t/openai-chat/v1", api_key="unused",
        max_retries=0,
    )  # fmt: skip
    answer = bridge.chat.completions.create(model=ALIAS, messages=CHAT)
    assert answer.choices[0].message.content
    assert [m.id for m in bridge.models.list()]
    target = work / "written-for-the-owner.txt"
    agent = anthropic.Anthropic(
        base_url=f"{daemon.url}/svc/local-agent/fake/chat", api_key="unused", max_retries=0,
        default_headers={"X-Svc-Permission-Mode": "allow"},
    )  # fmt: skip
    allowed = agent.messages.create(
        model="fake", max_tokens=50, messages=[{"role": "user", "content": f"write {target}"}]
    )
    assert "write: allow" in "".join(b.text for b in allowed.content if b.type == "text")
    assert target.exists()
