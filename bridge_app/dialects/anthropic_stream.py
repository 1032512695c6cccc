"""Streaming for the anthropic dialect: provider events -> IR (`StreamDecoder`) and
IR -> client events (`StreamEncoder`). The non-streaming codec is in anthropic.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bridge_app import ir
from bridge_app.dialects.anthropic import (
    STOP_IN,
    STOP_OUT,
    _msg_id,
    _usage_in,
    _usage_out,
    encode_error,
)
from bridge_app.dialects.common import sse


class StreamDecoder:
    def __init__(self) -> None:
        self.usage = ir.Usage()
        self.kinds: dict[int, str] = {}

    def feed(self, event: str, data: dict[str, Any]) -> list[ir.Event]:
        kind = data.get("type") or event
        if kind == "message_start":
            msg = data.get("message") or {}
            self.usage = _usage_in(msg.get("usage"))
            return [ir.Start(msg.get("id", ""), replace(self.usage))]
        if kind == "content_block_start":
            return [self._start(data.get("index", 0), data.get("content_block") or {})]
        if kind == "content_block_delta":
            return self._delta(data.get("index", 0), data.get("delta") or {})
        if kind == "content_block_stop":
            return [ir.BlockStop(data.get("index", 0))]
        if kind == "message_delta":
            self.usage = _usage_in(data.get("usage"), self.usage)
            delta = data.get("delta") or {}
            stop = STOP_IN.get(delta.get("stop_reason") or "end_turn", "end")
            return [ir.UsageEvent(self.usage), ir.Finish(stop, delta.get("stop_sequence"))]
        if kind == "error":
            err = data.get("error") or {}
            status = 429 if err.get("type") == "rate_limit_error" else 502
            return [ir.Error(status, err.get("message", "upstream error"))]
        return []  # ping, message_stop

    def _start(self, index: int, block: dict[str, Any]) -> ir.Event:
        kind = block.get("type")
        self.kinds[index] = kind or ""
        if kind == "tool_use":
            return ir.BlockStart(index, "tool", block.get("id", ""), block.get("name", ""))
        if kind in ("thinking", "redacted_thinking"):
            return ir.BlockStart(index, "reasoning")
        return ir.BlockStart(index, "text")

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ir.Event]:
        kind = delta.get("type")
        if kind == "text_delta":
            return [ir.TextDelta(index, delta.get("text", ""))]
        if kind == "input_json_delta" and delta.get("partial_json"):
            return [ir.ArgsDelta(index, delta["partial_json"])]
        if kind == "thinking_delta":
            return [ir.ReasoningDelta(index, delta.get("thinking", ""))]
        if kind == "signature_delta":
            return [ir.ReasoningDelta(index, "", delta.get("signature", ""))]
        return []

    def close(self) -> list[ir.Event]:
        return []


class StreamEncoder:
    """IR events -> Anthropic events, with dense block indices and usage in message_delta."""

    def __init__(self, model: str, include_usage: bool = True) -> None:
        self.model = model
        self.index: dict[int, int] = {}
        self.kind: dict[int, str] = {}
        self.usage = ir.Usage()
        self.stop: ir.Stop = "end"
        self.stop_sequence: str | None = None
        self.started = self.failed = False

    def _start(self, ev: ir.Start) -> bytes:
        self.started = True
        if ev.usage:
            self.usage = ev.usage
        message = {
            "id": _msg_id(ev.id),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage_out(self.usage),
        }
        return sse({"type": "message_start", "message": message}, "message_start")

    def _block_start(self, ev: ir.BlockStart) -> bytes:
        i = self.index[ev.index] = len(self.index)
        self.kind[ev.index] = ev.kind
        block: dict[str, Any]
        if ev.kind == "tool":
            block = {"type": "tool_use", "id": ev.id, "name": ev.name, "input": {}}
        elif ev.kind == "reasoning":
            block = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            block = {"type": "text", "text": ""}
        return sse(
            {"type": "content_block_start", "index": i, "content_block": block},
            "content_block_start",
        )

    def _delta(self, index: int, delta: dict[str, Any]) -> bytes:
        data = {"type": "content_block_delta", "index": self.index[index], "delta": delta}
        return sse(data, "content_block_delta")

    def encode(self, ev: ir.Event) -> bytes:
        if isinstance(ev, ir.TextDelta):
            return self._delta(ev.index, {"type": "text_delta", "text": ev.text})
        if isinstance(ev, ir.ArgsDelta):
            return self._delta(ev.index, {"type": "input_json_delta", "partial_json": ev.json})
        if isinstance(ev, ir.ReasoningDelta):
            if ev.signature:
                return self._delta(ev.index, {"type": "signature_delta", "signature": ev.signature})
            return self._delta(ev.index, {"type": "thinking_delta", "thinking": ev.text})
        if isinstance(ev, ir.BlockStart):
            return self._block_start(ev)
        if isinstance(ev, ir.BlockStop):
            return sse(
                {"type": "content_block_stop", "index": self.index[ev.index]}, "content_block_stop"
            )
        if isinstance(ev, ir.Start):
            return self._start(ev)
        if isinstance(ev, ir.UsageEvent):
            self.usage = ev.usage
        elif isinstance(ev, ir.Finish):
            self.stop, self.stop_sequence = ev.stop, ev.stop_sequence
        elif isinstance(ev, ir.Error):
            self.failed = True
            return sse(encode_error(ev.status, ev.message), "error")
        return b""

    def close(self) -> bytes:
        if self.failed:
            return b""
        delta = {"stop_reason": STOP_OUT[self.stop], "stop_sequence": self.stop_sequence}
        usage = _usage_out(self.usage)
        out = sse({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta")
        return out + sse({"type": "message_stop"}, "message_stop")
