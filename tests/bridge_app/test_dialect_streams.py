"""The four codecs' streaming halves, bytes in and bytes out: every encoder's output decodes back
to the same answer, every client×provider pair translates, each dialect keeps its own grammar."""

from __future__ import annotations

import json

import pytest

from bridge_app import dialects, ir
from bridge_app.streams import SSEParser
from tests.bridge_app.test_dialects import NAMES


def events() -> list[ir.Event]:
    return [
        ir.Start("up"),
        ir.BlockStart(0, "text"),
        ir.TextDelta(0, "hel"),
        ir.TextDelta(0, "lo"),
        ir.BlockStop(0),
        ir.BlockStart(1, "tool", "call_1", "f"),
        ir.ArgsDelta(1, '{"a":'),
        ir.ArgsDelta(1, " 1}"),
        ir.BlockStop(1),
        ir.BlockStart(2, "tool", "call_2", "g"),
        ir.ArgsDelta(2, "{}"),
        ir.BlockStop(2),
        ir.UsageEvent(ir.Usage(10, 0, 0, 5)),
        ir.Finish("tool_use"),
    ]


def encode_all(name: str, evs: list[ir.Event]) -> bytes:
    enc = dialects.stream(name).StreamEncoder("client-model", True)
    return b"".join(enc.encode(e) for e in evs) + enc.close()


def decode_all(name: str, raw: bytes) -> list[ir.Event]:
    dec = dialects.stream(name).StreamDecoder()
    out: list[ir.Event] = []
    for event, data in SSEParser().feed(raw):
        if data != "[DONE]":
            out += dec.feed(event, json.loads(data))
    return out + dec.close()


@pytest.mark.parametrize("name", NAMES)
def test_stream_encoder_output_decodes_back_to_the_same_answer(name: str) -> None:
    resp = ir.collect(decode_all(name, encode_all(name, events())), "client-model")
    assert resp.stop == "tool_use"
    assert [
        p.text if isinstance(p, ir.Text) else (p.id, p.name, json.loads(p.args)) for p in resp.parts
    ] == [
        "hello",
        ("call_1", "f", {"a": 1}),
        ("call_2", "g", {}),
    ]
    assert (resp.usage.input_total, resp.usage.output_total) == (10, 5)


@pytest.mark.parametrize("client", NAMES)
@pytest.mark.parametrize("provider", NAMES)
def test_stream_translates_across_every_pair(client: str, provider: str) -> None:
    upstream = encode_all(provider, events())
    enc = dialects.stream(client).StreamEncoder("client-model", True)
    translated = b"".join(enc.encode(e) for e in decode_all(provider, upstream)) + enc.close()
    resp = ir.collect(decode_all(client, translated), "client-model")
    assert [getattr(p, "text", None) or getattr(p, "name", None) for p in resp.parts] == [
        "hello",
        "f",
        "g",
    ]
    assert resp.stop == "tool_use" and resp.usage.output_total == 5


def test_anthropic_stream_has_event_lines_dense_indices_and_usage() -> None:
    frames = SSEParser().feed(encode_all("anthropic", events()))
    assert frames[0][0] == "message_start" and frames[-1][0] == "message_stop"
    starts = [json.loads(d)["index"] for e, d in frames if e == "content_block_start"]
    assert starts == [0, 1, 2]
    delta = next(json.loads(d) for e, d in frames if e == "message_delta")
    assert delta["usage"]["output_tokens"] == 5 and delta["delta"]["stop_reason"] == "tool_use"


def test_gemini_stream_frames_are_data_only_and_calls_arrive_whole() -> None:
    raw = encode_all("gemini", events())
    assert b"event:" not in raw and b"[DONE]" not in raw and raw.startswith(b"data: ")
    frames = [json.loads(d) for _, d in SSEParser().feed(raw)]
    calls = [
        p["functionCall"]
        for f in frames
        for p in f["candidates"][0]["content"]["parts"]
        if "functionCall" in p
    ]
    assert calls == [
        {"id": "call_1", "name": "f", "args": {"a": 1}},
        {"id": "call_2", "name": "g", "args": {}},
    ]
    assert frames[-1]["candidates"][0]["finishReason"] == "STOP"


def test_responses_stream_keeps_one_id_and_counts_sequence_numbers() -> None:
    frames = [json.loads(d) for _, d in SSEParser().feed(encode_all("openai-responses", events()))]
    assert frames[0]["type"] == "response.created" and frames[-1]["type"] == "response.completed"
    assert [f["sequence_number"] for f in frames] == list(range(len(frames)))
    assert frames[0]["response"]["id"] == frames[-1]["response"]["id"]


def test_chat_stream_tool_indices_are_ordinals_and_ends_with_done() -> None:
    raw = encode_all("openai-chat", events())
    assert raw.endswith(b"data: [DONE]\n\n")
    chunks = [json.loads(d) for _, d in SSEParser().feed(raw) if d != "[DONE]"]
    firsts = [
        tc
        for c in chunks
        if c["choices"]
        for tc in c["choices"][0]["delta"].get("tool_calls", [])
        if "id" in tc
    ]
    assert [(t["index"], t["id"]) for t in firsts] == [(0, "call_1"), (1, "call_2")]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5


@pytest.mark.parametrize("name", NAMES)
def test_mid_stream_error_is_the_dialects_error_event(name: str) -> None:
    enc = dialects.stream(name).StreamEncoder("m", True)
    raw = enc.encode(ir.Start("x")) + enc.encode(ir.Error(502, "boom")) + enc.close()
    decoded = decode_all(name, raw)
    assert any(isinstance(e, ir.Error) and "boom" in e.message for e in decoded)


def test_sse_parser_keeps_partial_frames_and_accepts_crlf() -> None:
    parser = SSEParser()
    assert parser.feed(b'event: a\r\ndata: {"x"') == []
    assert parser.feed(b": 1}\r\n\r\ndata:2\n\n") == [("a", '{"x": 1}'), ("", "2")]
