"""All 16 client x provider pairs through a live svc, with the official SDKs pointed at svc as
the README says, and the fake provider behind it. One daemon and one fake for the module."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.fakes.bridge_clients import DRIVERS, PNG_B64, SYSTEM
from tests.fakes.bridge_setup import ALIAS, DIALECTS, PROFILE, base_url, sdk, start_bridge

PAIRS = [(c, p) for c in DIALECTS for p in DIALECTS]
IDS = [f"{c}->{p}" for c, p in PAIRS]
KEY_HEADER = {
    "openai-chat": "authorization",
    "openai-responses": "authorization",
    "anthropic": "x-api-key",
    "gemini": "x-goog-api-key",
}


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    daemon, fake = start_bridge(tmp_path_factory.mktemp("bridge") / "home")
    yield daemon, fake
    daemon.stop()
    fake.stop()


def ask(bridge, client: str, provider: str, prompt: str, stream: bool, tools_round=None):
    daemon, _ = bridge
    return DRIVERS[client](
        sdk(daemon, client, PROFILE[provider]), ALIAS, prompt, stream, tools_round
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
def test_text_with_system_history_and_image(
    bridge, client: str, provider: str, stream: bool
) -> None:
    marker = f"text-{client}-{provider}-{stream}"
    answer = ask(bridge, client, provider, marker, stream)
    assert f"system=[{SYSTEM}]" in answer.text
    assert "turns=3 images=1" in answer.text  # the history and the PNG reached the provider
    assert f"said=[{marker}]" in answer.text
    assert answer.model == ALIAS  # the id the client asked for, not the upstream one
    assert answer.stop == "end"
    assert answer.usage[0] > 0 and answer.usage[1] > 0
    rec = bridge[1].last(marker)
    if provider == "gemini":  # the model travels in the URL
        assert "/models/fake-model:" in rec.path
    else:
        assert rec.body["model"] == "fake-model"
    key = rec.headers[KEY_HEADER[provider]]
    assert key.removeprefix("Bearer ") == f"profile-key-{provider}"
    assert "client-key-never-forwarded" not in repr(rec.headers)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
def test_parallel_tool_calls_and_results_keep_their_ids(
    bridge, client: str, provider: str, stream: bool
) -> None:
    marker = f"tools-{client}-{provider}-{stream} [tools]"
    first = ask(bridge, client, provider, marker, stream)
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
    second = ask(bridge, client, provider, marker, stream, (first, results))
    # The provider saw both results under the very ids the client was given.
    assert f"results=[{ids[0]}=sunny;{ids[1]}=noon]" in second.text
    assert second.stop == "end"


@pytest.mark.parametrize("client", DIALECTS)
def test_max_tokens_stop_reason(bridge, client: str) -> None:
    provider = DIALECTS[(DIALECTS.index(client) + 1) % 4]  # a translated pair
    assert ask(bridge, client, provider, "long [max]", False).stop == "max"
    assert ask(bridge, client, provider, "long [max]", True).stop == "max"


def test_models_list_and_retrieve_in_every_sdk(bridge) -> None:
    daemon, _ = bridge
    expected = [ALIAS, "fake-model"]
    for client in ("openai-chat", "openai-responses"):
        c = sdk(daemon, client, "claude")
        assert [m.id for m in c.models.list()] == expected
        assert c.models.retrieve(ALIAS).id == ALIAS
    a = sdk(daemon, "anthropic", "gemini")
    assert [m.id for m in a.models.list()] == expected
    assert a.models.retrieve(ALIAS).id == ALIAS
    g = sdk(daemon, "gemini", "chat")
    assert [m.name for m in g.models.list()] == [f"models/{m}" for m in expected]
    assert g.models.get(model=ALIAS).name == f"models/{ALIAS}"


def test_token_counting_routes(bridge) -> None:
    """Same dialect: the provider's exact count (the fake says 42); else a local estimate."""
    daemon, fake = bridge
    hello = [{"role": "user", "content": "hello there"}]
    exact = sdk(daemon, "anthropic", "claude").messages.count_tokens(model=ALIAS, messages=hello)
    assert exact.input_tokens == 42
    assert fake.requests[-1].headers["x-api-key"] == "profile-key-anthropic"
    estimate = sdk(daemon, "anthropic", "chat").messages.count_tokens(model=ALIAS, messages=hello)
    assert 0 < estimate.input_tokens < 42
    g = sdk(daemon, "gemini", "gemini")
    assert g.models.count_tokens(model=ALIAS, contents="hello there").total_tokens == 42
    g = sdk(daemon, "gemini", "claude")
    assert 0 < g.models.count_tokens(model=ALIAS, contents="hello there").total_tokens < 42
    r = sdk(daemon, "openai-responses", "responses")
    assert r.responses.input_tokens.count(model=ALIAS, input="hello there").input_tokens == 42
    r = sdk(daemon, "openai-responses", "gemini")
    assert 0 < r.responses.input_tokens.count(model=ALIAS, input="hello there").input_tokens < 42


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
def test_reasoning_text_crosses_when_both_sides_carry_it(
    bridge, client: str, provider: str, stream: bool
) -> None:
    answer = ask(bridge, client, provider, f"think-{client}-{provider} [think]", stream)
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
    config = {"maxOutputTokens": 77, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]}
    body = {"contents": [{"role": "user", "parts": [{"text": marker}]}], "generationConfig": config}
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
def test_temperature_max_tokens_top_p_and_stop_reach_the_provider(
    bridge, client: str, provider: str
) -> None:
    daemon, fake = bridge
    marker = f"sampling-{client}-{provider}"
    path, body = _sampling_request(client, marker)
    r = httpx.post(base_url(daemon, client, PROFILE[provider]) + path, json=body)
    assert r.status_code == 200, r.text
    max_tokens, temperature, top_p, stop = _sampling_seen(provider, fake.last(marker).body)
    assert (max_tokens, temperature) == (77, 0.5)
    expressible = "openai-responses" not in (client, provider)
    assert stop == (["END"] if expressible else None)
    # Newer Claude models reject temperature and top_p together: translation keeps temperature.
    dropped = provider == "anthropic" and client != "anthropic"
    assert top_p == (None if dropped else 0.9)


def test_legacy_bridge_route_serves_the_same_api(bridge) -> None:
    daemon, _ = bridge
    import openai

    client = openai.OpenAI(base_url=f"{daemon.url}/svc/bridge/claude/openai-chat/v1", api_key="x")
    r = client.chat.completions.create(
        model=ALIAS, messages=[{"role": "user", "content": "legacy"}]
    )
    assert "said=[legacy]" in r.choices[0].message.content and r.model == ALIAS


def test_claude_code_style_request_with_x_api_key_and_beta_query(bridge) -> None:
    daemon, fake = bridge
    url = base_url(daemon, "anthropic", "chat") + "/v1/messages?beta=true"
    body = {"model": ALIAS, "max_tokens": 9, "messages": [{"role": "user", "content": "cc-style"}]}
    r = httpx.post(
        url, json=body, headers={"x-api-key": "sk-ant-client", "anthropic-version": "2023-06-01"}
    )
    assert r.status_code == 200 and r.json()["model"] == ALIAS
    assert "sk-ant-client" not in repr(fake.last("cc-style").headers)


def test_gemini_sdk_with_doubled_version_base_url(bridge) -> None:
    daemon, _ = bridge
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=base_url(daemon, "gemini", "claude") + "/v1beta")
    client = genai.Client(
        api_key="x", http_options=options
    )  # sends .../gemini/v1beta/v1/models/...
    assert "said=[doubled]" in client.models.generate_content(model=ALIAS, contents="doubled").text


def test_gemini_stream_without_alt_sse_is_a_json_array(bridge) -> None:
    daemon, _ = bridge
    url = base_url(daemon, "gemini", "chat") + f"/v1beta/models/{ALIAS}:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "array"}]}]}
    chunks = httpx.post(url, json=body).json()
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
def test_images_by_url_reach_the_provider(bridge, client: str, provider: str) -> None:
    daemon, fake = bridge
    marker = f"url-image-{client}-{provider}"
    path, body = _url_image_request(client, marker)
    r = httpx.post(base_url(daemon, client, PROFILE[provider]) + path, json=body)
    assert r.status_code == 200, r.text
    assert "images=1" in r.text
    assert CAT in repr(fake.last(marker).body)
    if provider == "gemini" and client != "gemini":  # svc tried to inline it, and says so
        assert "sent as a URL" in r.headers["x-svc-warning"]


@pytest.mark.parametrize("client", ["openai-chat", "anthropic"])
def test_http_images_are_fetched_and_inlined_for_gemini(bridge, client: str) -> None:
    daemon, fake = bridge
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
    r = httpx.post(base_url(daemon, client, "gemini") + path, json=body)
    assert r.status_code == 200 and "images=1" in r.text
    parts = fake.last(marker).body["contents"][-1]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": PNG_B64}}


def test_previous_response_id_across_dialects_continues_the_conversation(bridge) -> None:
    daemon, fake = bridge
    client = sdk(daemon, "openai-responses", "claude")  # an Anthropic provider: svc remembers
    first = client.responses.create(model=ALIAS, input="my name is Ada", instructions="S")
    second = client.responses.create(model=ALIAS, input="who am I?", previous_response_id=first.id)
    assert "turns=3" in second.output_text  # user, the first answer, user
    sent = fake.last("who am I?").body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert first.output_text in json.dumps(sent[1])
    with client.responses.stream(
        model=ALIAS, input="and now?", previous_response_id=second.id
    ) as st:
        third = st.get_final_response()
    assert "turns=5" in third.output_text
    fourth = client.responses.create(model=ALIAS, input="last", previous_response_id=third.id)
    assert "turns=7" in fourth.output_text  # a streamed turn is remembered too


def test_stored_responses_can_be_retrieved_and_deleted(bridge) -> None:
    daemon, _ = bridge
    client = sdk(daemon, "openai-responses", "gemini")
    made = client.responses.create(model=ALIAS, input="keep me")
    assert client.responses.retrieve(made.id).output_text == made.output_text
    client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    unstored = client.responses.create(model=ALIAS, input="forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=ALIAS, input="x", previous_response_id=unstored.id)


def test_previous_response_id_passes_through_to_a_responses_provider(bridge) -> None:
    daemon, fake = bridge
    same = sdk(daemon, "openai-responses", "responses")  # the provider keeps its own state
    same.responses.create(model=ALIAS, input="chained", previous_response_id="resp_123")
    assert fake.last("chained").body["previous_response_id"] == "resp_123"
