"""Streams through the bridge, bytes in and bytes out (bridge_app/streams.py): `StreamTranslator`
from a provider's SSE to the client's own grammar (the parser itself: test_sse_parser.py),
relayed as is when nothing changes, ending in the client dialect's error event when the provider
fails or says nothing, and handing over a translated Responses turn to remember.

Provider streams come from the fake provider's wire formats (harness/fakes, written from the
vendors' documented shapes, not from bridge_app)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from bridge_app import dialects, ir, translate
from bridge_app.streams import SSEParser, StreamTranslator
from harness.fakes import bridge_fake_formats as fmt

NAMES = list(dialects.NAMES)
TOOL_ARGS = {"city": "Paris", "n": 0}


def plan(text: str = "Hello there, héllo ✓ world", calls: bool = True) -> fmt.Plan:
    called = [("1", "weather", TOOL_ARGS)] if calls else []
    return fmt.Plan("up-model", text, called, "tool" if calls else "end", (7, 3))


def provider_stream(provider: str, p: fmt.Plan | None = None, midfail: bool = False) -> bytes:
    return b"".join(fmt.stream(provider, p or plan(), midfail=midfail))


def outbound(
    client: str,
    provider: str,
    *,
    requested: str = "client-model",
    upstream: str = "up-model",
    include_usage: bool = True,
    sse: bool = True,
    history: list[ir.Message] | None = None,
) -> translate.Outbound:
    return translate.Outbound(
        client=dialects.get(client),
        provider=dialects.get(provider),
        requested=requested,
        upstream_model=upstream,
        url="http://provider.invalid",
        headers={},
        payload=None,
        stream=True,
        passthrough=client == provider and sse,
        include_usage=include_usage,
        sse=sse,
        history=history,
    )


def split(raw: bytes, sizes: tuple[int, ...] = (1, 2, 3, 5, 7, 11, 13)) -> list[bytes]:
    """Reads of awkward sizes: mid-line, mid-`\\r\\n`, mid-UTF-8 character."""
    out, at = [], 0
    for size in itertools.cycle(sizes):
        if at >= len(raw):
            return out
        out.append(raw[at : at + size])
        at += size
    return out


def translate_all(t: StreamTranslator, reads: list[bytes]) -> bytes:
    return b"".join(t.feed(chunk) for chunk in reads) + t.close()


def frames(raw: bytes) -> list[tuple[str, Any]]:
    return [(e, json.loads(d)) for e, d in SSEParser().feed(raw) if d != "[DONE]"]


def decoded(client: str, raw: bytes) -> list[ir.Event]:
    """The client's bytes read back as a client of that dialect would."""
    dec = dialects.stream(client).StreamDecoder()
    events: list[ir.Event] = []
    for event, data in frames(raw):
        events += dec.feed(event, data)
    return events + dec.close()


# --- translation across dialects ---------------------------------------------------------------


def _text(events: list[ir.Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, ir.TextDelta))


def _calls(events: list[ir.Event]) -> list[tuple[str, Any]]:
    resp = ir.collect(events, "client-model")
    return [(p.name, json.loads(p.args)) for p in resp.parts if isinstance(p, ir.ToolCall)]


@pytest.mark.parametrize("provider", NAMES)
@pytest.mark.parametrize("client", NAMES)
def test_every_pair_translates_a_stream_read_in_awkward_pieces(client: str, provider: str) -> None:
    t = StreamTranslator(outbound(client, provider))
    out = translate_all(t, split(provider_stream(provider)))
    events = decoded(client, out)
    assert not [e for e in events if isinstance(e, ir.Error)], out[-400:]
    assert _text(events) == plan().text
    assert _calls(events) == [("weather", TOOL_ARGS)]
    assert ir.collect(events, "m").stop == "tool_use"
    assert b"up-model" not in out  # every event names the id the client asked for


def test_openai_chat_chunks_become_anthropic_events() -> None:
    t = StreamTranslator(outbound("anthropic", "openai-chat"))
    out = frames(translate_all(t, split(provider_stream("openai-chat"))))
    names = [e for e, _ in out]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(event == data["type"] for event, data in out)  # Anthropic's mandatory event lines
    assert out[0][1]["message"]["model"] == "client-model"
    blocks = [d["content_block"]["type"] for e, d in out if e == "content_block_start"]
    assert blocks == ["text", "tool_use"]
    assert [d["index"] for e, d in out if e == "content_block_start"] == [0, 1]  # dense
    delta = out[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] == 3


def test_gemini_frames_become_openai_chat_chunks_with_usage_only_when_asked() -> None:
    raw = provider_stream("gemini")
    assert b"\r\n\r\n" in raw  # the fake writes Gemini's CRLF frames
    asked = translate_all(StreamTranslator(outbound("openai-chat", "gemini")), split(raw))
    assert asked.endswith(b"data: [DONE]\n\n") and asked.count(b"[DONE]") == 1
    chunks = [d for _, d in frames(asked)]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 7
    plain = outbound("openai-chat", "gemini", include_usage=False)
    unasked = [d for _, d in frames(translate_all(StreamTranslator(plain), split(raw)))]
    assert not any("usage" in c for c in unasked)
    assert unasked[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_anthropic_events_become_the_responses_ladder() -> None:
    t = StreamTranslator(outbound("openai-responses", "anthropic"))
    out = frames(translate_all(t, split(provider_stream("anthropic"))))
    kinds = [d["type"] for _, d in out]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [d["sequence_number"] for _, d in out] == list(range(len(out)))
    final = out[-1][1]["response"]
    assert final["id"] == out[0][1]["response"]["id"] and final["model"] == "client-model"
    assert [i["type"] for i in final["output"]] == ["message", "function_call"]
    assert final["output"][0]["content"][0]["text"] == plan().text


def test_a_gemini_client_without_alt_sse_gets_one_json_array() -> None:
    t = StreamTranslator(outbound("gemini", "openai-responses", sse=False))
    raw = translate_all(t, split(provider_stream("openai-responses")))
    array = json.loads(raw)  # the whole body is one JSON document
    text = "".join(
        p.get("text", "") for item in array for p in item["candidates"][0]["content"]["parts"]
    )
    assert text == plan().text
    assert array[-1]["candidates"][0]["finishReason"] == "STOP"
    assert {item["modelVersion"] for item in array} == {"client-model"}


def test_a_json_body_answering_a_stream_request_is_replayed_as_events() -> None:
    t = StreamTranslator(outbound("anthropic", "openai-chat"))
    raw = json.dumps(fmt.render("openai-chat", plan(calls=False))).encode()
    out = frames(t.whole(raw))
    assert out[0][0] == "message_start" and out[-1][0] == "message_stop"
    text = "".join(d["delta"]["text"] for e, d in out if e == "content_block_delta")
    assert text == plan().text


def test_a_json_body_that_is_not_an_object_is_the_dialects_error_event() -> None:
    t = StreamTranslator(outbound("anthropic", "openai-chat"))
    out = frames(t.whole(b"[1, 2]"))
    assert out == [
        (
            "error",
            {
                "type": "error",
                "error": {
                    "type": "api_error",
                    "message": ("the provider answered something that is not a JSON object"),
                },
            },
        )
    ]
    assert t.close() == b""


# --- passthrough -------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", NAMES)
def test_same_dialect_and_same_model_relays_every_read_untouched(dialect: str) -> None:
    raw = provider_stream(dialect, fmt.Plan("up-model", "hi", [], "end", (1, 1)))
    t = StreamTranslator(outbound(dialect, dialect, requested="up-model"))
    reads = split(raw)
    assert [t.feed(chunk) for chunk in reads] == reads  # mid-frame reads go out as they came
    assert t.close() == b""  # nothing added: the provider's own end is already relayed


@pytest.mark.parametrize(
    ("dialect", "model_of"),
    [
        ("openai-chat", lambda d: d.get("model")),
        ("openai-responses", lambda d: (d.get("response") or {}).get("model")),
        ("anthropic", lambda d: (d.get("message") or {}).get("model")),
        ("gemini", lambda d: d.get("modelVersion")),
    ],
)
def test_same_dialect_with_an_alias_rewrites_only_the_model(dialect: str, model_of: Any) -> None:
    raw = provider_stream(dialect)
    t = StreamTranslator(outbound(dialect, dialect))
    out = translate_all(t, split(raw))
    relayed, upstream = frames(out), frames(raw)
    assert [e for e, _ in relayed] == [e for e, _ in upstream]  # event lines kept
    named = {model_of(d) for _, d in relayed} - {None}
    assert named == {"client-model"}
    for (_, mine), (_, theirs) in zip(relayed, upstream, strict=True):
        assert {
            k: v
            for k, v in mine.items()
            if k not in ("model", "response", "message", "modelVersion")
        } == {
            k: v
            for k, v in theirs.items()
            if k not in ("model", "response", "message", "modelVersion")
        }
    assert out.count(b"[DONE]") == (1 if dialect == "openai-chat" else 0)


# --- failures ----------------------------------------------------------------------------------


def error_messages(client: str, out: bytes) -> list[str]:
    """The messages of the client dialect's error events; each must end the stream (Responses
    follows its `error` with `response.failed`, as its grammar has it)."""
    parsed = frames(out)
    at = [
        i
        for i, (e, d) in enumerate(parsed)
        if e == "error" or ("error" in d and (d.get("type") in (None, "error")))
    ]
    tail = [d.get("type") for _, d in parsed[at[-1] + 1 :]] if at else []
    assert tail == (["response.failed"] if client == "openai-responses" and at else []), tail
    messages = []
    for i in at:
        data = parsed[i][1]
        error = data["error"] if isinstance(data.get("error"), dict) else data
        messages.append(error["message"])
    return messages


@pytest.mark.parametrize(
    ("client", "provider"),
    [
        ("anthropic", "openai-chat"),
        ("openai-responses", "gemini"),
        ("openai-chat", "anthropic"),
        ("gemini", "openai-responses"),
        ("anthropic", "anthropic"),
        ("openai-chat", "openai-chat"),
    ],
)
@pytest.mark.parametrize(
    "upstream", [b"", b": keep-alive\n\n", b"data: [DONE]\n\n", b"data: not json\n\n"]
)
def test_a_stream_without_any_event_ends_with_the_dialects_error(
    client: str, provider: str, upstream: bytes
) -> None:
    t = StreamTranslator(outbound(client, provider))
    out = translate_all(t, split(upstream))
    assert error_messages(client, out) == [
        "the provider ended the stream without sending any event"
    ]
    assert any(isinstance(e, ir.Error) for e in decoded(client, out))  # what its SDK sees
    assert t.close() == b"" and t.fail(502, "again") == b""  # one error event, nothing after


TRANSLATED = [(c, p) for c in NAMES for p in NAMES if c != p]  # passthrough relays its own


@pytest.mark.parametrize(("client", "provider"), TRANSLATED)
def test_an_upstream_error_event_becomes_the_clients_and_ends_the_stream(
    client: str, provider: str
) -> None:
    t = StreamTranslator(outbound(client, provider))
    out = translate_all(t, split(provider_stream(provider, midfail=True)))
    assert error_messages(client, out) == ["fake failure mid-stream"]
    assert b"[DONE]" not in out  # no success ending after the error
    assert any(isinstance(e, ir.Error) for e in decoded(client, out))
    assert t.feed(provider_stream(provider)) == b""  # nothing may follow the error event
    assert t.remembered() is None


def test_an_anthropic_rate_limit_mid_stream_keeps_its_429_for_a_chat_client() -> None:
    t = StreamTranslator(outbound("openai-chat", "anthropic"))
    upstream = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"usage":{"input_tokens":1}}}\n\nevent: error\ndata: {"type":"error","error":'
        b'{"type":"rate_limit_error","message":"slow down"}}\n\n'
    )
    out = translate_all(t, split(upstream))
    assert frames(out)[-1][1] == {
        "error": {
            "message": "slow down",
            "type": "rate_limit_exceeded",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


@pytest.mark.parametrize(
    ("dialect", "head"), [("anthropic", b"\n\n"), ("openai-chat", b"\n\n"), ("gemini", b"")]
)
def test_a_failure_after_relayed_bytes_starts_its_own_event(dialect: str, head: bytes) -> None:
    t = StreamTranslator(outbound(dialect, dialect, requested="up-model"))
    half = provider_stream(dialect)[:37]  # the relay stopped mid-frame
    assert t.feed(half) == half
    tail = t.fail(502, "the provider is unreachable: dropped")
    assert tail.startswith(head + b"event: error\n" if dialect == "anthropic" else head + b"data: ")
    parsed = SSEParser().feed(tail.removeprefix(head))
    assert "dropped" in parsed[-1][1]
    assert t.fail(502, "twice") == b"" and t.close() == b""


# --- Responses turns to remember ---------------------------------------------------------------


def test_a_translated_responses_turn_is_handed_over_once_it_ended() -> None:
    history = [ir.Message("user", [ir.Text("earlier")])]
    t = StreamTranslator(outbound("openai-responses", "anthropic", history=history))
    reads = split(provider_stream("anthropic"))
    body = b"".join(t.feed(chunk) for chunk in reads)
    assert t.remembered() is None  # not before the stream ended
    out = frames(body + t.close())
    remembered = t.remembered()
    assert remembered is not None
    final, answer = remembered
    assert final == out[-1][1]["response"]  # exactly what the client received last
    assert final["id"].startswith("resp_") and final["status"] == "completed"
    assert answer.role == "assistant"
    assert [type(p) for p in answer.parts] == [ir.Text, ir.ToolCall]
    assert answer.parts[0].text == plan().text
    assert json.loads(answer.parts[1].args) == TOOL_ARGS


def test_a_responses_turn_replayed_from_json_is_handed_over_too() -> None:
    t = StreamTranslator(outbound("openai-responses", "gemini", history=[]))
    t.whole(json.dumps(fmt.render("gemini", plan(calls=False))).encode())
    remembered = t.remembered()
    assert remembered is not None and remembered[1].parts == [ir.Text(plan().text)]


@pytest.mark.parametrize(
    ("client", "history"),
    [("openai-responses", None), ("anthropic", [])],  # store: false; not a Responses client
)
def test_nothing_is_handed_over_when_nothing_is_to_be_remembered(
    client: str, history: list[ir.Message] | None
) -> None:
    t = StreamTranslator(outbound(client, "openai-chat", history=history))
    translate_all(t, split(provider_stream("openai-chat")))
    assert t.remembered() is None
