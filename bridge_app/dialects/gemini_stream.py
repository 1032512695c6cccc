"""Streaming for the gemini dialect: provider events -> IR (`StreamDecoder`) and
IR -> client events (`StreamEncoder`). The non-streaming codec is in gemini.py."""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects.common import dumps
from bridge_app.dialects.gemini import (
    FINISH_OUT,
    _encode_part,
    _usage_in,
    _usage_out,
    encode_error,
    finish_in,
    g,
)


class StreamDecoder:
    """Every event is a whole response with the new parts only; calls arrive complete."""

    def __init__(self) -> None:
        self.started = False
        self.open: int | None = None
        self.kind = ""
        self.next = 0
        self.calls = 0
        self.reason: str | None = None

    def _begin(self, kind: str, out: list[ir.Event], **kw: Any) -> int:
        if self.open is not None:
            out.append(ir.BlockStop(self.open))
        self.open, self.kind = self.next, kind
        self.next += 1
        out.append(ir.BlockStart(self.open, kind, **kw))  # type: ignore[arg-type]
        return self.open

    def feed(self, event: str, data: dict[str, Any]) -> list[ir.Event]:
        out: list[ir.Event] = []
        if "error" in data:
            err = data["error"] or {}
            return [ir.Error(int(err.get("code") or 502), err.get("message", "upstream error"))]
        if not self.started:
            self.started = True
            out.append(ir.Start(g(data, "responseId") or ""))
        for cand in data.get("candidates") or []:
            for part in (cand.get("content") or {}).get("parts") or []:
                self._part(part, out)
            self.reason = g(cand, "finishReason") or self.reason
        if usage := g(data, "usageMetadata"):
            out.append(ir.UsageEvent(_usage_in(usage)))
        return out

    def _part(self, part: dict[str, Any], out: list[ir.Event]) -> None:
        if (fc := g(part, "functionCall")) is not None:
            meta = {"thought_signature": sig} if (sig := g(part, "thoughtSignature")) else {}
            idx = self._begin(
                "tool",
                out,
                id=fc.get("id") or ir.new_id("call_"),
                name=fc.get("name", ""),
                meta=meta,
            )
            out.append(ir.ArgsDelta(idx, dumps(fc.get("args") or {})))
            out.append(ir.BlockStop(idx))
            self.open = None
            self.calls += 1
        elif part.get("text"):
            kind = "reasoning" if part.get("thought") else "text"
            if self.open is None or self.kind != kind:
                self._begin(kind, out)
            ev = (
                ir.ReasoningDelta(self.open, part["text"])
                if kind == "reasoning"
                else ir.TextDelta(self.open, part["text"])
            )  # type: ignore[arg-type]
            out.append(ev)

    def close(self) -> list[ir.Event]:
        out: list[ir.Event] = []
        if self.open is not None:
            out.append(ir.BlockStop(self.open))
            self.open = None
        out.append(ir.Finish(finish_in(self.reason, self.calls > 0)))
        return out


class StreamEncoder:
    """IR events -> `data: ` frames; tool calls buffered until their arguments are complete.
    `array=True` writes the JSON-array form a client gets without `alt=sse`."""

    def __init__(self, model: str, include_usage: bool = True, array: bool = False) -> None:
        self.model, self.array = model, array
        self.id = ir.new_id("")
        self.calls: dict[int, ir.ToolCall] = {}
        self.usage = ir.Usage()
        self.stop: ir.Stop = "end"
        self.frames = 0
        self.failed = False

    def _frame(self, data: dict[str, Any]) -> bytes:
        self.frames += 1
        if self.array:
            return ("[" if self.frames == 1 else ",\n").encode() + dumps(data).encode()
        return b"data: " + dumps(data).encode() + b"\r\n\r\n"

    def _parts(self, parts: list[dict[str, Any]], finish: str | None = None) -> bytes:
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        data: dict[str, Any] = {
            "candidates": [cand],
            "modelVersion": self.model,
            "responseId": self.id,
        }
        if finish:
            cand["finishReason"] = finish
            data["usageMetadata"] = _usage_out(self.usage)
        return self._frame(data)

    def encode(self, ev: ir.Event) -> bytes:
        if isinstance(ev, ir.TextDelta):
            return self._parts([{"text": ev.text}])
        if isinstance(ev, ir.ReasoningDelta):
            return self._parts([{"text": ev.text, "thought": True}]) if ev.text else b""
        if isinstance(ev, ir.BlockStart) and ev.kind == "tool":
            self.calls[ev.index] = ir.ToolCall(ev.id, ev.name, "", ev.meta)
        elif isinstance(ev, ir.ArgsDelta):
            self.calls[ev.index].args += ev.json
        elif isinstance(ev, ir.BlockStop) and ev.index in self.calls:
            return self._parts(_encode_part(self.calls.pop(ev.index), {}))
        elif isinstance(ev, ir.UsageEvent):
            self.usage = ev.usage
        elif isinstance(ev, ir.Finish):
            self.stop = ev.stop
        elif isinstance(ev, ir.Error):
            self.failed = True
            return self._frame(encode_error(ev.status, ev.message)) + (b"]" if self.array else b"")
        return b""

    def close(self) -> bytes:
        if self.failed:
            return b""
        return self._parts([], FINISH_OUT[self.stop]) + (b"]" if self.array else b"")
