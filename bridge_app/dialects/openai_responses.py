"""OpenAI Responses: `POST {base}/responses`, semantic SSE events with a sequence_number.

Stateless here: `previous_response_id` is not resolved (svc keeps no response store), so clients
such as Codex must send the full input, which they do with `store: false`.
"""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects import openai_chat
from bridge_app.dialects.common import image_from_url, items, now, number, obj, sse, text_of

NAME = "openai-responses"
SSE_EVENTS = True


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
            req.tools.append(
                ir.Tool(
                    tool.get("name", ""),
                    tool.get("description") or "",
                    tool.get("parameters") or {"type": "object", "properties": {}},
                )
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


def encode_request(req: ir.Request) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": req.model,
        "input": [i for m in req.messages for i in _input_items(m)],
    }
    if req.system:
        body["instructions"] = "\n\n".join(s for s in req.system if s)
    if req.stream:
        body["stream"] = True
    if req.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.schema,
            }
            for t in req.tools
        ]
        if isinstance(req.tool_choice, dict):
            body["tool_choice"] = {"type": "function", "name": req.tool_choice["name"]}
        elif req.tool_choice:
            body["tool_choice"] = req.tool_choice
        if req.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = req.parallel_tool_calls
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
        fmt = (
            {"type": "json_schema", **req.json_schema}
            if req.json_schema
            else {"type": "json_object"}
        )
        body["text"] = {"format": fmt}
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


# --- streams ---------------------------------------------------------------------------------


class StreamDecoder:
    """Responses events -> IR. `.done` events are authoritative for arguments never streamed."""

    def __init__(self) -> None:
        self.blocks: dict[tuple[int, int], int] = {}  # (output_index, content_index) -> block
        self.args_seen: set[int] = set()
        self.calls = 0
        self.next = 0

    def _open(self, key: tuple[int, int], kind: str, out: list[ir.Event], **kw: Any) -> int:
        if key not in self.blocks:
            self.blocks[key] = self.next
            self.next += 1
            out.append(ir.BlockStart(self.blocks[key], kind, **kw))  # type: ignore[arg-type]
        return self.blocks[key]

    def _close(self, key: tuple[int, int], out: list[ir.Event]) -> None:
        if key in self.blocks:
            out.append(ir.BlockStop(self.blocks.pop(key)))

    def feed(self, event: str, data: dict[str, Any]) -> list[ir.Event]:
        kind = data.get("type") or event
        oi = data.get("output_index", 0)
        out: list[ir.Event] = []
        if kind == "response.created":
            out.append(ir.Start((data.get("response") or {}).get("id", "")))
        elif kind == "response.output_item.added":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                self.calls += 1
                self._open(
                    (oi, -1), "tool", out, id=item.get("call_id", ""), name=item.get("name", "")
                )
            elif item.get("type") == "reasoning":
                self._open((oi, -2), "reasoning", out)
        elif kind == "response.output_text.delta":
            out.append(
                ir.TextDelta(
                    self._open((oi, data.get("content_index", 0)), "text", out),
                    data.get("delta", ""),
                )
            )
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            out.append(
                ir.ReasoningDelta(self._open((oi, -2), "reasoning", out), data.get("delta", ""))
            )
        elif kind == "response.function_call_arguments.delta" and data.get("delta"):
            block = self.blocks.get((oi, -1))
            if block is not None:
                self.args_seen.add(block)
                out.append(ir.ArgsDelta(block, data["delta"]))
        elif kind == "response.output_item.done":
            self._item_done(oi, data.get("item") or {}, out)
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._final(data.get("response") or {}, out)
        elif kind == "error":
            out.append(ir.Error(502, data.get("message", "upstream error")))
        return out

    def _item_done(self, oi: int, item: dict[str, Any], out: list[ir.Event]) -> None:
        block = self.blocks.get((oi, -1))
        if (
            item.get("type") == "function_call"
            and block is not None
            and block not in self.args_seen
            and item.get("arguments")
        ):
            out.append(ir.ArgsDelta(block, item["arguments"]))
        for key in [k for k in self.blocks if k[0] == oi]:
            self._close(key, out)

    def _final(self, resp: dict[str, Any], out: list[ir.Event]) -> None:
        for key in list(self.blocks):
            self._close(key, out)
        if resp.get("status") == "failed":
            out.append(
                ir.Error(502, (resp.get("error") or {}).get("message", "upstream response failed"))
            )
            return
        out.append(ir.UsageEvent(_usage_in(resp.get("usage"))))
        out.append(ir.Finish(_stop_in(resp, self.calls > 0)))

    def close(self) -> list[ir.Event]:
        return []


class StreamEncoder:
    """IR events -> the full Responses event ladder, one response id throughout."""

    def __init__(self, model: str, include_usage: bool = True) -> None:
        self.model = model
        self.id = ir.new_id("resp_")
        self.seq = 0
        self.output: list[dict[str, Any]] = []
        self.items: dict[int, tuple[int, dict[str, Any]]] = {}  # block -> (output_index, item)
        self.usage: ir.Usage | None = None
        self.stop: ir.Stop = "end"
        self.failed = False

    def _ev(self, kind: str, **data: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **data}
        self.seq += 1
        return sse(data, kind)

    def _added(self, block: int, item: dict[str, Any]) -> bytes:
        oi = len(self.output)
        self.output.append(item)
        self.items[block] = (oi, item)
        return self._ev("response.output_item.added", output_index=oi, item=dict(item))

    def _block_start(self, ev: ir.BlockStart) -> bytes:
        if ev.kind == "tool":
            item = {
                "type": "function_call",
                "id": ir.new_id("fc_"),
                "call_id": ev.id,
                "name": ev.name,
                "arguments": "",
                "status": "in_progress",
            }
            return self._added(ev.index, item)
        if ev.kind == "reasoning":
            out = self._added(
                ev.index, {"type": "reasoning", "id": ir.new_id("rs_"), "summary": []}
            )
            oi, item = self.items[ev.index]
            part = {"type": "summary_text", "text": ""}
            return out + self._ev(
                "response.reasoning_summary_part.added",
                item_id=item["id"],
                output_index=oi,
                summary_index=0,
                part=part,
            )
        item = {
            "type": "message",
            "id": ir.new_id("msg_"),
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        out = self._added(ev.index, item)
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return out + self._ev(
            "response.content_part.added",
            item_id=item["id"],
            output_index=len(self.output) - 1,
            content_index=0,
            part=part,
        )

    def _block_stop(self, index: int) -> bytes:
        oi, item = self.items.pop(index)
        ids = {"item_id": item["id"], "output_index": oi}
        if item["type"] == "function_call":
            item["status"] = "completed"
            out = self._ev(
                "response.function_call_arguments.done",
                **ids,
                name=item["name"],
                arguments=item["arguments"],
            )
        elif item["type"] == "reasoning":
            text = item.pop("_text", "")
            item["summary"] = [{"type": "summary_text", "text": text}]
            out = self._ev(
                "response.reasoning_summary_text.done", **ids, summary_index=0, text=text
            )
            out += self._ev(
                "response.reasoning_summary_part.done",
                **ids,
                summary_index=0,
                part=item["summary"][0],
            )
        else:
            text = item.pop("_text", "")
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            item["content"], item["status"] = [part], "completed"
            out = self._ev(
                "response.output_text.done", **ids, content_index=0, text=text, logprobs=[]
            )
            out += self._ev("response.content_part.done", **ids, content_index=0, part=part)
        return out + self._ev("response.output_item.done", output_index=oi, item=item)

    def encode(self, ev: ir.Event) -> bytes:
        if isinstance(ev, ir.TextDelta | ir.ReasoningDelta):
            oi, item = self.items[ev.index]
            item["_text"] = item.get("_text", "") + ev.text
            kind = (
                "response.output_text.delta"
                if isinstance(ev, ir.TextDelta)
                else "response.reasoning_summary_text.delta"
            )
            extra = (
                {"content_index": 0, "logprobs": []}
                if isinstance(ev, ir.TextDelta)
                else {"summary_index": 0}
            )
            return (
                self._ev(kind, item_id=item["id"], output_index=oi, delta=ev.text, **extra)
                if ev.text
                else b""
            )
        if isinstance(ev, ir.ArgsDelta):
            oi, item = self.items[ev.index]
            item["arguments"] += ev.json
            return self._ev(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=oi,
                delta=ev.json,
            )
        if isinstance(ev, ir.BlockStart):
            return self._block_start(ev)
        if isinstance(ev, ir.BlockStop):
            return self._block_stop(ev.index)
        if isinstance(ev, ir.Start):
            resp = _envelope(self.id, self.model, "in_progress", [], None)
            return self._ev("response.created", response=resp) + self._ev(
                "response.in_progress", response=resp
            )
        if isinstance(ev, ir.UsageEvent):
            self.usage = ev.usage
        elif isinstance(ev, ir.Finish):
            self.stop = ev.stop
        elif isinstance(ev, ir.Error):
            self.failed = True
            err = openai_chat.encode_error(ev.status, ev.message)["error"]
            resp = _envelope(self.id, self.model, "failed", self.output, self.usage)
            resp["error"] = {"code": err["code"] or err["type"], "message": ev.message}
            return self._ev(
                "error", code=err["code"] or err["type"], message=ev.message, param=None
            ) + self._ev("response.failed", response=resp)
        return b""

    def close(self) -> bytes:
        if self.failed:
            return b""
        out = b"".join(self._block_stop(i) for i in list(self.items))
        resp = _envelope(
            self.id, self.model, "completed", self.output, self.usage or ir.Usage(), self.stop
        )
        kind = "response.incomplete" if resp["status"] == "incomplete" else "response.completed"
        return out + self._ev(kind, response=resp)


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


def input_tokens(total: int) -> dict[str, Any]:
    return {"object": "response.input_tokens", "input_tokens": total}
