"""Wire formats for the fake provider, written from the vendors' documented shapes (not from
bridge_app): Anthropic and Gemini answers here, OpenAI's in bridge_fake_openai.py, the reading of
a request in bridge_fake_plan.py; `render`, `stream`, `error` and `meta` dispatch by dialect."""

from __future__ import annotations

import json
from typing import Any

from harness.fakes.bridge_fake_openai import (
    _chunk,
    _responses_head,
    _Seq,
    chat_json,
    chat_stream,
    responses_json,
    responses_stream,
)
from harness.fakes.bridge_fake_plan import (  # noqa: F401
    MODELS,
    PNG,
    Plan,
    Seen,
    _split,
    extract,
    plan,
)

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
