"""The fake provider is faithful: the official SDKs, pointed straight at it (no svc), parse
everything it says, streamed or not, and it records what they sent."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from harness.fakes.fake_provider import FakeProvider

TOOL = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    server = FakeProvider().start()
    yield server
    server.stop()


def oa(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url("openai-chat"), api_key="k", max_retries=2)


def test_openai_chat_json_stream_tools_and_models(fake: FakeProvider) -> None:
    tools = [{"type": "function", "function": {"name": "weather", "parameters": TOOL}}]
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "go [tools]"}]
    r = oa(fake).chat.completions.create(model="fake-model", messages=msgs, tools=tools)
    assert r.choices[0].finish_reason == "tool_calls"
    assert r.choices[0].message.tool_calls[0].function.name == "weather"
    chunks = list(
        oa(fake).chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "said=[hi]" in text and chunks[-1].usage.total_tokens > 0
    assert [m.id for m in oa(fake).models.list()] == ["fake-model", "fake-model-2"]
    assert fake.last("go [tools]").headers["authorization"] == "Bearer k"


def test_openai_responses_strict_stream_helper_accepts_the_fake(fake: FakeProvider) -> None:
    tools = [{"type": "function", "name": "weather", "parameters": TOOL}]
    with oa(fake).responses.stream(
        model="fake-model", input="x [tools] [think]", instructions="S", tools=tools
    ) as stream:
        final = stream.get_final_response()
    assert [i.type for i in final.output] == ["reasoning", "message", "function_call"]
    assert final.output_text == "Let me check." and final.output[0].summary[0].text
    assert (
        oa(fake)
        .responses.create(model="fake-model", input="plain")
        .output_text.endswith("said=[plain]")
    )


def test_anthropic_messages_json_stream_count_and_models(fake: FakeProvider) -> None:
    client = anthropic.Anthropic(base_url=fake.base_url("anthropic"), api_key="k")
    tools = [{"name": "weather", "input_schema": TOOL}]
    msgs = [{"role": "user", "content": "go [tools] [think]"}]
    m = client.messages.create(model="fake-model", max_tokens=9, messages=msgs, tools=tools)
    assert [b.type for b in m.content] == ["thinking", "text", "tool_use"]
    with client.messages.stream(model="fake-model", max_tokens=9, messages=msgs, tools=tools) as s:
        streamed = s.get_final_message()
    assert [b.type for b in streamed.content] == ["thinking", "text", "tool_use"]
    assert streamed.content[2].input == {"city": "Paris", "n": 0}
    assert client.messages.count_tokens(model="fake-model", messages=msgs).input_tokens == 42
    assert client.models.list().data[0].id == "fake-model"


def test_gemini_generate_stream_and_models(fake: FakeProvider) -> None:
    options = types.HttpOptions(base_url=fake.base_url("gemini"), api_version="v1beta")
    client = genai.Client(api_key="k", http_options=options)
    decl = types.FunctionDeclaration(name="weather", parameters_json_schema=TOOL)
    config = types.GenerateContentConfig(
        system_instruction="S",
        tools=[types.Tool(function_declarations=[decl])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    r = client.models.generate_content(model="fake-model", contents="hi", config=config)
    assert "system=[S]" in r.text
    parts = [
        p
        for c in client.models.generate_content_stream(
            model="fake-model", contents="go [tools]", config=config
        )
        for p in c.candidates[0].content.parts or []
    ]
    assert [p.function_call.name for p in parts if p.function_call] == ["weather"]
    assert [m.name for m in client.models.list()] == ["models/fake-model", "models/fake-model-2"]
    assert fake.last("go [tools]").headers["x-goog-api-key"] == "k"


def test_scripted_failures_are_what_the_sdks_expect(fake: FakeProvider) -> None:
    # 429 with Retry-After: 1 once; the SDK's own retry then succeeds.
    r = oa(fake).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "[429:fake-direct]"}]
    )
    assert "said=[[429:fake-direct]]" in r.choices[0].message.content
    client = anthropic.Anthropic(base_url=fake.base_url("anthropic"), api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError):
        client.messages.create(
            model="fake-model", max_tokens=5, messages=[{"role": "user", "content": "[status:400]"}]
        )
    with (
        pytest.raises(anthropic.APIStatusError),
        client.messages.stream(
            model="fake-model", max_tokens=5, messages=[{"role": "user", "content": "[midfail]"}]
        ) as stream,
    ):
        for _ in stream:
            pass
