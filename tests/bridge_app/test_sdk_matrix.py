"""All 16 client x provider pairs of the bridge in process: the official SDKs (their async clients)
pointed at svc as the README says, talking to the bridge's ASGI app through an ASGITransport —
no daphne, no socket on svc's side — with the fake provider (a real HTTP server: the replaced
model provider) behind it. One fake and one settings.json for the module; each test gets fresh
parts in its requests' scope (built, not started: the bridge only needs its upstream client and
request log). The request log runs as in the daemon, but its rows are kept in memory:
writing them is tests/bridge_app/test_request_log.py's, and a database per test would double the
module's time.

The harness (fixtures `bridge`, `fake`, `profiles`; the async drivers) is
harness/fakes/bridge_inprocess.py, offered to this folder by its conftest.py.
tests/e2e/test_bridge_sdks.py keeps a few of these over a live daemon, for the wiring."""

from __future__ import annotations

import json
import re

import openai
import pytest

from harness.fakes.bridge_clients import PNG_B64, SYSTEM
from harness.fakes.bridge_inprocess import (
    IDS,
    KEY_HEADER,
    PAIRS,
    SVC,
    Bridge,
    ask,
)
from harness.fakes.bridge_setup import ALIAS, DIALECTS, PROFILE

# --- the matrix ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
async def test_text_with_system_history_and_image(
    bridge: Bridge, client: str, provider: str, stream: bool
) -> None:
    marker = f"text-{client}-{provider}-{stream}"
    answer = await ask(bridge, client, provider, marker, stream)
    assert f"system=[{SYSTEM}]" in answer.text
    assert "turns=3 images=1" in answer.text  # the history and the PNG reached the provider
    assert f"said=[{marker}]" in answer.text
    assert answer.model == ALIAS  # the id the client asked for, not the upstream one
    assert answer.stop == "end"
    assert answer.usage[0] > 0 and answer.usage[1] > 0
    rec = bridge.fake.last(marker)
    if provider == "gemini":  # the model travels in the URL
        assert "/models/fake-model:" in rec.path
    else:
        assert rec.body["model"] == "fake-model"
    key = rec.headers[KEY_HEADER[provider]]
    assert key.removeprefix("Bearer ") == f"profile-key-{provider}"
    assert "client-key-never-forwarded" not in repr(rec.headers)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
async def test_parallel_tool_calls_and_results_keep_their_ids(
    bridge: Bridge, client: str, provider: str, stream: bool
) -> None:
    marker = f"tools-{client}-{provider}-{stream} [tools]"
    first = await ask(bridge, client, provider, marker, stream)
    assert first.stop == "tool"
    assert [(name, args) for _, name, args in first.calls] == [
        ("weather", {"city": "Paris", "n": 0}),
        ("time", {"city": "Paris", "n": 1}),
    ]
    ids = [i for i, _, _ in first.calls]
    if client == provider == "gemini":
        # Passthrough of id-less (pre-Gemini-3) calls stays id-less; results match by name.
        assert ids == [None, None]
        ids = ["weather", "time"]
    assert len(set(ids)) == 2 and all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i) for i in ids)
    results = {ids[0]: "sunny", ids[1]: "noon"}
    second = await ask(bridge, client, provider, marker, stream, (first, results))
    # The provider saw both results under the very ids the client was given.
    assert f"results=[{ids[0]}=sunny;{ids[1]}=noon]" in second.text
    assert second.stop == "end"


@pytest.mark.parametrize("client", DIALECTS)
async def test_max_tokens_stop_reason(bridge: Bridge, client: str) -> None:
    provider = DIALECTS[(DIALECTS.index(client) + 1) % 4]  # a translated pair
    assert (await ask(bridge, client, provider, "long [max]", False)).stop == "max"
    assert (await ask(bridge, client, provider, "long [max]", True)).stop == "max"


async def test_models_list_and_retrieve_in_every_sdk(bridge: Bridge) -> None:
    expected = [ALIAS, "fake-model"]
    for client in ("openai-chat", "openai-responses"):
        c = bridge.sdk(client, "claude")
        assert [m.id async for m in c.models.list()] == expected
        assert (await c.models.retrieve(ALIAS)).id == ALIAS
    a = bridge.sdk("anthropic", "gemini")
    assert [m.id async for m in a.models.list()] == expected
    assert (await a.models.retrieve(ALIAS)).id == ALIAS
    g = bridge.sdk("gemini", "chat")
    assert [m.name async for m in await g.models.list()] == [f"models/{m}" for m in expected]
    assert (await g.models.get(model=ALIAS)).name == f"models/{ALIAS}"


async def test_token_counting_routes(bridge: Bridge) -> None:
    """Same dialect: the provider's exact count (the fake says 42); else a local estimate."""
    fake = bridge.fake
    hello = [{"role": "user", "content": "hello there"}]
    exact = await bridge.sdk("anthropic", "claude").messages.count_tokens(
        model=ALIAS, messages=hello
    )
    assert exact.input_tokens == 42
    assert fake.requests[-1].headers["x-api-key"] == "profile-key-anthropic"
    estimate = await bridge.sdk("anthropic", "chat").messages.count_tokens(
        model=ALIAS, messages=hello
    )
    assert 0 < estimate.input_tokens < 42
    g = bridge.sdk("gemini", "gemini")
    assert (await g.models.count_tokens(model=ALIAS, contents="hello there")).total_tokens == 42
    g = bridge.sdk("gemini", "claude")
    counted = await g.models.count_tokens(model=ALIAS, contents="hello there")
    assert 0 < counted.total_tokens < 42
    r = bridge.sdk("openai-responses", "responses")
    counted = await r.responses.input_tokens.count(model=ALIAS, input="hello there")
    assert counted.input_tokens == 42
    r = bridge.sdk("openai-responses", "gemini")
    counted = await r.responses.input_tokens.count(model=ALIAS, input="hello there")
    assert 0 < counted.input_tokens < 42


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
async def test_reasoning_text_crosses_when_both_sides_carry_it(
    bridge: Bridge, client: str, provider: str, stream: bool
) -> None:
    answer = await ask(bridge, client, provider, f"think-{client}-{provider} [think]", stream)
    assert answer.reasoning == "Thinking it over."
    assert "said=[think-" in answer.text and answer.stop == "end"


def _sampling_request(client: str, marker: str) -> tuple[str, dict]:
    user = {"role": "user", "content": marker}
    if client == "openai-chat":
        body = {
            "messages": [user],
            "max_tokens": 77,
            "temperature": 0.5,
            "top_p": 0.9,
            "stop": ["END"],
        }
        return "/chat/completions", {"model": ALIAS, **body}
    if client == "openai-responses":  # the Responses API has no stop parameter
        body = {"input": marker, "max_output_tokens": 77, "temperature": 0.5, "top_p": 0.9}
        return "/responses", {"model": ALIAS, **body}
    if client == "anthropic":
        body = {"messages": [user], "max_tokens": 77, "temperature": 0.5, "top_p": 0.9}
        return "/v1/messages", {"model": ALIAS, **body, "stop_sequences": ["END"]}
    generation = {"maxOutputTokens": 77, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]}
    body = {
        "contents": [{"role": "user", "parts": [{"text": marker}]}],
        "generationConfig": generation,
    }
    return f"/v1beta/models/{ALIAS}:generateContent", body


def _sampling_seen(provider: str, body: dict) -> tuple:
    if provider == "gemini":
        c = body["generationConfig"]
        return c.get("maxOutputTokens"), c.get("temperature"), c.get("topP"), c.get("stopSequences")
    max_key = {"openai-chat": "max_completion_tokens", "openai-responses": "max_output_tokens"}
    stop_key = {"openai-chat": "stop", "anthropic": "stop_sequences"}
    max_tokens = body.get(max_key.get(provider, "max_tokens"), body.get("max_tokens"))
    stop = body.get(stop_key.get(provider, "-"))
    return max_tokens, body.get("temperature"), body.get("top_p"), stop


@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
async def test_temperature_max_tokens_top_p_and_stop_reach_the_provider(
    bridge: Bridge, client: str, provider: str
) -> None:
    marker = f"sampling-{client}-{provider}"
    path, body = _sampling_request(client, marker)
    r = await bridge.post(bridge.base_url(client, PROFILE[provider]) + path, json=body)
    assert r.status_code == 200, r.text
    max_tokens, temperature, top_p, stop = _sampling_seen(provider, bridge.fake.last(marker).body)
    assert (max_tokens, temperature) == (77, 0.5)
    expressible = "openai-responses" not in (client, provider)
    assert stop == (["END"] if expressible else None)
    # Newer Claude models reject temperature and top_p together: translation keeps temperature.
    dropped = provider == "anthropic" and client != "anthropic"
    assert top_p == (None if dropped else 0.9)


async def test_legacy_bridge_route_serves_the_same_api(bridge: Bridge) -> None:
    client = bridge.openai(f"{SVC}/svc/bridge/claude/openai-chat/v1", api_key="x")
    r = await client.chat.completions.create(
        model=ALIAS, messages=[{"role": "user", "content": "legacy"}]
    )
    assert "said=[legacy]" in r.choices[0].message.content and r.model == ALIAS


async def test_claude_code_style_request_with_x_api_key_and_beta_query(bridge: Bridge) -> None:
    url = bridge.base_url("anthropic", "chat") + "/v1/messages?beta=true"
    body = {"model": ALIAS, "max_tokens": 9, "messages": [{"role": "user", "content": "cc-style"}]}
    r = await bridge.post(
        url, json=body, headers={"x-api-key": "sk-ant-client", "anthropic-version": "2023-06-01"}
    )
    assert r.status_code == 200 and r.json()["model"] == ALIAS
    assert "sk-ant-client" not in repr(bridge.fake.last("cc-style").headers)


async def test_gemini_sdk_with_doubled_version_base_url(bridge: Bridge) -> None:
    client = bridge.gemini(bridge.base_url("gemini", "claude") + "/v1beta")
    answer = await client.models.generate_content(model=ALIAS, contents="doubled")
    assert "said=[doubled]" in answer.text  # sent to .../gemini/v1beta/v1beta/models/...


async def test_gemini_stream_without_alt_sse_is_a_json_array(bridge: Bridge) -> None:
    url = bridge.base_url("gemini", "chat") + f"/v1beta/models/{ALIAS}:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "array"}]}]}
    chunks = (await bridge.post(url, json=body)).json()
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    text = "".join(
        p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"]
    )
    assert "said=[array]" in text


CAT = "https://images.invalid/cat.png"  # .invalid never resolves: no real network in tests


def _url_image_request(client: str, marker: str) -> tuple[str, dict]:
    if client == "openai-chat":
        content = [
            {"type": "text", "text": marker},
            {"type": "image_url", "image_url": {"url": CAT}},
        ]
        return "/chat/completions", {
            "model": ALIAS,
            "messages": [{"role": "user", "content": content}],
        }
    if client == "openai-responses":
        content = [
            {"type": "input_text", "text": marker},
            {"type": "input_image", "image_url": CAT},
        ]
        return "/responses", {"model": ALIAS, "input": [{"role": "user", "content": content}]}
    if client == "anthropic":
        image = {"type": "image", "source": {"type": "url", "url": CAT}}
        content = [{"type": "text", "text": marker}, image]
        body = {"model": ALIAS, "max_tokens": 9, "messages": [{"role": "user", "content": content}]}
        return "/v1/messages", body
    parts = [{"text": marker}, {"fileData": {"mimeType": "image/png", "fileUri": CAT}}]
    return f"/v1beta/models/{ALIAS}:generateContent", {
        "contents": [{"role": "user", "parts": parts}]
    }


@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
async def test_images_by_url_reach_the_provider(bridge: Bridge, client: str, provider: str) -> None:
    marker = f"url-image-{client}-{provider}"
    path, body = _url_image_request(client, marker)
    r = await bridge.post(bridge.base_url(client, PROFILE[provider]) + path, json=body)
    assert r.status_code == 200, r.text
    assert "images=1" in r.text
    assert CAT in repr(bridge.fake.last(marker).body)
    if provider == "gemini" and client != "gemini":  # svc tried to inline it, and says so
        assert "sent as a URL" in r.headers["x-svc-warning"]


@pytest.mark.parametrize("client", ["openai-chat", "anthropic"])
async def test_http_images_are_fetched_and_inlined_for_gemini(bridge: Bridge, client: str) -> None:
    fake = bridge.fake
    marker = f"inline-{client}"
    url = f"{fake.url}/pictures/cat.png"
    if client == "openai-chat":
        content = [
            {"type": "text", "text": marker},
            {"type": "image_url", "image_url": {"url": url}},
        ]
        path, body = (
            "/chat/completions",
            {"model": ALIAS, "messages": [{"role": "user", "content": content}]},
        )
    else:
        content = [
            {"type": "text", "text": marker},
            {"type": "image", "source": {"type": "url", "url": url}},
        ]
        body = {"model": ALIAS, "max_tokens": 9, "messages": [{"role": "user", "content": content}]}
        path = "/v1/messages"
    r = await bridge.post(bridge.base_url(client, "gemini") + path, json=body)
    assert r.status_code == 200 and "images=1" in r.text
    parts = fake.last(marker).body["contents"][-1]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}


async def test_previous_response_id_across_dialects_continues_the_conversation(
    bridge: Bridge,
) -> None:
    client = bridge.sdk("openai-responses", "claude")  # an Anthropic provider: svc remembers
    first = await client.responses.create(model=ALIAS, input="my name is Ada", instructions="S")
    second = await client.responses.create(
        model=ALIAS, input="who am I?", previous_response_id=first.id
    )
    assert "turns=3" in second.output_text  # user, the first answer, user
    sent = bridge.fake.last("who am I?").body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert first.output_text in json.dumps(sent[1])
    async with client.responses.stream(
        model=ALIAS, input="and now?", previous_response_id=second.id
    ) as st:
        third = await st.get_final_response()
    assert "turns=5" in third.output_text
    fourth = await client.responses.create(model=ALIAS, input="last", previous_response_id=third.id)
    assert "turns=7" in fourth.output_text  # a streamed turn is remembered too


async def test_stored_responses_can_be_retrieved_and_deleted(bridge: Bridge) -> None:
    client = bridge.sdk("openai-responses", "gemini")
    made = await client.responses.create(model=ALIAS, input="keep me")
    assert (await client.responses.retrieve(made.id)).output_text == made.output_text
    await client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(made.id)
    unstored = await client.responses.create(model=ALIAS, input="forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        await client.responses.create(model=ALIAS, input="x", previous_response_id=unstored.id)


async def test_previous_response_id_passes_through_to_a_responses_provider(bridge: Bridge) -> None:
    same = bridge.sdk("openai-responses", "responses")  # the provider keeps its own state
    await same.responses.create(model=ALIAS, input="chained", previous_response_id="resp_123")
    assert bridge.fake.last("chained").body["previous_response_id"] == "resp_123"
