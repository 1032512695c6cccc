"""Wire formats for the fake provider, written from the vendors' documented shapes (not from
bridge_app): what a request carried, and the responses/streams/errors it answers with."""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

MODELS = ["fake-model", "fake-model-2"]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@dataclass
class Seen:
    system: str = ""
    turns: int = 0
    images: int = 0
    results: list[tuple[str, str]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    last_text: str = ""
    after_tools: bool = False
    include_usage: bool = True


@dataclass
class Plan:
    model: str
    text: str
    calls: list[tuple[str, str, dict[str, Any]]]
    stop: str  # end | tool | max
    usage: tuple[int, int]
    include_usage: bool = True
    reasoning: str = ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text", "")) if "text" in content else ""
    return ""


IMAGE_TYPES = {"image_url", "input_image", "image"}
IMAGE_KEYS = {"inlineData", "inline_data", "fileData", "file_data"}


def _count_images(value: Any) -> int:
    if isinstance(value, list):
        return sum(_count_images(v) for v in value)
    if not isinstance(value, dict):
        return 0
    own = 1 if value.get("type") in IMAGE_TYPES or IMAGE_KEYS & set(value) else 0
    return own + sum(_count_images(v) for v in value.values())


def _chat(body: dict[str, Any], seen: Seen) -> None:
    for msg in body.get("messages", []):
        role = msg.get("role")
        if role in ("system", "developer"):
            seen.system += _text(msg.get("content"))
        elif role == "tool":
            seen.results.append((msg.get("tool_call_id", ""), _text(msg.get("content"))))
        else:
            seen.turns += 1
            if role == "user" and _text(msg.get("content")):
                seen.last_text = _text(msg.get("content"))
    seen.after_tools = bool(body.get("messages")) and body["messages"][-1].get("role") == "tool"
    seen.tools = [t["function"]["name"] for t in body.get("tools", [])]
    seen.include_usage = bool((body.get("stream_options") or {}).get("include_usage"))


def _responses(body: dict[str, Any], seen: Seen) -> None:
    seen.system = _text(body.get("instructions") or "")
    inp = body.get("input")
    items = [{"role": "user", "content": inp}] if isinstance(inp, str) else inp or []
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call_output":
            seen.results.append((item.get("call_id", ""), _text(item.get("output"))))
        elif kind == "message" and item.get("role") in ("system", "developer"):
            seen.system += _text(item.get("content"))
        elif kind == "message":
            seen.turns += 1
            if item.get("role") == "user" and _text(item.get("content")):
                seen.last_text = _text(item.get("content"))
    seen.after_tools = bool(items) and items[-1].get("type") == "function_call_output"
    seen.tools = [t["name"] for t in body.get("tools", []) if t.get("type") == "function"]


def _anthropic(body: dict[str, Any], seen: Seen) -> None:
    seen.system = _text(body.get("system") or "")
    for msg in body.get("messages", []):
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        seen.results += [(b.get("tool_use_id", ""), _text(b.get("content"))) for b in results]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        seen.turns += 1 if len(results) < len(blocks) else 0
        if msg.get("role") == "user" and text:
            seen.last_text = text
        seen.after_tools = bool(results) and not text
    seen.tools = [t["name"] for t in body.get("tools", [])]


def _gemini(body: dict[str, Any], seen: Seen) -> None:
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    seen.system = _text(system.get("parts", []))
    for content in body.get("contents", []):
        parts = content.get("parts", [])
        responses = [p.get("functionResponse") or p.get("function_response") for p in parts]
        responses = [r for r in responses if r]
        for r in responses:
            resp = r.get("response") or {}
            seen.results.append(
                (
                    r.get("id") or r.get("name", ""),
                    str(resp.get("output", resp.get("error", json.dumps(resp)))),
                )
            )
        text = "".join(p.get("text", "") for p in parts if "text" in p)
        seen.turns += 1 if len(responses) < len(parts) else 0
        if content.get("role") == "user" and text:
            seen.last_text = text
        seen.after_tools = bool(responses) and not text
    for tool in body.get("tools", []):
        seen.tools += [
            d["name"]
            for d in tool.get("functionDeclarations") or tool.get("function_declarations") or []
        ]


def extract(dialect: str, body: dict[str, Any]) -> Seen:
    seen = Seen()
    {
        "openai-chat": _chat,
        "openai-responses": _responses,
        "anthropic": _anthropic,
        "gemini": _gemini,
    }[dialect](body, seen)
    seen.images = _count_images(body)
    return seen


def plan(seen: Seen, model: str) -> Plan:
    results = ";".join(f"{i}={c}" for i, c in seen.results)
    said = seen.last_text[:200]  # a 64 MiB prompt must not become a 64 MiB answer
    text = (
        f"fake {model} system=[{seen.system}] turns={seen.turns} images={seen.images} "
        f"results=[{results}] said=[{said}]"
    )
    calls: list[tuple[str, str, dict[str, Any]]] = []
    stop = "max" if "[max]" in seen.last_text else "end"
    if "[tools]" in seen.last_text and seen.tools and not seen.after_tools:
        text = "Let me check."
        calls = [
            (secrets.token_hex(6), name, {"city": "Paris", "n": i})
            for i, name in enumerate(seen.tools[:2])
        ]
        stop = "tool"
    words = 1 + len(seen.system.split()) + len(seen.last_text[:10000].split()) + seen.turns
    reasoning = "Thinking it over." if "[think]" in seen.last_text else ""
    usage = (words, len(text.split()))
    return Plan(model, text, calls, stop, usage, seen.include_usage, reasoning)


def _split(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- OpenAI Chat -------------------------------------------------------------------------------


def _chat_usage(p: Plan) -> dict[str, Any]:
    return {
        "prompt_tokens": p.usage[0],
        "completion_tokens": p.usage[1],
        "total_tokens": sum(p.usage),
    }


def _chat_finish(p: Plan) -> str:
    return {"end": "stop", "tool": "tool_calls", "max": "length"}[p.stop]


def chat_json(p: Plan) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": p.text, "refusal": None}
    if p.reasoning:  # the de-facto field (DeepSeek, vLLM): not in OpenAI's schema
        msg["reasoning_content"] = p.reasoning
    if p.calls:
        msg["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, n, a in p.calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": p.model,
        "choices": [
            {"index": 0, "message": msg, "finish_reason": _chat_finish(p), "logprobs": None}
        ],
        "usage": _chat_usage(p),
    }


def _chunk(p: Plan, delta: dict[str, Any], finish: str | None = None) -> bytes:
    data = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": p.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def chat_stream(p: Plan, midfail: bool) -> list[bytes]:
    out = [_chunk(p, {"role": "assistant", "content": ""})]
    out += [_chunk(p, {"reasoning_content": t}) for t in _split(p.reasoning, 2) if p.reasoning]
    out += [_chunk(p, {"content": t}) for t in _split(p.text)]
    if midfail:
        error = {
            "error": {"message": "fake failure mid-stream", "type": "server_error", "code": None}
        }
        return [*out[:2], f"data: {json.dumps(error)}\n\n".encode()]
    for k, (i, name, args) in enumerate(p.calls):
        out.append(
            _chunk(
                p,
                {
                    "tool_calls": [
                        {
                            "index": k,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                },
            )
        )
        out += [
            _chunk(p, {"tool_calls": [{"index": k, "function": {"arguments": a}}]})
            for a in _split(json.dumps(args), 2)
        ]
    out.append(_chunk(p, {}, _chat_finish(p)))
    if p.include_usage:
        data = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": p.model,
            "choices": [],
            "usage": _chat_usage(p),
        }
        out.append(f"data: {json.dumps(data)}\n\n".encode())
    return [*out, b"data: [DONE]\n\n"]


# --- OpenAI Responses --------------------------------------------------------------------------


def _reasoning_item(p: Plan) -> list[dict[str, Any]]:
    summary = [{"type": "summary_text", "text": p.reasoning}]
    return [{"type": "reasoning", "id": "rs_fake", "summary": summary}] if p.reasoning else []


def _resp_items(p: Plan) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        *_reasoning_item(p),
        {
            "type": "message",
            "id": "msg_fake",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": p.text, "annotations": []}],
        },
    ]
    items += [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": n,
            "arguments": json.dumps(a),
            "status": "completed",
        }
        for i, n, a in p.calls
    ]
    return items


def responses_json(
    p: Plan, status: str = "completed", output: list[Any] | None = None
) -> dict[str, Any]:
    incomplete = None
    if p.stop == "max" and status == "completed":
        status, incomplete = "incomplete", {"reason": "max_output_tokens"}
    usage = {
        "input_tokens": p.usage[0],
        "output_tokens": p.usage[1],
        "total_tokens": sum(p.usage),
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": p.model,
        "output": _resp_items(p) if output is None else output,
        "usage": usage if status != "in_progress" else None,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": None,
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }


class _Seq:
    def __init__(self) -> None:
        self.n = 0

    def ev(self, kind: str, **data: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.n, **data}
        self.n += 1
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def _responses_reasoning(p: Plan, s: _Seq) -> list[bytes]:
    if not p.reasoning:
        return []
    ids = {"item_id": "rs_fake", "output_index": 0, "summary_index": 0}
    item = _reasoning_item(p)[0]
    return [
        s.ev("response.output_item.added", output_index=0, item={**item, "summary": []}),
        s.ev(
            "response.reasoning_summary_part.added",
            **ids,
            part={"type": "summary_text", "text": ""},
        ),
        s.ev("response.reasoning_summary_text.delta", **ids, delta=p.reasoning),
        s.ev("response.reasoning_summary_text.done", **ids, text=p.reasoning),
        s.ev("response.reasoning_summary_part.done", **ids, part=item["summary"][0]),
        s.ev("response.output_item.done", output_index=0, item=item),
    ]


def _responses_head(p: Plan, s: _Seq) -> list[bytes]:
    pending = responses_json(p, "in_progress", [])
    msg = {
        "type": "message",
        "id": "msg_fake",
        "status": "in_progress",
        "role": "assistant",
        "content": [],
    }
    part = {"type": "output_text", "text": "", "annotations": []}
    off = 1 if p.reasoning else 0
    return [
        s.ev("response.created", response=pending),
        s.ev("response.in_progress", response=pending),
        *_responses_reasoning(p, s),
        s.ev("response.output_item.added", output_index=off, item=msg),
        s.ev(
            "response.content_part.added",
            item_id="msg_fake",
            output_index=off,
            content_index=0,
            part=part,
        ),
    ]


def responses_stream(p: Plan, midfail: bool) -> list[bytes]:
    s = _Seq()
    out = _responses_head(p, s)
    off = 1 if p.reasoning else 0
    ids = {"item_id": "msg_fake", "output_index": off, "content_index": 0}
    out += [s.ev("response.output_text.delta", **ids, delta=t) for t in _split(p.text)]
    if midfail:
        return [
            *out[:5],
            s.ev("error", code="server_error", message="fake failure mid-stream", param=None),
        ]
    items = _resp_items(p)
    out.append(s.ev("response.output_text.done", **ids, text=p.text))
    out.append(s.ev("response.content_part.done", **ids, part=items[off]["content"][0]))
    out.append(s.ev("response.output_item.done", output_index=off, item=items[off]))
    for k, item in enumerate(items[off + 1 :], start=off + 1):
        out.append(
            s.ev(
                "response.output_item.added",
                output_index=k,
                item={**item, "arguments": "", "status": "in_progress"},
            )
        )
        out += [
            s.ev(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=k,
                delta=a,
            )
            for a in _split(item["arguments"], 2)
        ]
        out.append(
            s.ev(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=k,
                arguments=item["arguments"],
            )
        )
        out.append(s.ev("response.output_item.done", output_index=k, item=item))
    final = responses_json(p)
    return [*out, s.ev(f"response.{final['status']}", response=final)]


# --- Anthropic ---------------------------------------------------------------------------------


def _anth_stop(p: Plan) -> str:
    return {"end": "end_turn", "tool": "tool_use", "max": "max_tokens"}[p.stop]


def anthropic_json(p: Plan) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": p.text}]
    if p.reasoning:
        content.insert(0, {"type": "thinking", "thinking": p.reasoning, "signature": "sig-fake"})
    content += [
        {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a} for i, n, a in p.calls
    ]
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": p.model,
        "content": content,
        "stop_reason": _anth_stop(p),
        "stop_sequence": None,
        "usage": {"input_tokens": p.usage[0], "output_tokens": p.usage[1]},
    }


def _aev(kind: str, **data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _anthropic_head(p: Plan) -> list[bytes]:
    message = {
        **anthropic_json(p),
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": p.usage[0], "output_tokens": 1},
    }
    head = [_aev("message_start", message=message), _aev("ping")]
    if p.reasoning:
        block = {"type": "thinking", "thinking": "", "signature": ""}
        head += [
            _aev("content_block_start", index=0, content_block=block),
            _aev(
                "content_block_delta",
                index=0,
                delta={"type": "thinking_delta", "thinking": p.reasoning},
            ),
            _aev(
                "content_block_delta",
                index=0,
                delta={"type": "signature_delta", "signature": "sig-fake"},
            ),
            _aev("content_block_stop", index=0),
        ]
    off = 1 if p.reasoning else 0
    return [
        *head,
        _aev("content_block_start", index=off, content_block={"type": "text", "text": ""}),
    ]


def anthropic_stream(p: Plan, midfail: bool) -> list[bytes]:
    out = _anthropic_head(p)
    off = 1 if p.reasoning else 0
    out += [
        _aev("content_block_delta", index=off, delta={"type": "text_delta", "text": t})
        for t in _split(p.text)
    ]
    if midfail:
        return [
            *out[:4],
            _aev("error", error={"type": "overloaded_error", "message": "fake failure mid-stream"}),
        ]
    out.append(_aev("content_block_stop", index=off))
    for k, (i, name, args) in enumerate(p.calls, start=1 + off):
        out.append(
            _aev(
                "content_block_start",
                index=k,
                content_block={"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}},
            )
        )
        out += [
            _aev(
                "content_block_delta",
                index=k,
                delta={"type": "input_json_delta", "partial_json": a},
            )
            for a in _split(json.dumps(args), 2)
        ]
        out.append(_aev("content_block_stop", index=k))
    out.append(
        _aev(
            "message_delta",
            delta={"stop_reason": _anth_stop(p), "stop_sequence": None},
            usage={"output_tokens": p.usage[1]},
        )
    )
    return [*out, _aev("message_stop")]


# --- Gemini ------------------------------------------------------------------------------------


def _gusage(p: Plan) -> dict[str, Any]:
    return {
        "promptTokenCount": p.usage[0],
        "candidatesTokenCount": p.usage[1],
        "totalTokenCount": sum(p.usage),
    }


def _gresp(p: Plan, parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {
        "candidates": [cand],
        "usageMetadata": _gusage(p),
        "modelVersion": p.model,
        "responseId": "fake-response",
    }


def _gcalls(p: Plan) -> list[dict[str, Any]]:
    # Pre-Gemini-3 function calls carry no id: the bridge must cope.
    return [{"functionCall": {"name": n, "args": a}} for _, n, a in p.calls]


def gemini_json(p: Plan) -> dict[str, Any]:
    thought = [{"text": p.reasoning, "thought": True}] if p.reasoning else []
    parts = [*thought, {"text": p.text}, *_gcalls(p)]
    return _gresp(p, parts, "MAX_TOKENS" if p.stop == "max" else "STOP")


def _gframe(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\r\n\r\n".encode()


def gemini_stream(p: Plan, midfail: bool) -> list[bytes]:
    out = [_gframe(_gresp(p, [{"text": p.reasoning, "thought": True}]))] if p.reasoning else []
    out += [_gframe(_gresp(p, [{"text": t}])) for t in _split(p.text)]
    if midfail:
        return [
            *out[:1],
            _gframe(
                {"error": {"code": 500, "message": "fake failure mid-stream", "status": "INTERNAL"}}
            ),
        ]
    if p.calls:
        out.append(_gframe(_gresp(p, _gcalls(p))))
    return [*out, _gframe(_gresp(p, [{"text": ""}], "MAX_TOKENS" if p.stop == "max" else "STOP"))]


# --- dispatch ----------------------------------------------------------------------------------


def render(dialect: str, p: Plan) -> dict[str, Any]:
    return {
        "openai-chat": chat_json,
        "openai-responses": responses_json,
        "anthropic": anthropic_json,
        "gemini": gemini_json,
    }[dialect](p)


def stream(dialect: str, p: Plan, midfail: bool = False) -> list[bytes]:
    return {
        "openai-chat": chat_stream,
        "openai-responses": responses_stream,
        "anthropic": anthropic_stream,
        "gemini": gemini_stream,
    }[dialect](p, midfail)


def slow_frames(dialect: str, p: Plan) -> tuple[bytes, bytes]:
    """Opening frames, and one text delta to repeat."""
    if dialect == "openai-chat":
        return _chunk(p, {"role": "assistant", "content": ""}), _chunk(p, {"content": "."})
    if dialect == "openai-responses":
        s = _Seq()
        head = b"".join(_responses_head(p, s))
        return head, s.ev(
            "response.output_text.delta",
            item_id="msg_fake",
            output_index=0,
            content_index=0,
            delta=".",
        )
    if dialect == "anthropic":
        return b"".join(_anthropic_head(p)), _aev(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": "."}
        )
    return _gframe(_gresp(p, [{"text": "."}])), _gframe(_gresp(p, [{"text": "."}]))


def error(dialect: str, status: int, message: str) -> dict[str, Any]:
    if dialect == "anthropic":
        kind = {429: "rate_limit_error", 400: "invalid_request_error", 529: "overloaded_error"}.get(
            status, "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    if dialect == "gemini":
        return {
            "error": {
                "code": status,
                "message": message,
                "status": {429: "RESOURCE_EXHAUSTED", 400: "INVALID_ARGUMENT"}.get(
                    status, "INTERNAL"
                ),
            }
        }
    return {
        "error": {
            "message": message,
            "type": "rate_limit_exceeded" if status == 429 else "server_error",
            "param": None,
            "code": None,
        }
    }


def _model(dialect: str, m: str) -> dict[str, Any]:
    if dialect == "gemini":
        methods = ["generateContent"]
        return {
            "name": f"models/{m}",
            "version": "1",
            "displayName": m,
            "supportedGenerationMethods": methods,
        }
    if dialect == "anthropic":
        return {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
    return {"id": m, "object": "model", "created": 0, "owned_by": "fake"}


def meta(dialect: str, path: str) -> dict[str, Any]:
    """Model lists, model retrieval and token counts."""
    if path.endswith("count_tokens"):
        return {"input_tokens": 42}
    if path.endswith(":countTokens"):
        return {"totalTokens": 42}
    if path.endswith("/input_tokens"):
        return {"object": "response.input_tokens", "input_tokens": 42}
    tail = path.rstrip("/").rsplit("/", 1)[-1]
    if tail != "models":
        return _model(dialect, tail)
    models = [_model(dialect, m) for m in MODELS]
    if dialect == "gemini":
        return {"models": models}
    if dialect == "anthropic":
        return {"data": models, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}
    return {"object": "list", "data": models}
