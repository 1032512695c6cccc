"""Streaming for the openai-responses dialect: provider events -> IR (`StreamDecoder`) and
IR -> client events (`StreamEncoder`). The non-streaming codec is in openai_responses.py."""

from __future__ import annotations

from typing import Any

from bridge_app import ir
from bridge_app.dialects import openai_chat
from bridge_app.dialects.common import sse
from bridge_app.dialects.openai_responses import _envelope, _stop_in, _usage_in


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
        self.final: dict[str, Any] | None = None

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

    def _text(self, ev: ir.TextDelta | ir.ReasoningDelta) -> bytes:
        oi, item = self.items[ev.index]
        item["_text"] = item.get("_text", "") + ev.text
        if not ev.text:
            return b""
        ids = {"item_id": item["id"], "output_index": oi, "delta": ev.text}
        if isinstance(ev, ir.TextDelta):
            return self._ev("response.output_text.delta", **ids, content_index=0, logprobs=[])
        return self._ev("response.reasoning_summary_text.delta", **ids, summary_index=0)

    def _error(self, ev: ir.Error) -> bytes:
        self.failed = True
        err = openai_chat.encode_error(ev.status, ev.message)["error"]
        code = err["code"] or err["type"]
        resp = _envelope(self.id, self.model, "failed", self.output, self.usage)
        resp["error"] = {"code": code, "message": ev.message}
        out = self._ev("error", code=code, message=ev.message, param=None)
        return out + self._ev("response.failed", response=resp)

    def encode(self, ev: ir.Event) -> bytes:
        if isinstance(ev, ir.TextDelta | ir.ReasoningDelta):
            return self._text(ev)
        if isinstance(ev, ir.ArgsDelta):
            oi, item = self.items[ev.index]
            item["arguments"] += ev.json
            ids = {"item_id": item["id"], "output_index": oi}
            return self._ev("response.function_call_arguments.delta", **ids, delta=ev.json)
        if isinstance(ev, ir.BlockStart):
            return self._block_start(ev)
        if isinstance(ev, ir.BlockStop):
            return self._block_stop(ev.index)
        if isinstance(ev, ir.Start):
            resp = _envelope(self.id, self.model, "in_progress", [], None)
            created = self._ev("response.created", response=resp)
            return created + self._ev("response.in_progress", response=resp)
        if isinstance(ev, ir.UsageEvent):
            self.usage = ev.usage
        elif isinstance(ev, ir.Finish):
            self.stop = ev.stop
        elif isinstance(ev, ir.Error):
            return self._error(ev)
        return b""

    def close(self) -> bytes:
        if self.failed:
            return b""
        out = b"".join(self._block_stop(i) for i in list(self.items))
        resp = _envelope(
            self.id, self.model, "completed", self.output, self.usage or ir.Usage(), self.stop
        )
        kind = "response.incomplete" if resp["status"] == "incomplete" else "response.completed"
        self.final = resp  # the whole response, for svc's store
        return out + self._ev(kind, response=resp)
