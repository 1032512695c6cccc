"""The bridge service in-process (bridge_app/exchange.py): one exchange with a real HTTP provider —
the fake provider on a loopback port — without a daemon. A `Route` and an `Incoming` in, a
`Reply` out: translated or relayed answers and streams, 429 retries honouring Retry-After,
upstream failures in the client's dialect, an unreachable or silent provider, a client that
leaves, model lists, token counts, and the Responses turns svc remembers."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from bridge_app import exchange, ir, routes, upstream
from bridge_app.streams import SSEParser
from svcproject import config
from tests.fakes.bridge_fake_plan import PNG
from tests.fakes.fake_provider import FakeProvider, Recorded

ALIAS = "client-model"  # what clients ask for; the profiles map it to the fake's "fake-model"
PROFILE = {
    "openai-chat": "chat",
    "openai-responses": "responses",
    "anthropic": "claude",
    "gemini": "gemini",
}


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def profiles_for(fake: FakeProvider) -> dict[str, Any]:
    profiles = {
        name: {
            "provider": dialect,
            "base_url": fake.base_url(dialect),
            "api_key": f"profile-key-{dialect}",
            "models": ["fake-model"],
            "model_aliases": {ALIAS: "fake-model"},
        }
        for dialect, name in PROFILE.items()
    }
    down = f"http://127.0.0.1:{closed_port()}"
    profiles["noimg"] = {**profiles["chat"], "capabilities": {"image_input": False}}
    profiles["down"] = {**profiles["chat"], "base_url": f"{down}/v1"}
    profiles["claude-down"] = {**profiles["claude"], "base_url": down}
    return profiles


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def bridge_profiles(fake: FakeProvider) -> Iterator[FakeProvider]:
    """This worker's settings.json names the fake's profiles for the test; what was there before
    comes back after."""
    path = config.settings_path()
    before = path.read_text() if path.exists() else ""
    config.write_settings({"profiles": profiles_for(fake)})
    yield fake
    config.write_settings(json.loads(before) if before.strip() else {})


@pytest.fixture(autouse=True)
async def upstream_client(svc_runtime: Any) -> AsyncIterator[None]:
    """The runtime's provider client is made on first use in this test's loop: close it there."""
    yield
    await svc_runtime.upstream.aclose()


def route(
    client: str,
    profile: str | None = None,
    *,
    stream: bool = False,
    sse: bool = True,
    tail: str = "",
) -> routes.Route:
    profile = profile or PROFILE[client]
    base = f"/svc/local-api/{profile}/tests/{client}"
    query = b""
    if not tail:
        tail = {
            "openai-chat": "v1/chat/completions",
            "openai-responses": "v1/responses",
            "anthropic": "v1/messages",
        }.get(client, "")
    if client == "gemini" and not tail:
        method = "streamGenerateContent" if stream else "generateContent"
        tail, query = f"v1beta/models/{ALIAS}:{method}", b"alt=sse" if sse else b""
    parsed = routes.parse(f"{base}/{tail}", query)
    assert parsed is not None
    return parsed


def body_for(client: str, text: str, stream: bool = False, **extra: Any) -> dict[str, Any]:
    """A minimal request in the client's dialect (Gemini's stream flag is its URL)."""
    if client == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": text}]}], **extra}
    flag = {"stream": True} if stream else {}
    if client == "openai-responses":
        return {"model": ALIAS, "input": text, **flag, **extra}
    body = {"model": ALIAS, "messages": [{"role": "user", "content": text}], **flag, **extra}
    return {"max_tokens": 50, **body} if client == "anthropic" else body


async def generate(
    r: routes.Route, body: dict[str, Any], log: dict[str, Any] | None = None
) -> exchange.Reply:
    return await exchange.generate(r, exchange.Incoming(body, json.dumps(body)), log)


async def call(
    client: str,
    text: str,
    profile: str | None = None,
    *,
    stream: bool = False,
    sse: bool = True,
    **extra: Any,
) -> exchange.Reply:
    r = route(client, profile, stream=stream, sse=sse)
    return await generate(r, body_for(client, text, stream, **extra))


async def read(reply: exchange.Reply) -> bytes:
    assert reply.chunks is not None, "not a stream"
    return b"".join([chunk async for chunk in reply.chunks])


def whole(reply: exchange.Reply) -> Any:
    assert reply.chunks is None, "a stream"
    return json.loads(reply.body) if isinstance(reply.body, bytes) else reply.body


def frames(raw: bytes) -> list[tuple[str, Any]]:
    return [(e, json.loads(d)) for e, d in SSEParser().feed(raw) if d != "[DONE]"]


def sent(fake: FakeProvider, marker: str) -> list[Recorded]:
    return [rec for rec in fake.requests if marker in json.dumps(rec.body)]


async def closed(fake: FakeProvider, marker: str, timeout: float = 5.0) -> Recorded:
    """The provider's record of the request once the connection to it ended (or the deadline)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rec = fake.last(marker)
        if rec.closed_at is not None or rec.finished:
            return rec
        await asyncio.sleep(0.01)
    return fake.last(marker)


async def recorded(fake: FakeProvider, marker: str, timeout: float = 5.0) -> Recorded:
    deadline = time.monotonic() + timeout
    while not sent(fake, marker):
        assert time.monotonic() < deadline, f"the provider never got {marker!r}"
        await asyncio.sleep(0.01)
    return fake.last(marker)


# --- whole answers -----------------------------------------------------------------------------


async def test_a_translated_answer_names_the_clients_model_and_uses_the_profiles_key(
    fake: FakeProvider,
) -> None:
    log: dict[str, Any] = {}
    reply = await generate(route("openai-chat", "claude"), body_for("openai-chat", "xl-1"), log)
    assert reply.status == 200
    answer = whole(reply)
    assert answer["object"] == "chat.completion" and answer["model"] == ALIAS
    assert "said=[xl-1]" in answer["choices"][0]["message"]["content"]
    assert reply.headers == {"x-request-id": "req_fake"}  # the provider's id comes back
    assert log == {
        "provider": "anthropic", "model": ALIAS, "stream": False, "upstream_model": "fake-model",
        "input_tokens": log["input_tokens"], "output_tokens": log["output_tokens"],
        "cached_input_tokens": 0, "reasoning_tokens": 0,
    }  # fmt: skip
    assert log["input_tokens"] > 0 and log["output_tokens"] > 0  # usage (§16)
    rec = fake.last("xl-1")
    assert rec.path == "/v1/messages" and rec.body["model"] == "fake-model"
    assert rec.headers["x-api-key"] == "profile-key-anthropic"
    assert "authorization" not in rec.headers


async def test_same_dialect_and_model_relays_the_providers_bytes(fake: FakeProvider) -> None:
    reply = await generate(
        route("openai-chat"), {**body_for("openai-chat", "xl-2"), "model": "fake-model"}
    )
    assert isinstance(reply.body, bytes)
    answer = json.loads(reply.body)
    # The fake's own id and timestamp: not re-encoded (svc would mint an id and the time).
    assert (answer["id"], answer["created"], answer["model"]) == ("chatcmpl-fake", 1, "fake-model")
    assert fake.last("xl-2").headers["authorization"] == "Bearer profile-key-openai-chat"


async def test_same_dialect_with_an_alias_rewrites_only_the_model() -> None:
    answer = whole(await call("anthropic", "xl-3"))
    assert answer["id"] == "msg_fake" and answer["model"] == ALIAS
    assert "said=[xl-3]" in answer["content"][0]["text"]


async def test_dropped_images_are_said_in_a_header(fake: FakeProvider) -> None:
    content = [
        {"type": "text", "text": "xl-4"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    body = {"model": ALIAS, "messages": [{"role": "user", "content": content}]}
    reply = await generate(route("openai-chat", "noimg"), body)
    assert "images=0" in whole(reply)["choices"][0]["message"]["content"]
    assert reply.headers["x-svc-warning"] == "images dropped: the model does not take image input"


async def test_gemini_gets_images_on_the_web_inline(fake: FakeProvider) -> None:
    gone = f"http://127.0.0.1:{closed_port()}/missing.png"
    content = [
        {"type": "text", "text": "xl-5"},
        {"type": "image_url", "image_url": {"url": f"{fake.url}/cat.png"}},
        {"type": "image_url", "image_url": {"url": gone}},
    ]
    reply = await generate(
        route("openai-chat", "gemini"),
        {"model": ALIAS, "messages": [{"role": "user", "content": content}]},
    )
    assert reply.status == 200
    parts = fake.last("xl-5").body["contents"][0]["parts"]
    assert parts[1] == {
        "inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}
    }
    assert parts[2] == {"fileData": {"mimeType": "image/png", "fileUri": gone}}
    assert reply.headers["x-svc-warning"].startswith(f"image {gone} sent as a URL: ")


# --- streams -----------------------------------------------------------------------------------


async def test_a_stream_is_translated_into_the_clients_events(fake: FakeProvider) -> None:
    reply = await call("anthropic", "xs-1", "gemini", stream=True)
    assert (reply.status, reply.content_type) == (200, "text/event-stream")
    events = frames(await read(reply))
    assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
    text = "".join(d["delta"].get("text", "") for e, d in events if e == "content_block_delta")
    assert "said=[xs-1]" in text
    assert fake.last("xs-1").path.endswith("/models/fake-model:streamGenerateContent")
    assert fake.last("xs-1").query == "alt=sse"


async def test_a_relayed_stream_names_the_clients_model_and_ends_once() -> None:
    raw = await read(await call("openai-chat", "xs-2", stream=True))
    chunks = [d for _, d in frames(raw)]
    assert {c["model"] for c in chunks} == {ALIAS}
    assert raw.endswith(b"data: [DONE]\n\n") and raw.count(b"[DONE]") == 1


async def test_a_gemini_stream_without_alt_sse_is_one_json_array() -> None:
    reply = await call("gemini", "xs-3", "chat", stream=True, sse=False)
    assert reply.content_type == "application/json"
    array = json.loads(await read(reply))
    text = "".join(p.get("text", "") for f in array for p in f["candidates"][0]["content"]["parts"])
    assert "said=[xs-3]" in text


async def test_a_json_answer_to_a_stream_request_is_replayed_as_events() -> None:
    raw = await read(await call("openai-chat", "xs-4 [jsonstream]", "claude", stream=True))
    chunks = [d for _, d in frames(raw)]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert "said=[xs-4 [jsonstream]]" in text and raw.endswith(b"data: [DONE]\n\n")


async def test_a_json_answer_to_a_stream_request_is_replayed_as_events_in_passthrough() -> None:
    raw = await read(await call("openai-chat", "xs-9 [jsonstream]", "chat", stream=True))
    chunks = [d for _, d in frames(raw)]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert "said=[xs-9 [jsonstream]]" in text and raw.endswith(b"data: [DONE]\n\n")
    assert {c["model"] for c in chunks} == {ALIAS}


async def test_an_upstream_error_event_ends_the_stream_in_the_clients_dialect() -> None:
    raw = await read(await call("openai-chat", "xs-5 [midfail]", "gemini", stream=True))
    last = frames(raw)[-1][1]
    assert last["error"]["message"] == "fake failure mid-stream" and b"[DONE]" not in raw


async def test_a_provider_that_drops_the_connection_ends_with_an_error_event() -> None:
    raw = await read(await call("anthropic", "xs-6 [midabort]", "chat", stream=True))
    last = frames(raw)[-1]
    assert last[0] == "error" and last[1]["error"]["type"] == "api_error"
    assert "the provider is unreachable" in last[1]["error"]["message"]


async def test_a_stream_without_events_is_the_dialects_error() -> None:
    raw = await read(await call("openai-responses", "xs-7 [emptystream]", "claude", stream=True))
    assert [d["type"] for _, d in frames(raw)] == ["error", "response.failed"]
    assert "without sending any event" in frames(raw)[0][1]["message"]


# --- retries and failures ----------------------------------------------------------------------


async def test_a_429_is_retried_after_its_retry_after(fake: FakeProvider) -> None:
    started = time.monotonic()
    reply = await call("openai-chat", "xr-1 [429:xr-1]", "claude")
    assert reply.status == 200 and "said=[xr-1" in whole(reply)["choices"][0]["message"]["content"]
    assert time.monotonic() - started >= 0.9  # the fake said Retry-After: 1
    assert len(sent(fake, "xr-1")) == 2


async def test_429_retries_are_bounded_then_the_429_goes_to_the_client(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[float] = []
    real = upstream.retry_delay

    def quick(headers: dict[str, str], attempt: int) -> float:
        asked.append(real(headers, attempt))
        return 0.01

    monkeypatch.setattr(upstream, "retry_delay", quick)
    reply = await call("anthropic", "xr-2 [status:429]", "gemini")
    assert asked == [1.0, 1.0]  # Retry-After honoured each time
    assert len(sent(fake, "xr-2")) == 1 + upstream.MAX_RETRIES == 3
    assert reply.status == 429 and reply.headers == {"retry-after": "1"}
    assert whole(reply) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "fake 429"},
    }


@pytest.mark.parametrize(
    ("client", "profile", "status", "error"),
    [
        (
            "anthropic",
            "gemini",
            500,
            {"type": "error", "error": {"type": "api_error", "message": "fake 500"}},
        ),
        (
            "openai-chat",
            "claude",
            400,
            {
                "error": {
                    "message": "fake 400",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            "gemini",
            "responses",
            404,
            {"error": {"code": 404, "message": "fake 404", "status": "NOT_FOUND"}},
        ),
        (
            "openai-responses",
            "chat",
            503,
            {"error": {"message": "fake 503", "type": "server_error", "param": None, "code": None}},
        ),
    ],
)
async def test_an_upstream_error_keeps_its_status_with_the_message_in_the_clients_dialect(
    client: str, profile: str, status: int, error: dict[str, Any]
) -> None:
    for stream in (False, True):  # a stream request fails before its 200 the same way
        reply = await call(client, f"xe-{stream} [status:{status}]", profile, stream=stream)
        assert (reply.status, reply.chunks) == (status, None)
        assert whole(reply) == error


async def test_an_unreachable_provider_is_502(fake: FakeProvider) -> None:
    with pytest.raises(ir.BridgeError) as err:
        await call("anthropic", "xe-down", "down")
    assert err.value.status == 502 and "the provider is unreachable" in err.value.message


async def test_a_silent_provider_is_504_at_the_read_timeout(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upstream, "READ_TIMEOUT", 1.0)  # read when the client is made
    started = time.monotonic()
    with pytest.raises(ir.BridgeError) as err:
        await call("openai-chat", "xe-hang [hang]", "chat")
    elapsed = time.monotonic() - started
    assert err.value.status == 504 and err.value.message == "the provider did not answer within 1 s"
    assert 0.9 <= elapsed < 4, elapsed
    assert (await closed(fake, "xe-hang")).closed_at is not None


async def test_an_unreadable_answer_is_an_error_not_a_crash_of_the_exchange() -> None:
    # The view answers svc's own failures with a dialect-shaped 500 (test_bridge_errors_inprocess).
    with pytest.raises(Exception) as err:
        await call("anthropic", "xe-garbage [garbage]", "chat")
    assert not isinstance(err.value, ir.BridgeError)


# --- a client that leaves ----------------------------------------------------------------------


async def test_closing_a_stream_closes_the_provider_connection_at_once(fake: FakeProvider) -> None:
    marker = "xc-1 [slow]"
    reply = await call("openai-responses", marker, "gemini", stream=True)
    assert reply.chunks is not None
    async for chunk in reply.chunks:
        if b'"delta":"."' in chunk:  # a translated delta while the provider still streams
            break
    assert not fake.last(marker).finished
    left = time.monotonic()
    await reply.chunks.aclose()
    rec = await closed(fake, marker)
    assert rec.closed_at is not None and rec.closed_at - left < 1.0 and not rec.finished


async def test_cancelling_a_whole_answer_closes_the_provider_connection(fake: FakeProvider) -> None:
    marker = "xc-2 [hang]"
    task = asyncio.ensure_future(call("anthropic", marker, "claude"))
    await recorded(fake, marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    left = time.monotonic()
    rec = await closed(fake, marker)
    assert rec.closed_at is not None and rec.closed_at - left < 1.0


# --- what needs no model call ------------------------------------------------------------------


def test_model_lists_name_aliases_first_in_the_clients_shape() -> None:
    listed = exchange.models(route("anthropic", tail="v1/models"))
    assert [m["id"] for m in whole(listed)["data"]] == [ALIAS, "fake-model"]
    assert whole(listed)["has_more"] is False
    gemini = whole(exchange.models(route("gemini", "chat", tail="v1beta/models")))
    assert [m["name"] for m in gemini["models"]] == [f"models/{ALIAS}", "models/fake-model"]
    one = whole(exchange.models(route("openai-chat", "claude", tail=f"v1/models/{ALIAS}")))
    assert one == {"id": ALIAS, "object": "model", "created": 0, "owned_by": "svc"}


@pytest.mark.parametrize(
    ("client", "tail"),
    [("openai-chat", "v1/models/gpt-unknown"), ("gemini", "v1beta/models/gpt-unknown")],
)
def test_a_model_the_profile_does_not_serve_is_404(client: str, tail: str) -> None:
    with pytest.raises(ir.BridgeError) as err:
        exchange.models(route(client, tail=tail))
    assert err.value.status == 404 and "gpt-unknown" in err.value.message


def test_models_of_an_unknown_profile_are_404() -> None:
    with pytest.raises(ir.BridgeError) as err:
        exchange.models(route("openai-chat", "nope", tail="v1/models"))
    assert err.value.status == 404


async def test_tokens_are_counted_by_a_provider_of_the_same_dialect(fake: FakeProvider) -> None:
    body = body_for("anthropic", "xt-1")
    reply = await exchange.count_tokens(route("anthropic", tail="v1/messages/count_tokens"), body)
    assert whole(reply) == {"input_tokens": 42}  # the fake's count, not an estimate
    rec = fake.last("xt-1")
    assert rec.path == "/v1/messages/count_tokens" and rec.body["model"] == "fake-model"
    gemini = route("gemini", tail=f"v1beta/models/{ALIAS}:countTokens")
    assert whole(await exchange.count_tokens(gemini, body_for("gemini", "xt-2"))) == {
        "totalTokens": 42
    }
    assert fake.last("xt-2").path.endswith("/models/fake-model:countTokens")


@pytest.mark.parametrize(
    ("client", "profile", "tail"),
    [
        ("openai-responses", "claude", "v1/responses/input_tokens"),  # another dialect: estimated
        ("anthropic", "claude-down", "v1/messages/count_tokens"),  # its endpoint fails: estimated
    ],
)
async def test_tokens_are_estimated_when_the_provider_cannot_count(
    client: str, profile: str, tail: str
) -> None:
    text = "x" * 400
    reply = await exchange.count_tokens(route(client, profile, tail=tail), body_for(client, text))
    count = whole(reply)["input_tokens"]
    assert count == 100  # about four characters a token


# --- Responses turns svc remembers -------------------------------------------------------------


def stored_route(response_id: str) -> routes.Route:
    return route("openai-responses", "claude", tail=f"v1/responses/{response_id}")


async def test_a_translated_responses_turn_is_remembered_recalled_and_deleted(
    fake: FakeProvider,
) -> None:
    first = whole(await call("openai-responses", "xm-1 first", "claude"))
    assert first["id"].startswith("resp_") and first["model"] == ALIAS
    assert whole(exchange.stored_response(stored_route(first["id"]), "GET")) == first
    second = await call(
        "openai-responses", "xm-1 second", "claude", previous_response_id=first["id"]
    )
    assert second.status == 200
    history = fake.last("xm-1 second").body["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[0]["content"][0]["text"] == "xm-1 first"
    gone = exchange.stored_response(stored_route(first["id"]), "DELETE")
    assert whole(gone) == {"id": first["id"], "object": "response.deleted", "deleted": True}
    with pytest.raises(ir.BridgeError) as err:
        exchange.stored_response(stored_route(first["id"]), "GET")
    assert err.value.status == 404


async def test_a_streamed_responses_turn_is_remembered_as_the_client_saw_it() -> None:
    raw = await read(await call("openai-responses", "xm-2", "gemini", stream=True))
    final = frames(raw)[-1][1]
    assert final["type"] == "response.completed"
    stored = whole(exchange.stored_response(stored_route(final["response"]["id"]), "GET"))
    assert stored == final["response"]


async def test_store_false_and_passthrough_turns_are_not_remembered() -> None:
    unstored = whole(await call("openai-responses", "xm-3", "claude", store=False))
    passed = whole(await call("openai-responses", "xm-4", "responses"))
    for response_id in (unstored["id"], passed["id"]):
        with pytest.raises(ir.BridgeError) as err:
            exchange.stored_response(stored_route(response_id), "GET")
        assert err.value.status == 404


async def test_an_unknown_previous_response_is_404_before_any_call(fake: FakeProvider) -> None:
    with pytest.raises(ir.BridgeError) as err:
        await call("openai-responses", "xm-5", "claude", previous_response_id="resp_nope")
    assert err.value.status == 404 and "resp_nope" in err.value.message
    assert not sent(fake, "xm-5")


def test_stored_responses_answer_get_and_delete_only() -> None:
    with pytest.raises(ir.BridgeError) as err:
        exchange.stored_response(stored_route("resp_x"), "POST")
    assert err.value.status == 405
