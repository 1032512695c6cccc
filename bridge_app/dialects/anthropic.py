"""Anthropic Messages: `POST {base}/v1/messages`, SSE with mandatory `event:` lines."""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects.common import (
    dumps,
    image_from_url,
    items,
    merge_turns,
    number,
    obj,
    rfc3339,
    stop_list,
    text_of,
)

NAME = "anthropic"
PATHS: dict[str, str] = {"messages": "generate", "messages/count_tokens": "count_tokens"}
DEFAULT_MAX_TOKENS = 4096  # Anthropic requires max_tokens; LiteLLM uses the same default
API_VERSION = "2023-06-01"
EFFORT_BUDGET = {"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}

STOP_OUT = {
    "end": "end_turn",
    "stop_sequence": "stop_sequence",
    "max_tokens": "max_tokens",
    "tool_use": "tool_use",
    "filtered": "refusal",
    "pause": "pause_turn",
    "error": "end_turn",
}
STOP_IN: dict[str, ir.Stop] = {
    "end_turn": "end",
    "stop_sequence": "stop_sequence",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "tool_use": "tool_use",
    "refusal": "filtered",
    "pause_turn": "pause",
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


# --- requests --------------------------------------------------------------------------------


def _image(source: dict[str, Any]) -> ir.Image:
    if source.get("type") == "base64":
        return ir.Image(
            media_type=source.get("media_type", "image/png"), data=source.get("data", "")
        )
    return image_from_url(source.get("url", ""))


def _result_content(content: Any) -> list[ir.Text | ir.Image]:
    if isinstance(content, str):
        return [ir.Text(content)]
    out: list[ir.Text | ir.Image] = []
    for block in items(content, "tool_result content"):
        if block.get("type") == "image":
            out.append(_image(block.get("source") or {}))
        elif block.get("type") == "text":
            out.append(ir.Text(block.get("text", "")))
    return out


def _block(block: dict[str, Any]) -> ir.Part | None:
    kind = block.get("type")
    if kind == "text":
        return ir.Text(block.get("text", ""))
    if kind == "image":
        return _image(block.get("source") or {})
    if kind == "tool_use":
        return ir.ToolCall(
            block.get("id", ""), block.get("name", ""), dumps(block.get("input") or {})
        )
    if kind == "tool_result":
        content = _result_content(block.get("content", ""))
        return ir.ToolResult(block.get("tool_use_id", ""), content, bool(block.get("is_error")))
    if kind == "thinking":
        return ir.Reasoning(block.get("thinking", ""), block.get("signature", ""), NAME)
    return None  # redacted_thinking, documents, server tool blocks: not carried across dialects


def _parts(content: Any) -> list[ir.Part]:
    if isinstance(content, str):
        return [ir.Text(content)]
    parts = [_block(obj(b, "each content block")) for b in items(content, "content")]
    return [p for p in parts if p is not None]


def _tool_choice(req: ir.Request, choice: dict[str, Any]) -> None:
    kind = choice.get("type")
    req.tool_choice = {"any": "required", "tool": {"name": choice.get("name", "")}}.get(kind, kind)  # type: ignore[assignment]
    if choice.get("disable_parallel_tool_use"):
        req.parallel_tool_calls = False


def decode_request(body: dict[str, Any], model: str = "") -> ir.Request:
    model = body.get("model") or model
    if not isinstance(model, str) or not model:
        raise ir.bad_request("model: field required")
    req = ir.Request(
        model=model, stream=bool(body.get("stream")), max_tokens=body.get("max_tokens")
    )
    system = body.get("system")
    if system:
        req.system.append(text_of(system))
    for msg in items(body.get("messages"), "messages"):
        msg = obj(msg, "each message")
        role = msg.get("role")
        if role not in ("user", "assistant", "system"):
            raise ir.bad_request(f"messages: unknown role {role!r}")
        req.messages.append(ir.Message(role, _parts(msg.get("content"))))
    if not req.messages:
        raise ir.bad_request("messages: at least one message is required")
    for tool in items(body.get("tools"), "tools"):
        if (
            "input_schema" in tool
        ):  # server tools (web_search_...) have no schema and stay upstream-only
            req.tools.append(
                ir.Tool(tool.get("name", ""), tool.get("description", ""), tool["input_schema"])
            )
    if isinstance(body.get("tool_choice"), dict):
        _tool_choice(req, body["tool_choice"])
    req.temperature = number(body.get("temperature"), "temperature")
    req.top_p = number(body.get("top_p"), "top_p")
    req.top_k = body.get("top_k")
    req.stop = stop_list(body.get("stop_sequences"))
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens") or 0
        req.reasoning_effort = "low" if budget <= 2048 else "medium" if budget <= 8192 else "high"
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        req.json_schema = {"name": "output", "schema": fmt.get("schema", {})}
    req.user = (body.get("metadata") or {}).get("user_id")
    return req


def _encode_image(part: ir.Image) -> dict[str, Any]:
    if part.url:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": part.media_type, "data": part.data},
    }


def _encode_part(part: ir.Part) -> dict[str, Any] | None:
    if isinstance(part, ir.Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ir.Image):
        return _encode_image(part)
    if isinstance(part, ir.ToolCall):
        return {
            "type": "tool_use",
            "id": part.id,
            "name": part.name,
            "input": ir.parse_args(part.args),
        }
    if isinstance(part, ir.ToolResult):
        content = [
            _encode_part(p) for p in part.content if not (isinstance(p, ir.Text) and not p.text)
        ]
        out = {"type": "tool_result", "tool_use_id": part.call_id, "content": content}
        if part.is_error:
            out["is_error"] = True
        return out
    if isinstance(part, ir.Reasoning) and part.origin == NAME and part.signature:
        return {"type": "thinking", "thinking": part.text, "signature": part.signature}
    return None  # foreign reasoning: its signature would be rejected


def _encode_message(msg: ir.Message) -> dict[str, Any]:
    if msg.role == "system":  # mid-conversation system text: a marked user turn (hard case 6)
        text = "".join(p.text for p in msg.parts if isinstance(p, ir.Text))
        return {
            "role": "user",
            "content": [{"type": "text", "text": f"<system-reminder>{text}</system-reminder>"}],
        }
    # Tool results must come first in their user turn.
    parts = sorted(msg.parts, key=lambda p: not isinstance(p, ir.ToolResult))
    blocks = [b for b in (_encode_part(p) for p in parts) if b is not None]
    return {"role": msg.role, "content": blocks}


def _encode_tools(req: ir.Request, body: dict[str, Any]) -> None:
    body["tools"] = [
        {"name": t.name, "description": t.description, "input_schema": t.schema} for t in req.tools
    ]
    choice = req.tool_choice
    tc: dict[str, Any] | None = None
    if isinstance(choice, dict):
        tc = {"type": "tool", "name": choice["name"]}
    elif choice:
        tc = {"type": {"required": "any"}.get(choice, choice)}
    if req.parallel_tool_calls is False:
        tc = (tc or {"type": "auto"}) | {"disable_parallel_tool_use": True}
    if tc:
        body["tool_choice"] = tc


def encode_request(req: ir.Request) -> dict[str, Any]:
    messages = [_encode_message(m) for m in merge_turns(req.messages)]
    body: dict[str, Any] = {
        "model": req.model,
        "max_tokens": req.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": merge_same_role(messages),
    }
    if req.system:
        body["system"] = "\n\n".join(s for s in req.system if s)
    if req.stream:
        body["stream"] = True
    if req.temperature is not None:
        body["temperature"] = min(req.temperature, 1.0)  # Anthropic's range is 0-1
    elif req.top_p is not None:  # newer Claude models reject temperature and top_p together
        body["top_p"] = req.top_p
    if req.top_k is not None:
        body["top_k"] = req.top_k
    if req.stop:
        body["stop_sequences"] = req.stop
    if req.tools:
        _encode_tools(req, body)
    budget = EFFORT_BUDGET.get(req.reasoning_effort or "")
    if budget and body["max_tokens"] > budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if req.json_schema:
        body["output_config"] = {
            "format": {"type": "json_schema", "schema": req.json_schema.get("schema", {})}
        }
    if req.user:
        body["metadata"] = {"user_id": req.user}
    return body


def merge_same_role(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in messages:
        if out and out[-1]["role"] == msg["role"]:
            out[-1]["content"] = out[-1]["content"] + msg["content"]
        else:
            out.append(msg)
    return out


# --- responses -------------------------------------------------------------------------------


def _usage_in(u: dict[str, Any] | None, base: ir.Usage | None = None) -> ir.Usage:
    u = u or {}
    usage = base or ir.Usage()
    read = u.get("cache_read_input_tokens")
    write = u.get("cache_creation_input_tokens")
    if read is not None:
        usage.cache_read = read
    if write is not None:
        usage.cache_write = write
    if u.get("input_tokens") is not None:
        usage.input_total = u["input_tokens"] + usage.cache_read + usage.cache_write
    if u.get("output_tokens") is not None:
        usage.output_total = u["output_tokens"]
    return usage


def _usage_out(u: ir.Usage) -> dict[str, Any]:
    return {
        "input_tokens": max(u.input_total - u.cache_read - u.cache_write, 0),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cache_read,
        "output_tokens": u.output_total,
    }


def decode_response(body: dict[str, Any]) -> ir.Response:
    return ir.Response(
        id=body.get("id", ""),
        model=body.get("model", ""),
        parts=_parts(body.get("content") or []),
        stop=STOP_IN.get(body.get("stop_reason") or "end_turn", "end"),
        stop_sequence=body.get("stop_sequence"),
        usage=_usage_in(body.get("usage")),
    )


def _msg_id(upstream_id: str) -> str:
    return upstream_id if upstream_id.startswith("msg_") else ir.new_id("msg_")


def encode_response(resp: ir.Response) -> dict[str, Any]:
    content = []
    for part in resp.parts:
        if isinstance(part, ir.Reasoning):
            content.append(
                {
                    "type": "thinking",
                    "thinking": part.text,
                    "signature": part.signature if part.origin == NAME else "",
                }
            )
        elif (block := _encode_part(part)) is not None:
            content.append(block)
    return {
        "id": _msg_id(resp.id),
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": content,
        "stop_reason": STOP_OUT[resp.stop],
        "stop_sequence": resp.stop_sequence,
        "usage": _usage_out(resp.usage),
    }


# --- errors, models, transport -------------------------------------------------------------


def encode_error(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def decode_error(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))
    return dumps(body)[:2000]


def encode_model(model_id: str) -> dict[str, Any]:
    return {"type": "model", "id": model_id, "display_name": model_id, "created_at": rfc3339()}


def encode_model_list(ids: list[str]) -> dict[str, Any]:
    return {
        "data": [encode_model(i) for i in ids],
        "has_more": False,  # one page: otherwise the SDK keeps paging
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }


def upstream_url(base: str, model: str, stream: bool) -> str:
    return f"{base}/v1/messages"


def auth_headers(key: str) -> dict[str, str]:
    headers = {"anthropic-version": API_VERSION}
    if key:
        headers["x-api-key"] = key
    return headers


def rewrite_model(data: dict[str, Any], model: str) -> None:
    if "model" in data:
        data["model"] = model
    elif isinstance(data.get("message"), dict):
        data["message"]["model"] = model


def encode_token_count(total: int) -> dict[str, Any]:
    return {"input_tokens": total}


def count_tokens_url(base: str, model: str) -> str:
    return f"{base}/v1/messages/count_tokens"
