"""OpenAI Chat Completions: `POST {base}/chat/completions`, SSE `data:` chunks ending in [DONE].

Every dialect module has the same functions: decode/encode_request, decode/encode_response,
StreamDecoder/StreamEncoder, encode_error/decode_error, encode_model(_list), upstream_url,
auth_headers, rewrite_model (passthrough). Only this one is commented in full.
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
    sse,
    stop_list,
    text_of,
)

NAME = "openai-chat"
SSE_EVENTS = False  # chunks carry no `event:` line

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


def encode_request(req: ir.Request) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": s} for s in req.system if s]
    for msg in req.messages:
        if msg.role == "assistant":
            messages.append(_encode_assistant(msg))
        elif msg.role == "system":
            messages.append(
                {
                    "role": "system",
                    "content": text_of(
                        [{"text": p.text} for p in msg.parts if isinstance(p, ir.Text)]
                    ),
                }
            )
        else:
            messages += _encode_user(msg)
    body: dict[str, Any] = {"model": req.model, "messages": messages}
    if req.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if req.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.schema},
            }
            for t in req.tools
        ]
        if isinstance(req.tool_choice, dict):
            body["tool_choice"] = {
                "type": "function",
                "function": {"name": req.tool_choice["name"]},
            }
        elif req.tool_choice:
            body["tool_choice"] = req.tool_choice
        if req.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = req.parallel_tool_calls
    optional = {
        "max_completion_tokens": req.max_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "seed": req.seed,
        "reasoning_effort": req.reasoning_effort,
        "user": req.user,
        "stop": req.stop[:4] or None,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if req.json_schema is not None:
        body["response_format"] = (
            {"type": "json_schema", "json_schema": req.json_schema}
            if req.json_schema
            else {"type": "json_object"}
        )
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


# --- streams ---------------------------------------------------------------------------------


class StreamDecoder:
    """Upstream chunks -> IR events. Tool fragments are keyed by `index` with the fallbacks
    real servers need (missing index; a new id on a known index opens a new call)."""

    def __init__(self) -> None:
        self.started = False
        self.open: int | None = None  # IR block index currently open
        self.kind = ""
        self.next = 0
        self.tools: dict[int, int] = {}  # upstream tool index -> IR block
        self.tool_ids: dict[int, str] = {}
        self.stop: ir.Stop | None = None

    def _begin(self, kind: str, out: list[ir.Event], **kw: Any) -> int:
        self._end(out)
        self.open, self.kind = self.next, kind
        self.next += 1
        out.append(ir.BlockStart(self.open, kind, **kw))  # type: ignore[arg-type]
        return self.open

    def _end(self, out: list[ir.Event]) -> None:
        if self.open is not None:
            out.append(ir.BlockStop(self.open))
            self.open = None

    def feed(self, event: str, data: dict[str, Any]) -> list[ir.Event]:
        out: list[ir.Event] = []
        if "error" in data:
            err = data["error"] or {}
            out.append(
                ir.Error(
                    502, err.get("message", "upstream error") if isinstance(err, dict) else str(err)
                )
            )
            return out
        if not self.started:
            self.started = True
            out.append(ir.Start(data.get("id", "")))
        for choice in data.get("choices") or []:
            self._delta(choice.get("delta") or {}, out)
            if choice.get("finish_reason"):
                self.stop = FINISH_IN.get(choice["finish_reason"], "end")
        if data.get("usage"):
            out.append(ir.UsageEvent(_usage_in(data["usage"])))
        return out

    def _delta(self, delta: dict[str, Any], out: list[ir.Event]) -> None:
        if delta.get("reasoning_content"):
            if self.open is None or self.kind != "reasoning":
                self._begin("reasoning", out)
            out.append(ir.ReasoningDelta(self.open, delta["reasoning_content"]))  # type: ignore[arg-type]
        if delta.get("content"):
            if self.open is None or self.kind != "text":
                self._begin("text", out)
            out.append(ir.TextDelta(self.open, delta["content"]))  # type: ignore[arg-type]
        for frag in delta.get("tool_calls") or []:
            self._tool_fragment(frag, out)

    def _tool_fragment(self, frag: dict[str, Any], out: list[ir.Event]) -> None:
        fn = frag.get("function") or {}
        idx = frag.get("index")
        if idx is None:
            idx = len(self.tools) if frag.get("id") else max(self.tools, default=0)
        new_id = frag.get("id")
        if idx not in self.tools or (new_id and new_id != self.tool_ids.get(idx)):
            call_id = new_id or ir.new_id("call_")
            self.tools[idx] = self._begin("tool", out, id=call_id, name=fn.get("name", ""))
            self.tool_ids[idx] = call_id
        block = self.tools[idx]
        if fn.get("arguments") and block == self.open:
            out.append(ir.ArgsDelta(block, fn["arguments"]))

    def close(self) -> list[ir.Event]:
        out: list[ir.Event] = []
        self._end(out)
        out.append(ir.Finish(self.stop or ("tool_use" if self.tools else "end")))
        return out


class StreamEncoder:
    """IR events -> chat.completion.chunk frames for an OpenAI Chat client."""

    def __init__(self, model: str, include_usage: bool = False) -> None:
        self.model, self.include_usage = model, include_usage
        self.id = ir.new_id("chatcmpl-")
        self.created = now()
        self.tool_ordinal: dict[int, int] = {}
        self.usage: ir.Usage | None = None
        self.stop: ir.Stop = "end"
        self.failed = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return (
            b"data: "
            + dumps(
                {
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": self.created,
                    "model": self.model,
                    "choices": [
                        {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
                    ],
                }
            ).encode()
            + b"\n\n"
        )

    def encode(self, ev: ir.Event) -> bytes:
        if isinstance(ev, ir.TextDelta):
            return self._chunk({"content": ev.text})
        if isinstance(ev, ir.ArgsDelta):
            k = self.tool_ordinal[ev.index]
            return self._chunk({"tool_calls": [{"index": k, "function": {"arguments": ev.json}}]})
        if isinstance(ev, ir.Start):
            return self._chunk({"role": "assistant", "content": ""})
        if isinstance(ev, ir.BlockStart) and ev.kind == "tool":
            k = self.tool_ordinal[ev.index] = len(self.tool_ordinal)
            call = {
                "index": k,
                "id": ev.id,
                "type": "function",
                "function": {"name": ev.name, "arguments": ""},
            }
            return self._chunk({"tool_calls": [call]})
        if isinstance(ev, ir.ReasoningDelta) and ev.text:
            return self._chunk({"reasoning_content": ev.text})
        if isinstance(ev, ir.UsageEvent):
            self.usage = ev.usage
        elif isinstance(ev, ir.Finish):
            self.stop = ev.stop
        elif isinstance(ev, ir.Error):
            self.failed = True
            return sse({"error": encode_error(ev.status, ev.message)["error"]})
        return b""

    def close(self) -> bytes:
        if self.failed:
            return b""
        out = self._chunk({}, FINISH_OUT[self.stop])
        if self.include_usage:
            usage = _usage_out(self.usage or ir.Usage())
            chunk = {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [],
                "usage": usage,
            }
            out += sse(chunk)
        return out + b"data: [DONE]\n\n"


def stream_options(body: dict[str, Any]) -> bool:
    """Whether the client asked for the trailing usage chunk."""
    return bool((body.get("stream_options") or {}).get("include_usage"))


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
