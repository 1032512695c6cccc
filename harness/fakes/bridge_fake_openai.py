"""The fake provider's OpenAI answers (Chat Completions and Responses), whole and streamed."""

from __future__ import annotations

import json
from typing import Any

from harness.fakes.bridge_fake_plan import Plan, _split

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
