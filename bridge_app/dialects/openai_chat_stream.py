"""Streaming for the openai-chat dialect: provider events -> IR (`StreamDecoder`) and
IR -> client events (`StreamEncoder`). The non-streaming codec is in openai_chat.py."""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects.common import dumps, now, sse
from bridge_app.dialects.openai_chat import (
    FINISH_IN,
    FINISH_OUT,
    _usage_in,
    _usage_out,
    encode_error,
)


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
