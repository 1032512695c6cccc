"""Deeply nested JSON on every JSON surface of a live svc (issue 41, finding 4 and its low): the
official SDKs whose request bytes are swapped for `[[[[…]]]]` on the wire, httpx, and a raw
WebSocket client. Before, each was a 500 with a traceback (the bridge, /api/), or closed the
socket (/ws/chat, /ws); now it is a 400 in the caller's dialect or an error event on a socket that
stays open, and what follows is served as usual."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from harness.daemon import Daemon
from harness.fakes.bridge_setup import ALIAS, base_url, start_bridge
from harness.termclient import Chat, Term, create_session, shell_env, stop_session

DEPTH = 100_000
DEEP = b"[" * DEPTH + b"]" * DEPTH
KEY = "client-key-never-forwarded"


class NestedOnTheWire(httpx.HTTPTransport):
    """What the SDK built, sent with the body of an attacker: every header but the length kept."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        return super().handle_request(
            httpx.Request(request.method, request.url, headers=headers, content=DEEP)
        )


class NestedOnTheWire2(httpx2.HTTPTransport):
    """The same for the Anthropic SDK, which is built on httpx2."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        return super().handle_request(
            httpx2.Request(request.method, request.url, headers=headers, content=DEEP)
        )


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("untrusted-json")
    daemon, fake = start_bridge(tmp / "home", **shell_env(tmp))
    yield daemon
    daemon.stop()
    fake.stop()


@pytest.fixture(scope="module")
def workspace(svc: Daemon, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("work")
    made = httpx.post(
        f"{svc.url}/api/workspaces", json={"path": str(folder)}, headers=svc.owner_headers()
    )
    assert made.status_code in (200, 201), made.text
    return folder


def nested(client: str, profile: str, svc: Daemon) -> dict:
    return {
        "base_url": base_url(svc, client, profile),
        "http_client": httpx.Client(transport=NestedOnTheWire(), timeout=30),
    }


# --- the bridge: 400 in each dialect, as its SDK reads it ----------------------------------------


@pytest.mark.parametrize("client", ["openai-chat", "openai-responses"])
def test_openai_sdks_get_an_openai_400(svc: Daemon, client: str) -> None:
    sdk = openai.OpenAI(api_key=KEY, max_retries=0, **nested(client, "chat", svc))
    with pytest.raises(openai.BadRequestError) as refused:
        if client == "openai-chat":
            sdk.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "hi"}])
        else:
            sdk.responses.create(model=ALIAS, input="hi")
    assert refused.value.status_code == 400
    assert refused.value.type == "invalid_request_error"
    assert "deeper than 200 levels" in refused.value.message


def test_the_anthropic_sdk_gets_an_anthropic_400(svc: Daemon) -> None:
    sdk = anthropic.Anthropic(
        api_key=KEY,
        max_retries=0,
        base_url=base_url(svc, "anthropic", "claude"),
        http_client=httpx2.Client(transport=NestedOnTheWire2(), timeout=30),
    )
    with pytest.raises(anthropic.BadRequestError) as refused:
        sdk.messages.create(
            model=ALIAS, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.status_code == 400
    body = refused.value.body
    assert isinstance(body, dict) and body["type"] == "error", body
    assert body["error"]["type"] == "invalid_request_error"
    assert "deeper than 200 levels" in body["error"]["message"]


def test_the_gemini_sdk_gets_a_gemini_400(svc: Daemon) -> None:
    wire = nested("gemini", "gemini", svc)
    sdk = genai.Client(
        api_key=KEY,
        http_options=types.HttpOptions(base_url=wire["base_url"], httpx_client=wire["http_client"]),
    )
    with pytest.raises(genai_errors.ClientError) as refused:
        sdk.models.generate_content(model=ALIAS, contents="hi")
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert "deeper than 200 levels" in str(refused.value.message)


def test_nested_tool_arguments_in_the_history_are_carried_as_text(svc: Daemon) -> None:
    """OpenAI's tool-call arguments are a JSON string the bridge parses when it translates (here
    for an Anthropic provider): a nested one is kept as text, and the turn is answered."""
    sdk = openai.OpenAI(base_url=base_url(svc, "openai-chat", "claude"), api_key=KEY, max_retries=0)
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": DEEP.decode()}}
    answer = sdk.chat.completions.create(
        model=ALIAS,
        messages=[
            {"role": "user", "content": "call f"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
    )
    assert answer.choices[0].message.content


# --- /api/ and /mcp -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/sessions"),
        ("POST", "/api/workspaces"),
        ("PATCH", "/api/settings"),
        ("POST", "/api/handover/pickup"),
        ("POST", "/api/previews"),
    ],
)
def test_api_routes_answer_400_in_their_own_shape(svc: Daemon, method: str, path: str) -> None:
    headers = {**svc.owner_headers(), "Content-Type": "application/json"}
    refused = httpx.request(method, f"{svc.url}{path}", content=DEEP, headers=headers)
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "parse_error" and "deeper than 200 levels" in error["message"]


def test_mcp_answers_a_json_rpc_parse_error(svc: Daemon) -> None:
    refused = httpx.post(
        f"{svc.url}/mcp",
        content=DEEP,
        headers={
            "Authorization": f"Bearer {svc.mcp_token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == -32700  # JSON-RPC's parse error


# --- WebSockets: an error event, the socket stays open ----------------------------------------


async def test_chat_socket_answers_nested_json_with_an_error_and_stays_open(svc: Daemon) -> None:
    chat = await Chat.connect(svc)
    try:
        huge = "[" * 450_000 + "]" * 450_000  # 900 KB: under the server's 1 MiB frame limit
        for frame in (DEEP.decode(), '{"type":' * 50_000 + "1" + "}" * 50_000, huge):
            await chat.ws.send(frame)
            said = await chat.next("error")
            assert "deeper than 200 levels" in said["message"], said
        await chat.send(type="no-such-type")  # the same socket still reads and answers
        said = await chat.next("error")
        assert "type must be" in said["message"], said
    finally:
        await chat.close()


async def test_terminal_socket_types_nested_json_and_stays_open(
    svc: Daemon, workspace: Path
) -> None:
    """A text frame that is not a resize is typed (contract §7): nested past any limit, too."""
    sid = create_session(svc, workspace)["id"]
    term = await Term.open(svc, sid)
    try:
        frame = '{"a":' * 5_000 + "1" + "}" * 5_000
        # Read whole by `head` on a raw tty, not by bash's line editor (which redraws a 30 KB line
        # key by key) nor a line-buffered tty (which keeps 4 KB of a line).
        raw, read = "stty raw -echo; echo $((2+3))-raw", f"head -c {len(frame)} >/dev/null"
        await term.run(f"{raw}; {read}; stty sane; echo $((1+1))-read")
        await term.expect(b"5-raw")
        await term.ws.send(frame)
        await term.expect(b"2-read")
        await term.run("echo still-$((6*7))")
        await term.expect(b"still-42", timeout=20)
        await term.ws.send(json.dumps({"type": "resize", "cols": 99, "rows": 29}))
        await term.run("stty size")
        await term.expect(b"29 99")
    finally:
        await term.close()
    stop_session(svc, sid)
    assert "RecursionError" not in svc.log()
