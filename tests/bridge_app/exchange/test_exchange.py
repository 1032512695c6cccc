"""The bridge service in-process (bridge_app/exchange.py): one exchange with a real HTTP provider —
the fake provider on a loopback port — without a daemon. A `Route` and an `Incoming` in, a
`Reply` out: translated or relayed answers and streams, 429 retries honouring Retry-After,
upstream failures in the client's dialect, an unreachable or silent provider, a client that
leaves. Model lists, token counts and remembered Responses turns: test_exchange_local.py."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import pytest

from bridge_app import exchange, ir, upstream
from harness.fakes.bridge_fake_plan import PNG
from harness.fakes.fake_provider import FakeProvider
from tests.bridge_app.exchange.harness import (
    ALIAS,
    body_for,
    call,
    closed,
    closed_port,
    frames,
    generate,
    read,
    recorded,
    route,
    sent,
    whole,
)

# --- whole answers -----------------------------------------------------------------------------


async def test_a_translated_answer_names_the_clients_model_and_uses_the_profiles_key(
    fake: FakeProvider,
    bridge_parts: exchange.Parts,
) -> None:
    log: dict[str, Any] = {}
    reply = await generate(
        bridge_parts, route("openai-chat", "claude"), body_for("openai-chat", "xl-1"), log
    )
    assert reply.status == 200
    answer = whole(reply)
    assert answer["object"] == "chat.completion" and answer["model"] == ALIAS
    assert "said=[xl-1]" in answer["choices"][0]["message"]["content"]
    assert reply.headers == {"x-request-id": "req_fake"}  # the provider's id comes back
    assert log == {
        "provider": "anthropic",
        "model": ALIAS,
        "stream": False,
        "upstream_model": "fake-model",
        "input_tokens": log["input_tokens"],
        "output_tokens": log["output_tokens"],
        "cached_input_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert log["input_tokens"] > 0 and log["output_tokens"] > 0  # usage (§16)
    rec = fake.last("xl-1")
    assert rec.path == "/v1/messages" and rec.body["model"] == "fake-model"
    assert rec.headers["x-api-key"] == "profile-key-anthropic"
    assert "authorization" not in rec.headers


async def test_same_dialect_and_model_relays_the_providers_bytes(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    reply = await generate(
        bridge_parts,
        route("openai-chat"),
        {**body_for("openai-chat", "xl-2"), "model": "fake-model"},
    )
    assert isinstance(reply.body, bytes)
    answer = json.loads(reply.body)
    # The fake's own id and timestamp: not re-encoded (svc would mint an id and the time).
    assert (answer["id"], answer["created"], answer["model"]) == ("chatcmpl-fake", 1, "fake-model")
    assert fake.last("xl-2").headers["authorization"] == "Bearer profile-key-openai-chat"


async def test_same_dialect_with_an_alias_rewrites_only_the_model(
    bridge_parts: exchange.Parts,
) -> None:
    answer = whole(await call(bridge_parts, "anthropic", "xl-3"))
    assert answer["id"] == "msg_fake" and answer["model"] == ALIAS
    assert "said=[xl-3]" in answer["content"][0]["text"]


async def test_dropped_images_are_said_in_a_header(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    content = [
        {"type": "text", "text": "xl-4"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    body = {"model": ALIAS, "messages": [{"role": "user", "content": content}]}
    reply = await generate(bridge_parts, route("openai-chat", "noimg"), body)
    assert "images=0" in whole(reply)["choices"][0]["message"]["content"]
    assert reply.headers["x-svc-warning"] == "images dropped: the model does not take image input"


async def test_gemini_gets_images_on_the_web_inline(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    gone = f"http://127.0.0.1:{closed_port()}/missing.png"
    content = [
        {"type": "text", "text": "xl-5"},
        {"type": "image_url", "image_url": {"url": f"{fake.url}/cat.png"}},
        {"type": "image_url", "image_url": {"url": gone}},
    ]
    reply = await generate(
        bridge_parts,
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


async def test_a_stream_is_translated_into_the_clients_events(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    reply = await call(bridge_parts, "anthropic", "xs-1", "gemini", stream=True)
    assert (reply.status, reply.content_type) == (200, "text/event-stream")
    events = frames(await read(reply))
    assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
    text = "".join(d["delta"].get("text", "") for e, d in events if e == "content_block_delta")
    assert "said=[xs-1]" in text
    assert fake.last("xs-1").path.endswith("/models/fake-model:streamGenerateContent")
    assert fake.last("xs-1").query == "alt=sse"


async def test_a_relayed_stream_names_the_clients_model_and_ends_once(
    bridge_parts: exchange.Parts,
) -> None:
    raw = await read(await call(bridge_parts, "openai-chat", "xs-2", stream=True))
    chunks = [d for _, d in frames(raw)]
    assert {c["model"] for c in chunks} == {ALIAS}
    assert raw.endswith(b"data: [DONE]\n\n") and raw.count(b"[DONE]") == 1


async def test_a_gemini_stream_without_alt_sse_is_one_json_array(
    bridge_parts: exchange.Parts,
) -> None:
    reply = await call(bridge_parts, "gemini", "xs-3", "chat", stream=True, sse=False)
    assert reply.content_type == "application/json"
    array = json.loads(await read(reply))
    text = "".join(p.get("text", "") for f in array for p in f["candidates"][0]["content"]["parts"])
    assert "said=[xs-3]" in text


async def test_a_json_answer_to_a_stream_request_is_replayed_as_events(
    bridge_parts: exchange.Parts,
) -> None:
    raw = await read(
        await call(bridge_parts, "openai-chat", "xs-4 [jsonstream]", "claude", stream=True)
    )
    chunks = [d for _, d in frames(raw)]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert "said=[xs-4 [jsonstream]]" in text and raw.endswith(b"data: [DONE]\n\n")


async def test_a_json_answer_to_a_stream_request_is_replayed_as_events_in_passthrough(
    bridge_parts: exchange.Parts,
) -> None:
    raw = await read(
        await call(bridge_parts, "openai-chat", "xs-9 [jsonstream]", "chat", stream=True)
    )
    chunks = [d for _, d in frames(raw)]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert "said=[xs-9 [jsonstream]]" in text and raw.endswith(b"data: [DONE]\n\n")
    assert {c["model"] for c in chunks} == {ALIAS}


async def test_an_upstream_error_event_ends_the_stream_in_the_clients_dialect(
    bridge_parts: exchange.Parts,
) -> None:
    raw = await read(
        await call(bridge_parts, "openai-chat", "xs-5 [midfail]", "gemini", stream=True)
    )
    last = frames(raw)[-1][1]
    assert last["error"]["message"] == "fake failure mid-stream" and b"[DONE]" not in raw


async def test_a_provider_that_drops_the_connection_ends_with_an_error_event(
    bridge_parts: exchange.Parts,
) -> None:
    raw = await read(await call(bridge_parts, "anthropic", "xs-6 [midabort]", "chat", stream=True))
    last = frames(raw)[-1]
    assert last[0] == "error" and last[1]["error"]["type"] == "api_error"
    assert "the provider is unreachable" in last[1]["error"]["message"]


async def test_a_stream_without_events_is_the_dialects_error(bridge_parts: exchange.Parts) -> None:
    raw = await read(
        await call(bridge_parts, "openai-responses", "xs-7 [emptystream]", "claude", stream=True)
    )
    assert [d["type"] for _, d in frames(raw)] == ["error", "response.failed"]
    assert "without sending any event" in frames(raw)[0][1]["message"]


# --- retries and failures ----------------------------------------------------------------------


async def test_a_429_is_retried_after_its_retry_after(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    started = time.monotonic()
    reply = await call(bridge_parts, "openai-chat", "xr-1 [429:xr-1]", "claude")
    assert reply.status == 200 and "said=[xr-1" in whole(reply)["choices"][0]["message"]["content"]
    assert time.monotonic() - started >= 0.9  # the fake said Retry-After: 1
    assert len(sent(fake, "xr-1")) == 2


async def test_429_retries_are_bounded_then_the_429_goes_to_the_client(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, bridge_parts: exchange.Parts
) -> None:
    asked: list[float] = []
    real = upstream.retry_delay

    def quick(headers: dict[str, str], attempt: int) -> float:
        asked.append(real(headers, attempt))
        return 0.01

    monkeypatch.setattr(upstream, "retry_delay", quick)
    reply = await call(bridge_parts, "anthropic", "xr-2 [status:429]", "gemini")
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
    client: str, profile: str, status: int, error: dict[str, Any], bridge_parts: exchange.Parts
) -> None:
    for stream in (False, True):  # a stream request fails before its 200 the same way
        reply = await call(
            bridge_parts, client, f"xe-{stream} [status:{status}]", profile, stream=stream
        )
        assert (reply.status, reply.chunks) == (status, None)
        assert whole(reply) == error


async def test_an_unreachable_provider_is_502(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    with pytest.raises(ir.BridgeError) as err:
        await call(bridge_parts, "anthropic", "xe-down", "down")
    assert err.value.status == 502 and "the provider is unreachable" in err.value.message


async def test_a_silent_provider_is_504_at_the_read_timeout(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch, bridge_parts: exchange.Parts
) -> None:
    monkeypatch.setattr(upstream, "READ_TIMEOUT", 1.0)  # read when the client is made
    started = time.monotonic()
    with pytest.raises(ir.BridgeError) as err:
        await call(bridge_parts, "openai-chat", "xe-hang [hang]", "chat")
    elapsed = time.monotonic() - started
    assert err.value.status == 504 and err.value.message == "the provider did not answer within 1 s"
    assert 0.9 <= elapsed < 4, elapsed
    assert (await closed(fake, "xe-hang")).closed_at is not None


async def test_an_unreadable_answer_is_an_error_not_a_crash_of_the_exchange(
    bridge_parts: exchange.Parts,
) -> None:
    # The view answers svc's own failures with a dialect-shaped 500 (test_bridge_errors_inprocess).
    with pytest.raises(Exception) as err:
        await call(bridge_parts, "anthropic", "xe-garbage [garbage]", "chat")
    assert not isinstance(err.value, ir.BridgeError)


# --- a client that leaves ----------------------------------------------------------------------


async def test_closing_a_stream_closes_the_provider_connection_at_once(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    marker = "xc-1 [slow]"
    reply = await call(bridge_parts, "openai-responses", marker, "gemini", stream=True)
    assert reply.chunks is not None
    async for chunk in reply.chunks:
        if b'"delta":"."' in chunk:  # a translated delta while the provider still streams
            break
    assert not fake.last(marker).finished
    left = time.monotonic()
    await reply.chunks.aclose()
    rec = await closed(fake, marker)
    assert rec.closed_at is not None and rec.closed_at - left < 1.0 and not rec.finished


async def test_cancelling_a_whole_answer_closes_the_provider_connection(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    marker = "xc-2 [hang]"
    task = asyncio.ensure_future(call(bridge_parts, "anthropic", marker, "claude"))
    await recorded(fake, marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    left = time.monotonic()
    rec = await closed(fake, marker)
    assert rec.closed_at is not None and rec.closed_at - left < 1.0
