"""OpenAI Chat Completions: `POST {base}/chat/completions`, SSE `data:` chunks ending in [DONE].

Every dialect module has the same functions: decode/encode_request, decode/encode_response,
encode_error/decode_error, encode_model(_list), upstream_url, auth_headers, rewrite_model
(passthrough); its `_stream.py` sibling has StreamDecoder/StreamEncoder.
"""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects.common import (
    dumps,
    image_from_url,
    items,
    now,
    number,
    obj,
    stop_list,
    text_of,
)

NAME = "openai-chat"
PATHS: dict[str, str] = {"chat/completions": "generate"}

FINISH_OUT = {
    "end": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "filtered": "content_filter",
    "pause": "stop",
    "error": "stop",
}
FINISH_IN: dict[str, ir.Stop] = {
    "stop": "end",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "filtered",
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_exceeded",
}


# --- requests --------------------------------------------------------------------------------


def _user_parts(content: Any) -> list[ir.Part]:
    if isinstance(content, str):
        return [ir.Text(content)]
    parts: list[ir.Part] = []
    for block in items(content, "message content"):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(ir.Text(block.get("text", "")))
        elif kind == "image_url":
            url = block.get("image_url")
            parts.append(image_from_url(url.get("url", "") if isinstance(url, dict) else url))
    return parts


def _assistant_parts(msg: dict[str, Any]) -> list[ir.Part]:
    parts: list[ir.Part] = []
    if msg.get("reasoning_content"):
        parts.append(ir.Reasoning(text=msg["reasoning_content"]))
    text = text_of(msg.get("content"))
    if text:
        parts.append(ir.Text(text))
    for call in items(msg.get("tool_calls"), "tool_calls"):
        fn = call.get("function") or {}
        parts.append(
            ir.ToolCall(
                call.get("id") or ir.new_id("call_"), fn.get("name", ""), fn.get("arguments") or ""
            )
        )
    return parts


def _decode_message(req: ir.Request, msg: Any) -> None:
    msg = obj(msg, "each message")
    role = msg.get("role")
    if role in ("system", "developer"):
        if not req.messages:
            req.system.append(text_of(msg.get("content")))
        else:
            req.messages.append(ir.Message("system", [ir.Text(text_of(msg.get("content")))]))
    elif role == "user":
        req.messages.append(ir.Message("user", _user_parts(msg.get("content"))))
    elif role == "assistant":
        req.messages.append(ir.Message("assistant", _assistant_parts(msg)))
    elif role in ("tool", "function"):
        call_id = msg.get("tool_call_id") or msg.get("name") or ""
        result = ir.ToolResult(call_id, [ir.Text(text_of(msg.get("content")))])
        req.messages.append(ir.Message("user", [result]))
    else:
        raise ir.bad_request(f"unknown message role {role!r}")


def _tool_choice(value: Any) -> str | dict[str, str] | None:
    if isinstance(value, dict):
        return {"name": (value.get("function") or {}).get("name", "")}
    return value


def decode_request(body: dict[str, Any], model: str = "") -> ir.Request:
    model = body.get("model") or model
    if not isinstance(model, str) or not model:
        raise ir.bad_request("`model` is required")
    req = ir.Request(model=model, stream=bool(body.get("stream")))
    messages = items(body.get("messages"), "messages")
    if not messages:
        raise ir.bad_request("`messages` must be a non-empty array")
    for msg in messages:
        _decode_message(req, msg)
    for tool in items(body.get("tools"), "tools"):
        fn = tool.get("function") or {}
        req.tools.append(
            ir.Tool(
                fn.get("name", ""),
                fn.get("description", ""),
                fn.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    req.tool_choice = _tool_choice(body.get("tool_choice"))
    req.parallel_tool_calls = body.get("parallel_tool_calls")
    req.max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    req.temperature = number(body.get("temperature"), "temperature")
    req.top_p = number(body.get("top_p"), "top_p")
    req.stop = stop_list(body.get("stop"))
    req.seed = body.get("seed")
    req.reasoning_effort = body.get("reasoning_effort")
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        req.json_schema = dict(fmt.get("json_schema") or {})
    elif fmt.get("type") == "json_object":
        req.json_schema = {}
    req.user = body.get("user")
    return req


def _encode_user(msg: ir.Message) -> list[dict[str, Any]]:
    # Tool results become their own `tool` messages, first; images they carry cannot ride in a
    # tool message (text only), so they follow as user content.
    out: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in msg.parts:
        if isinstance(part, ir.ToolResult):
            out.append({"role": "tool", "tool_call_id": part.call_id, "content": part.text()})
            content += [_image(p) for p in part.content if isinstance(p, ir.Image)]
        elif isinstance(part, ir.Text):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ir.Image):
            content.append(_image(part))
    if content:
        only_text = all(c["type"] == "text" for c in content)
        value: Any = "".join(c["text"] for c in content) if only_text else content
        out.append({"role": "user", "content": value})
    return out


def _image(part: ir.Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": part.data_url()}}


def _encode_assistant(msg: ir.Message) -> dict[str, Any]:
    text = "".join(p.text for p in msg.parts if isinstance(p, ir.Text))
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [p for p in msg.parts if isinstance(p, ir.ToolCall)]
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.args or "{}"},
            }
            for c in calls
        ]
    return out


def _encode_messages(req: ir.Request) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": s} for s in req.system if s]
    for msg in req.messages:
        if msg.role == "assistant":
            messages.append(_encode_assistant(msg))
        elif msg.role == "system":
            text = "".join(p.text for p in msg.parts if isinstance(p, ir.Text))
            messages.append({"role": "system", "content": text})
        else:
            messages += _encode_user(msg)
    return messages


def _encode_tools(req: ir.Request, body: dict[str, Any]) -> None:
    body["tools"] = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.schema},
        }
        for t in req.tools
    ]
    if isinstance(req.tool_choice, dict):
        body["tool_choice"] = {"type": "function", "function": {"name": req.tool_choice["name"]}}
    elif req.tool_choice:
        body["tool_choice"] = req.tool_choice
    if req.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = req.parallel_tool_calls


def encode_request(req: ir.Request) -> dict[str, Any]:
    body: dict[str, Any] = {"model": req.model, "messages": _encode_messages(req)}
    if req.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}  # else usage never arrives
    if req.tools:
        _encode_tools(req, body)
    optional = {
        "max_completion_tokens": req.max_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "seed": req.seed,
        "reasoning_effort": req.reasoning_effort,
        "user": req.user,
        "stop": req.stop[:4] or None,  # OpenAI takes at most four
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if req.json_schema is not None:
        schema = req.json_schema
        fmt = {"type": "json_schema", "json_schema": schema} if schema else {"type": "json_object"}
        body["response_format"] = fmt
    return body


# --- responses -------------------------------------------------------------------------------


def _usage_in(u: dict[str, Any] | None) -> ir.Usage:
    u = u or {}
    return ir.Usage(
        input_total=u.get("prompt_tokens") or 0,
        cache_read=(u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0,
        output_total=u.get("completion_tokens") or 0,
        reasoning=(u.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0,
    )


def _usage_out(u: ir.Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input_total,
        "completion_tokens": u.output_total,
        "total_tokens": u.input_total + u.output_total,
        "prompt_tokens_details": {"cached_tokens": u.cache_read},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning},
    }


def decode_response(body: dict[str, Any]) -> ir.Response:
    choice = (body.get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    return ir.Response(
        id=body.get("id", ""),
        model=body.get("model", ""),
        parts=_assistant_parts(msg),
        stop=FINISH_IN.get(choice.get("finish_reason") or "stop", "end"),
        usage=_usage_in(body.get("usage")),
    )


def encode_response(resp: ir.Response) -> dict[str, Any]:
    msg = _encode_assistant(ir.Message("assistant", resp.parts))
    msg["refusal"] = None
    reasoning = "".join(p.text for p in resp.parts if isinstance(p, ir.Reasoning))
    if reasoning:
        msg["reasoning_content"] = reasoning
    return {
        "id": _chat_id(resp.id),
        "object": "chat.completion",
        "created": now(),
        "model": resp.model,
        "choices": [
            {"index": 0, "message": msg, "finish_reason": FINISH_OUT[resp.stop], "logprobs": None}
        ],
        "usage": _usage_out(resp.usage),
    }


def _chat_id(upstream_id: str) -> str:
    return upstream_id if upstream_id.startswith("chatcmpl-") else ir.new_id("chatcmpl-")


# --- errors, models, transport -------------------------------------------------------------


def encode_error(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = {404: "model_not_found", 413: "request_too_large", 429: "rate_limit_exceeded"}.get(
        status
    )
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def decode_error(body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))
    return dumps(body)[:2000]


def encode_model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "svc"}


def encode_model_list(ids: list[str]) -> dict[str, Any]:
    return {"object": "list", "data": [encode_model(i) for i in ids]}


def upstream_url(base: str, model: str, stream: bool) -> str:
    return f"{base}/chat/completions"


def auth_headers(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key else {}


def rewrite_model(data: dict[str, Any], model: str) -> None:
    if "model" in data:
        data["model"] = model


def encode_token_count(total: int) -> dict[str, Any]:
    """Chat Completions has no counting endpoint; this shape is Responses' own."""
    return {"object": "response.input_tokens", "input_tokens": total}


def count_tokens_url(base: str, model: str) -> str | None:
    return None
