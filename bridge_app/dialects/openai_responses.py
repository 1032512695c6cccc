"""OpenAI Responses: `POST {base}/responses`, semantic SSE events with a sequence_number.

The codec is stateless; `previous_response_id` is resolved by exchange.py from response_store.py.
"""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects import openai_chat
from bridge_app.dialects.common import dumps, image_from_url, items, now, number, obj, text_of

NAME = "openai-responses"
PATHS: dict[str, str] = {"responses": "generate", "responses/input_tokens": "count_tokens"}
# A free-form ("custom") tool as a function other providers can call: its text is `input`, the
# same shape as the function variant of Codex's apply_patch.
CUSTOM_SCHEMA = {
    "type": "object",
    "properties": {"input": {"type": "string"}},
    "required": ["input"],
}


# --- requests --------------------------------------------------------------------------------


def _content(content: Any) -> list[ir.Part]:
    if isinstance(content, str):
        return [ir.Text(content)]
    parts: list[ir.Part] = []
    for block in items(content, "content"):
        kind = block.get("type")
        if kind in ("input_text", "output_text", "text", "refusal"):
            parts.append(ir.Text(block.get("text") or block.get("refusal") or ""))
        elif kind == "input_image":
            url = block.get("image_url") or ""
            parts.append(image_from_url(url if isinstance(url, str) else url.get("url", "")))
    return parts


def _add(req: ir.Request, role: ir.Role, parts: list[ir.Part]) -> None:
    if req.messages and req.messages[-1].role == role and role != "system":
        req.messages[-1].parts.extend(parts)
    else:
        req.messages.append(ir.Message(role, parts))


def _item(req: ir.Request, item: dict[str, Any]) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role", "user")
        if role in ("system", "developer"):
            if not req.messages:
                req.system.append(text_of(_texts(item.get("content"))))
            else:
                _add(req, "system", _content(item.get("content")))
        else:
            _add(req, "assistant" if role == "assistant" else "user", _content(item.get("content")))
    elif kind == "function_call":
        call = ir.ToolCall(
            item.get("call_id", ""),
            item.get("name", ""),
            item.get("arguments", ""),
            {"item_id": item.get("id", "")},
        )
        _add(req, "assistant", [call])
    elif kind == "function_call_output":
        output = item.get("output", "")
        content = [ir.Text(output)] if isinstance(output, str) else _content(output)
        _add(req, "user", [ir.ToolResult(item.get("call_id", ""), content)])  # type: ignore[arg-type]
    elif kind == "custom_tool_call":
        args = dumps({"input": item.get("input", "")})
        _add(req, "assistant", [ir.ToolCall(item.get("call_id", ""), item.get("name", ""), args)])
    elif kind == "custom_tool_call_output":
        output = item.get("output", "")
        content = [ir.Text(output)] if isinstance(output, str) else _content(output)
        _add(req, "user", [ir.ToolResult(item.get("call_id", ""), content)])  # type: ignore[arg-type]
    elif kind == "reasoning":
        text = "".join(s.get("text", "") for s in item.get("summary") or [])
        _add(req, "assistant", [ir.Reasoning(text, item.get("encrypted_content") or "", NAME)])


def _texts(content: Any) -> Any:
    return (
        content
        if isinstance(content, str)
        else [{"text": p.text} for p in _content(content) if isinstance(p, ir.Text)]
    )


def decode_request(body: dict[str, Any], model: str = "") -> ir.Request:
    model = body.get("model") or model
    if not isinstance(model, str) or not model:
        raise ir.bad_request("Missing required parameter: 'model'.")
    req = ir.Request(model=model, stream=bool(body.get("stream")))
    if body.get("instructions"):
        req.system.append(text_of(_texts(body["instructions"])))
    source = body.get("input")
    if isinstance(source, str):
        req.messages.append(ir.Message("user", [ir.Text(source)]))
    else:
        for item in items(source, "input"):
            _item(req, obj(item, "each input item"))
    if not req.messages:
        raise ir.bad_request("Missing required parameter: 'input'.")
    for tool in items(body.get("tools"), "tools"):
        if tool.get("type") == "function":
            schema = tool.get("parameters") or {"type": "object", "properties": {}}
            req.tools.append(ir.Tool(tool.get("name", ""), tool.get("description") or "", schema))
        elif tool.get("type") == "custom":  # free-form tools (Codex's apply_patch): one string
            req.tools.append(
                ir.Tool(tool.get("name", ""), tool.get("description") or "", CUSTOM_SCHEMA)
            )
    choice = body.get("tool_choice")
    req.tool_choice = {"name": choice.get("name", "")} if isinstance(choice, dict) else choice
    req.parallel_tool_calls = body.get("parallel_tool_calls")
    req.max_tokens = body.get("max_output_tokens")
    req.temperature = number(body.get("temperature"), "temperature")
    req.top_p = number(body.get("top_p"), "top_p")
    req.reasoning_effort = (body.get("reasoning") or {}).get("effort")
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        req.json_schema = {k: fmt[k] for k in ("name", "schema", "strict") if k in fmt}
    elif fmt.get("type") == "json_object":
        req.json_schema = {}
    req.user = body.get("user")
    return req


def _input_items(msg: ir.Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    assistant = msg.role == "assistant"
    for part in msg.parts:
        if isinstance(part, ir.Text):
            content.append(
                {"type": "output_text" if assistant else "input_text", "text": part.text}
            )
        elif isinstance(part, ir.Image):
            content.append({"type": "input_image", "image_url": part.data_url(), "detail": "auto"})
        elif isinstance(part, ir.ToolCall):
            out.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": part.args or "{}",
                }
            )
        elif isinstance(part, ir.ToolResult):
            out.append(
                {"type": "function_call_output", "call_id": part.call_id, "output": part.text()}
            )
            content += [
                {"type": "input_image", "image_url": p.data_url(), "detail": "auto"}
                for p in part.content
                if isinstance(p, ir.Image)
            ]
    if content:
        role = "developer" if msg.role == "system" else msg.role
        message = {"type": "message", "role": role, "content": content}
        # Assistant text precedes its calls; user content follows its tool outputs.
        out = [message, *out] if assistant else [*out, message]
    return out


def _encode_tools(req: ir.Request, body: dict[str, Any]) -> None:
    body["tools"] = [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.schema}
        for t in req.tools
    ]
    if isinstance(req.tool_choice, dict):
        body["tool_choice"] = {"type": "function", "name": req.tool_choice["name"]}
    elif req.tool_choice:
        body["tool_choice"] = req.tool_choice
    if req.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = req.parallel_tool_calls


def encode_request(req: ir.Request) -> dict[str, Any]:
    items = [i for m in req.messages for i in _input_items(m)]
    body: dict[str, Any] = {"model": req.model, "input": items}
    if req.system:
        body["instructions"] = "\n\n".join(s for s in req.system if s)
    if req.stream:
        body["stream"] = True
    if req.tools:
        _encode_tools(req, body)
    optional = {
        "max_output_tokens": req.max_tokens,
        "temperature": req.temperature,
        "top_p": req.top_p,
        "user": req.user,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    if req.reasoning_effort:
        body["reasoning"] = {"effort": req.reasoning_effort}
    if req.json_schema is not None:
        schema = req.json_schema
        body["text"] = {
            "format": {"type": "json_schema", **schema} if schema else {"type": "json_object"}
        }
    return body


# --- responses -------------------------------------------------------------------------------


def _usage_in(u: dict[str, Any] | None) -> ir.Usage:
    u = u or {}
    return ir.Usage(
        input_total=u.get("input_tokens") or 0,
        cache_read=(u.get("input_tokens_details") or {}).get("cached_tokens") or 0,
        output_total=u.get("output_tokens") or 0,
        reasoning=(u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0,
    )


def _usage_out(u: ir.Usage) -> dict[str, Any]:
    return {
        "input_tokens": u.input_total,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output_total,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input_total + u.output_total,
    }


def _stop_in(body: dict[str, Any], has_calls: bool) -> ir.Stop:
    if body.get("status") == "incomplete":
        reason = (body.get("incomplete_details") or {}).get("reason")
        return "filtered" if reason == "content_filter" else "max_tokens"
    if body.get("status") == "failed":
        return "error"
    return "tool_use" if has_calls else "end"


def _out_item(item: dict[str, Any]) -> list[ir.Part]:
    kind = item.get("type")
    if kind == "message":
        return _content(item.get("content"))
    if kind == "function_call":
        return [
            ir.ToolCall(
                item.get("call_id", ""),
                item.get("name", ""),
                item.get("arguments", ""),
                {"item_id": item.get("id", "")},
            )
        ]
    if kind == "reasoning":
        text = "".join(s.get("text", "") for s in item.get("summary") or [])
        return [ir.Reasoning(text, item.get("encrypted_content") or "", NAME)]
    return []


def decode_response(body: dict[str, Any]) -> ir.Response:
    parts = [p for item in body.get("output") or [] for p in _out_item(item)]
    has_calls = any(isinstance(p, ir.ToolCall) for p in parts)
    return ir.Response(
        id=body.get("id", ""),
        model=body.get("model", ""),
        parts=parts,
        stop=_stop_in(body, has_calls),
        usage=_usage_in(body.get("usage")),
    )


def _encode_item(part: ir.Part) -> dict[str, Any] | None:
    if isinstance(part, ir.Text):
        content = [{"type": "output_text", "text": part.text, "annotations": [], "logprobs": []}]
        return {
            "type": "message",
            "id": ir.new_id("msg_"),
            "status": "completed",
            "role": "assistant",
            "content": content,
        }
    if isinstance(part, ir.ToolCall):
        return {
            "type": "function_call",
            "id": ir.new_id("fc_"),
            "call_id": part.id,
            "name": part.name,
            "arguments": part.args or "{}",
            "status": "completed",
        }
    if isinstance(part, ir.Reasoning):
        return {
            "type": "reasoning",
            "id": ir.new_id("rs_"),
            "summary": [{"type": "summary_text", "text": part.text}],
        }
    return None


def _envelope(
    resp_id: str,
    model: str,
    status: str,
    output: list[Any],
    usage: ir.Usage | None,
    stop: ir.Stop = "end",
) -> dict[str, Any]:
    incomplete = None
    if stop in ("max_tokens", "filtered"):
        status = "incomplete"
        incomplete = {"reason": "max_output_tokens" if stop == "max_tokens" else "content_filter"}
    return {
        "id": resp_id,
        "object": "response",
        "created_at": now(),
        "status": status,
        "model": model,
        "output": output,
        "usage": _usage_out(usage) if usage else None,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": None,
        "metadata": {},
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "temperature": None,
        "top_p": None,
    }


def _resp_id(upstream: str) -> str:
    return upstream if upstream.startswith("resp_") else ir.new_id("resp_")


def encode_response(resp: ir.Response) -> dict[str, Any]:
    output = [i for i in (_encode_item(p) for p in resp.parts) if i is not None]
    return _envelope(_resp_id(resp.id), resp.model, "completed", output, resp.usage, resp.stop)


# --- errors, models, transport -------------------------------------------------------------

encode_error = openai_chat.encode_error
decode_error = openai_chat.decode_error
encode_model = openai_chat.encode_model
encode_model_list = openai_chat.encode_model_list
auth_headers = openai_chat.auth_headers


def upstream_url(base: str, model: str, stream: bool) -> str:
    return f"{base}/responses"


def rewrite_model(data: dict[str, Any], model: str) -> None:
    if "model" in data:
        data["model"] = model
    elif isinstance(data.get("response"), dict):
        data["response"]["model"] = model


def encode_token_count(total: int) -> dict[str, Any]:
    return {"object": "response.input_tokens", "input_tokens": total}


def count_tokens_url(base: str, model: str) -> str:
    return f"{base}/responses/input_tokens"
