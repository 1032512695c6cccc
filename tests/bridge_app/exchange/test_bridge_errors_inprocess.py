"""The bridge's refusals and failures through its ASGI app in-process (no daphne): 415/400/404/503
in each client's dialect, upstream 429/502/504/5xx, mid-stream failure, capability dropping and
the request log — the official SDKs (async, over httpx2's ASGITransport) and plain httpx against
`bridge_app.views.application`, with the fake provider as the upstream.

What needs real sockets stays in tests/e2e/test_bridge_errors.py: the loopback gate as svc's
admission layer applies it, limits before the body, flushing and client disconnects."""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import openai
import pytest
from asgiref.sync import sync_to_async
from google.genai import errors as genai_errors

from bridge_app import upstream
from tests.bridge_app.exchange.asgi_client import ORIGIN, base_url, sdk
from tests.bridge_app.exchange.harness import ALIAS

pytestmark = pytest.mark.usefixtures("request_rows")  # the request log in memory (conftest)


def chat_url(profile: str = "chat") -> str:
    return base_url("openai-chat", profile) + "/chat/completions"


def chat_body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": ALIAS, "messages": [{"role": "user", "content": text}], **extra}


# --- bad requests ----------------------------------------------------------------------------


async def test_text_plain_is_415_in_dialect(bridge) -> None:
    http, _ = bridge
    url = base_url("anthropic", "chat") + "/v1/messages"
    r = await http.post(url, content=b"{}", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415 and r.json()["type"] == "error"


@pytest.mark.parametrize(
    ("client", "path", "shape"),
    [
        (
            "openai-chat",
            "/chat/completions",
            lambda b: b["error"]["type"] == "invalid_request_error",
        ),
        ("openai-responses", "/responses", lambda b: b["error"]["type"] == "invalid_request_error"),
        ("anthropic", "/v1/messages", lambda b: b["error"]["type"] == "invalid_request_error"),
        (
            "gemini",
            "/v1beta/models/x:generateContent",
            lambda b: b["error"]["status"] == "INVALID_ARGUMENT",
        ),
    ],
)
async def test_broken_json_is_400_in_the_clients_dialect(
    bridge, client: str, path: str, shape
) -> None:
    http, _ = bridge
    r = await http.post(
        base_url(client, "claude") + path,
        content=b'{"model": ',
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 400 and shape(r.json())


async def test_unknown_profile_and_unknown_model_are_404(bridge) -> None:
    http, _ = bridge
    assert (await http.post(chat_url("nope"), json=chat_body("hi"))).status_code == 404
    r = await http.post(chat_url(), json={**chat_body("hi"), "model": "gpt-unknown"})
    assert r.status_code == 404 and "gpt-unknown" in r.json()["error"]["message"]


async def test_local_agent_route_answers_a_dialect_shaped_503(bridge) -> None:
    http, _ = bridge
    r = await http.post(
        f"{ORIGIN}/svc/local-agent/claude/chat/v1/chat/completions", json=chat_body("hi")
    )
    assert r.status_code == 503 and "error" in r.json()


# --- upstream failures -----------------------------------------------------------------------


async def test_upstream_429_with_retry_after_is_retried_and_succeeds(bridge) -> None:
    http, provider = bridge
    started = time.monotonic()
    r = await http.post(chat_url(), json=chat_body("retry me [429:once-a]"), timeout=30)
    assert r.status_code == 200 and "said=[retry me" in r.json()["choices"][0]["message"]["content"]
    assert time.monotonic() - started >= 0.9  # it waited the Retry-After second
    assert sum("[429:once-a]" in json.dumps(rec.body) for rec in provider.requests) == 2


async def test_upstream_down_is_502(bridge) -> None:
    http, _ = bridge
    client = sdk(http, "anthropic", "down")
    with pytest.raises(anthropic.APIStatusError) as err:
        await client.messages.create(
            model=ALIAS, max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
    assert err.value.status_code == 502 and "unreachable" in str(err.value)


async def test_silent_upstream_is_504_at_the_timeout(
    bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    http, _ = bridge
    monkeypatch.setattr(upstream, "READ_TIMEOUT", 1.5)
    started = time.monotonic()
    r = await http.post(chat_url(), json=chat_body("[hang]"), timeout=30)
    elapsed = time.monotonic() - started
    assert r.status_code == 504 and r.json()["error"]["type"] == "server_error"
    # A 1.5 s read timeout: not earlier, and not much later.
    assert elapsed >= 1.4, f"answered after {elapsed:.2f} s, before the timeout"
    assert elapsed < 5, f"answered after {elapsed:.2f} s, long after the timeout"


async def test_upstream_error_status_is_kept_with_message_translated(bridge) -> None:
    http, _ = bridge
    client = sdk(http, "anthropic", "gemini")  # Gemini-shaped error -> Anthropic-shaped error
    with pytest.raises(anthropic.InternalServerError) as err:
        await client.messages.create(
            model=ALIAS, max_tokens=5, messages=[{"role": "user", "content": "[status:500]"}]
        )
    assert err.value.status_code == 500 and err.value.body["error"]["message"] == "fake 500"


@pytest.mark.parametrize("provider", ["chat", "claude", "gemini", "responses"])
async def test_mid_stream_failure_ends_the_stream_with_the_dialects_error(
    bridge, provider: str
) -> None:
    http, _ = bridge
    client = sdk(http, "anthropic", provider)
    with pytest.raises(anthropic.APIStatusError) as err:
        async with client.messages.stream(
            model=ALIAS, max_tokens=5, messages=[{"role": "user", "content": "[midfail]"}]
        ) as stream:
            async for _ in stream:
                pass
    assert "mid-stream" in str(err.value)
    chat = sdk(http, "openai-chat", provider)
    with pytest.raises(openai.APIError):
        async for _ in await chat.chat.completions.create(
            model=ALIAS, messages=[{"role": "user", "content": "[midfail]"}], stream=True
        ):
            pass
    responses = sdk(http, "openai-responses", provider)
    stream = await responses.responses.create(model=ALIAS, input="[midfail]", stream=True)
    events = [event async for event in stream]
    errors = [e for e in events if e.type == "error"]
    assert len(errors) == 1 and "mid-stream" in errors[0].message
    assert events[-1].type in ("error", "response.failed")  # passthrough relays the provider's
    gemini = sdk(http, "gemini", provider)
    with pytest.raises(genai_errors.APIError, match="mid-stream"):
        async for _ in await gemini.models.generate_content_stream(
            model=ALIAS, contents="[midfail]"
        ):
            pass


async def test_images_are_dropped_with_a_warning_when_the_model_cannot_take_them(bridge) -> None:
    http, _ = bridge
    content = [
        {"type": "text", "text": "noimg-check"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    r = await http.post(
        chat_url("noimg"),
        json={"model": ALIAS, "messages": [{"role": "user", "content": content}]},
    )
    assert r.status_code == 200 and "images=0" in r.json()["choices"][0]["message"]["content"]
    assert "image" in r.headers["x-svc-warning"]


@pytest.mark.django_db(transaction=True)
async def test_each_request_is_logged_with_its_scope_without_bodies(
    bridge, parts, monkeypatch
) -> None:
    from bridge_app.models import BridgeRequest

    http, _ = bridge
    monkeypatch.undo()  # the parts' real request log (not request_rows'), written to the database
    url = f"{ORIGIN}/svc/local-api/claude/my-scope.1/openai-chat/v1/chat/completions"
    assert (await http.post(url, json=chat_body("log me"))).status_code == 200
    await parts.requestlog.flush()  # what a stopping daemon does; else every 0.5 s
    rows = await sync_to_async(list)(
        BridgeRequest.objects.filter(scope="my-scope.1").values_list(
            "scope", "client_dialect", "provider", "model", "status"
        )
    )
    assert rows == [("my-scope.1", "openai-chat", "anthropic", ALIAS, 200)]
    columns = {f.name for f in BridgeRequest._meta.get_fields()}
    assert not columns & {"body", "request", "response", "messages", "prompt"}  # no bodies


@pytest.mark.parametrize("client", ["openai-chat", "anthropic"])
async def test_provider_connection_dropped_mid_stream_ends_with_an_error_event(
    bridge, client: str
) -> None:
    http, _ = bridge
    if client == "anthropic":
        sdk_client = sdk(http, "anthropic", "chat")
        with pytest.raises(anthropic.APIStatusError) as err:
            async with sdk_client.messages.stream(
                model=ALIAS, max_tokens=5, messages=[{"role": "user", "content": "[midabort]"}]
            ) as stream:
                async for _ in stream:
                    pass
        assert err.value.body["error"]["type"] == "api_error"
        return
    chat = sdk(http, "openai-chat", "claude")
    with pytest.raises(openai.APIError, match="provider"):
        async for _ in await chat.chat.completions.create(
            model=ALIAS, messages=[{"role": "user", "content": "[midabort]"}], stream=True
        ):
            pass


async def test_a_provider_answering_json_to_a_stream_request_is_replayed_as_events(
    bridge,
) -> None:
    http, _ = bridge
    client = sdk(http, "anthropic", "chat")
    async with client.messages.stream(
        model=ALIAS, max_tokens=5, messages=[{"role": "user", "content": "[jsonstream]"}]
    ) as stream:
        assert "said=[[jsonstream]]" in await stream.get_final_text()


async def test_a_provider_stream_without_events_ends_with_an_error_event(bridge) -> None:
    http, _ = bridge
    client = sdk(http, "openai-responses", "claude")
    stream = await client.responses.create(model=ALIAS, input="[emptystream]", stream=True)
    events = [event async for event in stream]
    # The Responses grammar: an `error` event, then `response.failed` (the SDK yields both).
    assert [e.type for e in events] == ["error", "response.failed"]
    assert "without sending any event" in events[0].message
    assert events[1].response.status == "failed"


async def test_an_unreadable_provider_answer_is_a_dialect_error_not_a_crash(bridge) -> None:
    http, _ = bridge
    url = base_url("anthropic", "chat") + "/v1/messages"
    body = {"model": ALIAS, "max_tokens": 5, "messages": [{"role": "user", "content": "[garbage]"}]}
    r = await http.post(url, json=body)
    assert r.status_code == 500 and r.json()["error"]["type"] == "api_error"
    assert r.headers["x-should-retry"] == "false"  # the SDKs would retry a 500 otherwise


async def test_provider_request_id_comes_back_and_429_retries_are_bounded(bridge) -> None:
    http, provider = bridge
    r = await http.post(chat_url("gemini"), json=chat_body("request id please"))
    assert r.status_code == 200 and r.headers["x-request-id"] == "req_fake"
    limited = await http.post(chat_url(), json=chat_body("always busy [status:429]"), timeout=30)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    # Retries are bounded: the first try and two retries, then the 429 goes to the client.
    assert sum("always busy" in json.dumps(rec.body) for rec in provider.requests) == 3


async def test_each_answer_is_recorded_for_the_log_with_its_status(bridge, request_rows) -> None:
    http, _ = bridge
    await http.post(chat_url("claude"), json=chat_body("rows", stream=True))
    await http.post(chat_url("nope"), json=chat_body("rows"))
    assert [(r["profile_id"], r["status"], r.get("stream")) for r in request_rows.rows] == [
        ("claude", 200, True),
        ("nope", 404, None),  # refused before the exchange knew more
    ]
    assert all(r["route"] == "local-api" and r["duration_ms"] > 0 for r in request_rows.rows)
