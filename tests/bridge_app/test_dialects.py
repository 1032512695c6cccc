"""The four codecs, dictionaries in and dictionaries out: requests, responses, streams, errors,
model lists. No server: bridge_app.ir and bridge_app.dialects are plain Python."""

from __future__ import annotations

import json

import pytest

from bridge_app import dialects, ir

NAMES = list(dialects.NAMES)
PNG = "iVBORw0KGgoAAAANSUhEUg=="


def rich_request() -> ir.Request:
    """System, multi-turn, an image, two parallel tool calls and their results."""
    return ir.Request(
        model="m",
        system=["be brief"],
        messages=[
            ir.Message("user", [ir.Text("look"), ir.Image("image/png", PNG)]),
            ir.Message(
                "assistant",
                [
                    ir.Text("checking"),
                    ir.ToolCall("call_a", "weather", '{"city": "Paris"}'),
                    ir.ToolCall("call_b", "time", '{"tz": "CET"}'),
                ],
            ),
            ir.Message(
                "user",
                [
                    ir.ToolResult("call_a", [ir.Text("sunny")]),
                    ir.ToolResult("call_b", [ir.Text("noon")]),
                ],
            ),
            ir.Message("user", [ir.Text("thanks")]),
        ],
        tools=[
            ir.Tool("weather", "w", {"type": "object", "properties": {"city": {"type": "string"}}})
        ],
        tool_choice="auto",
        max_tokens=100,
        temperature=0.5,
        stop=["END"],
    )


def summary(req: ir.Request) -> dict:
    calls = [
        (p.id, p.name, json.loads(p.args))
        for m in req.messages
        for p in m.parts
        if isinstance(p, ir.ToolCall)
    ]
    results = [
        (p.call_id, p.text()) for m in req.messages for p in m.parts if isinstance(p, ir.ToolResult)
    ]
    texts = [p.text for m in req.messages for p in m.parts if isinstance(p, ir.Text)]
    images = [p.data for m in req.messages for p in m.parts if isinstance(p, ir.Image)]
    return {
        "system": req.system,
        "calls": calls,
        "results": results,
        "texts": texts,
        "images": images,
        "tools": [t.name for t in req.tools],
        "max": req.max_tokens,
    }


@pytest.mark.parametrize("name", NAMES)
def test_request_survives_encode_then_decode_in_every_dialect(name: str) -> None:
    codec = dialects.get(name)
    body = codec.encode_request(rich_request())
    back = codec.decode_request(json.loads(json.dumps(body)), "m")
    assert summary(back) == summary(rich_request())


@pytest.mark.parametrize("client", NAMES)
@pytest.mark.parametrize("provider", NAMES)
def test_request_translates_across_every_pair(client: str, provider: str) -> None:
    body = dialects.get(client).encode_request(rich_request())
    req = dialects.get(client).decode_request(body, "m")
    upstream = dialects.get(provider).encode_request(req)
    assert summary(dialects.get(provider).decode_request(upstream, "m")) == summary(rich_request())


def test_openai_chat_request_fields() -> None:
    body = {
        "model": "gpt",
        "messages": [
            {"role": "developer", "content": "sys"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                ],
            },
        ],
        "tools": [
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        ],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "max_tokens": 7,
        "stop": "X",
        "stream": True,
    }
    req = dialects.get("openai-chat").decode_request(body)
    assert req.system == ["sys"] and req.stream and req.max_tokens == 7 and req.stop == ["X"]
    assert req.tool_choice == {"name": "f"}
    assert req.messages[0].parts[1] == ir.Image("image/png", PNG)
    anth = dialects.get("anthropic").encode_request(req)
    assert anth["tool_choice"] == {"type": "tool", "name": "f"} and anth["system"] == "sys"
    assert anth["messages"][0]["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": PNG,
    }
    gem = dialects.get("gemini").encode_request(req)
    assert gem["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY",
        "allowedFunctionNames": ["f"],
    }
    assert gem["generationConfig"] == {"maxOutputTokens": 7, "stopSequences": ["X"]}


def test_anthropic_requires_max_tokens_so_a_default_is_sent() -> None:
    req = ir.Request(model="m", messages=[ir.Message("user", [ir.Text("x")])])
    assert dialects.get("anthropic").encode_request(req)["max_tokens"] == 4096


def test_gemini_reads_snake_case_and_uppercase_schemas() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"inline_data": {"mime_type": "image/jpeg", "data": PNG}}]}
        ],
        "system_instruction": {"role": "user", "parts": [{"text": "sys"}]},
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "f",
                        "parameters": {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}},
                    }
                ]
            }
        ],
    }
    req = dialects.get("gemini").decode_request(body, "models/gem")
    assert req.model == "gem" and req.system == ["sys"]
    assert req.messages[0].parts == [ir.Image("image/jpeg", PNG)]
    assert req.tools[0].schema == {"type": "object", "properties": {"a": {"type": "string"}}}


def test_gemini_function_responses_without_ids_match_calls_by_name() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "f", "args": {}}},
                    {"functionCall": {"name": "g", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "g", "response": {"output": "G"}}},
                    {"functionResponse": {"name": "f", "response": {"output": "F"}}},
                ],
            },
        ]
    }
    req = dialects.get("gemini").decode_request(body, "m")
    ids = {p.name: p.id for p in req.messages[1].parts}
    results = {p.call_id: p.text() for p in req.messages[2].parts}
    assert results == {ids["g"]: "G", ids["f"]: "F"}


def test_responses_input_items_and_instructions() -> None:
    body = {
        "model": "m",
        "instructions": "sys",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
                ],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "f",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "done"},
        ],
        "max_output_tokens": 9,
    }
    req = dialects.get("openai-responses").decode_request(body)
    assert summary(req)["results"] == [("call_1", "done")] and req.max_tokens == 9
    chat = dialects.get("openai-chat").encode_request(req)
    assert [m["role"] for m in chat["messages"]] == ["system", "user", "assistant", "tool"]
    assert chat["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "done"}


def test_mid_conversation_system_becomes_a_marked_user_turn_for_anthropic() -> None:
    req = ir.Request(
        model="m",
        messages=[ir.Message("user", [ir.Text("a")]), ir.Message("system", [ir.Text("rule")])],
    )
    body = dialects.get("anthropic").encode_request(req)
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "<system-reminder>rule</system-reminder>"},
            ],
        }
    ]


@pytest.mark.parametrize("name", NAMES)
def test_decode_rejects_bodies_without_messages(name: str) -> None:
    with pytest.raises(ir.BridgeError) as err:
        dialects.get(name).decode_request({"model": "m"}, "m")
    assert err.value.status == 400


# --- responses -------------------------------------------------------------------------------


def rich_response(stop: ir.Stop = "tool_use") -> ir.Response:
    parts = [
        ir.Text("hello"),
        ir.ToolCall("call_1", "f", '{"a": 1}'),
        ir.ToolCall("call_2", "g", "{}"),
    ]
    return ir.Response("x", "client-model", parts, stop, None, ir.Usage(10, 0, 0, 5, 0))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("stop", ["end", "tool_use", "max_tokens"])
def test_response_survives_encode_then_decode(name: str, stop: ir.Stop) -> None:
    codec = dialects.get(name)
    parts = rich_response().parts if stop == "tool_use" else [ir.Text("hello")]
    resp = ir.Response("x", "client-model", parts, stop, None, ir.Usage(10, 0, 0, 5, 0))
    back = codec.decode_response(json.loads(json.dumps(codec.encode_response(resp))))
    assert back.stop == stop
    assert [
        (type(p), getattr(p, "text", None) or getattr(p, "name", None)) for p in back.parts
    ] == [(type(p), getattr(p, "text", None) or getattr(p, "name", None)) for p in parts]
    assert (back.usage.input_total, back.usage.output_total) == (10, 5)


def test_response_shapes_carry_the_requested_model() -> None:
    resp = rich_response()
    assert (
        dialects.get("openai-chat").encode_response(resp)["choices"][0]["finish_reason"]
        == "tool_calls"
    )
    assert dialects.get("openai-chat").encode_response(resp)["model"] == "client-model"
    assert dialects.get("anthropic").encode_response(resp)["stop_reason"] == "tool_use"
    assert dialects.get("gemini").encode_response(resp)["modelVersion"] == "client-model"
    out = dialects.get("openai-responses").encode_response(resp)
    assert [i["type"] for i in out["output"]] == ["message", "function_call", "function_call"]
    assert out["output"][1]["call_id"] == "call_1" and out["status"] == "completed"


def test_anthropic_usage_excludes_cached_tokens() -> None:
    resp = ir.Response("x", "m", [ir.Text("a")], usage=ir.Usage(100, 60, 10, 5))
    usage = dialects.get("anthropic").encode_response(resp)["usage"]
    assert usage["input_tokens"] == 30 and usage["cache_read_input_tokens"] == 60


def test_gemini_stop_with_function_calls_is_tool_use() -> None:
    body = {
        "candidates": [
            {
                "content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]},
                "finishReason": "STOP",
            }
        ]
    }
    resp = dialects.get("gemini").decode_response(body)
    assert resp.stop == "tool_use" and resp.parts[0].id.startswith("call_")


# --- errors and model lists ------------------------------------------------------------------


def test_errors_in_each_dialects_shape() -> None:
    assert dialects.get("openai-chat").encode_error(404, "no")["error"]["type"] == "not_found_error"
    assert dialects.get("anthropic").encode_error(429, "slow") == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow"},
    }
    assert dialects.get("gemini").encode_error(504, "late") == {
        "error": {"code": 504, "message": "late", "status": "DEADLINE_EXCEEDED"}
    }
    for name in NAMES:
        codec = dialects.get(name)
        assert codec.decode_error(codec.encode_error(400, "bad thing")) == "bad thing"


def test_model_lists_in_each_dialects_shape() -> None:
    ids = ["a", "b"]
    assert dialects.get("openai-chat").encode_model_list(ids)["data"][1] == {
        "id": "b",
        "object": "model",
        "created": 0,
        "owned_by": "svc",
    }
    anth = dialects.get("anthropic").encode_model_list(ids)
    assert (anth["has_more"], anth["first_id"], anth["last_id"]) == (False, "a", "b")
    assert dialects.get("gemini").encode_model_list(ids)["models"][0]["name"] == "models/a"


def test_gemini_history_calls_from_other_models_carry_the_bypass_signature() -> None:
    req = rich_request()
    body = dialects.get("gemini").encode_request(req)
    model_turn = next(c for c in body["contents"] if c["role"] == "model")
    calls = [p for p in model_turn["parts"] if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == "skip_thought_signature_validator"
    assert "thoughtSignature" not in calls[1]  # only the first call of a turn needs one
    req.messages[1].parts[1].meta["thought_signature"] = "real-sig"
    body = dialects.get("gemini").encode_request(req)
    model_turn = next(c for c in body["contents"] if c["role"] == "model")
    assert [p.get("thoughtSignature") for p in model_turn["parts"] if "functionCall" in p] == [
        "real-sig",
        None,
    ]


def test_a_whole_response_replays_as_stream_events() -> None:
    resp = rich_response()
    back = ir.collect(ir.events_of(resp), "client-model")
    assert back.parts == resp.parts and back.stop == resp.stop and back.usage == resp.usage


def test_responses_custom_tools_become_functions_with_one_input_string() -> None:
    body = {
        "model": "m",
        "input": [
            {"role": "user", "content": "patch it"},
            {
                "type": "custom_tool_call",
                "call_id": "call_p",
                "name": "apply_patch",
                "input": "*** Begin Patch",
            },
            {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done"},
        ],
        "tools": [{"type": "custom", "name": "apply_patch", "description": "edit files"}],
    }
    req = dialects.get("openai-responses").decode_request(body)
    anth = dialects.get("anthropic").encode_request(req)
    assert anth["tools"][0]["input_schema"]["properties"] == {"input": {"type": "string"}}
    assert anth["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": "call_p",
            "name": "apply_patch",
            "input": {"input": "*** Begin Patch"},
        }
    ]
    assert anth["messages"][2]["content"][0]["tool_use_id"] == "call_p"
