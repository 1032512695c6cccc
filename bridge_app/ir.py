"""The neutral form every dialect decodes into and encodes from: requests, responses, stream events.

Block/part based (Anthropic-like) because that is the richest of the four: it keeps tool-result
`is_error`, images inside tool results and reasoning signatures, which an OpenAI-Chat pivot loses.
Plain dataclasses, no Django, no I/O.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

from core import untrusted_json
from core.errors import DomainError

Role = Literal["user", "assistant", "system"]
Stop = Literal["end", "max_tokens", "stop_sequence", "tool_use", "filtered", "pause", "error"]


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


MAX_ARGUMENTS = 64 * 1024 * 1024  # a request body's limit (contract §11)


def parse_args(args_json: str) -> dict[str, Any]:
    """Tool arguments as an object; Anthropic and Gemini want objects, weak models send junk."""
    if not args_json:
        return {}
    try:
        value = untrusted_json.loads(args_json, max_bytes=MAX_ARGUMENTS)
    except ValueError:  # not JSON, or nested past the limit: carried as the text it is
        return {"_raw": args_json}
    return value if isinstance(value, dict) else {"value": value}


# --- request/response parts ------------------------------------------------------------------


@dataclass(slots=True)
class Text:
    text: str


@dataclass(slots=True)
class Image:
    media_type: str = "image/png"
    data: str = ""  # base64, no data: prefix
    url: str = ""  # http(s) URL when not inline

    def data_url(self) -> str:
        return self.url or f"data:{self.media_type};base64,{self.data}"


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    args: str = ""  # JSON text, as OpenAI carries it
    meta: dict[str, Any] = field(default_factory=dict)  # opaque provider state (signatures)


@dataclass(slots=True)
class ToolResult:
    call_id: str
    content: list[Text | Image] = field(default_factory=list)
    is_error: bool = False
    name: str = ""

    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))


@dataclass(slots=True)
class Reasoning:
    text: str = ""
    signature: str = ""
    origin: str = ""  # the dialect that produced the signature; others must drop it


Part = Text | Image | ToolCall | ToolResult | Reasoning


@dataclass(slots=True)
class Message:
    role: Role
    parts: list[Part] = field(default_factory=list)


@dataclass(slots=True)
class Tool:
    name: str
    description: str = ""
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(slots=True)
class Request:
    model: str
    messages: list[Message] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    stream: bool = False
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | dict[str, str] | None = None  # auto | none | required | {"name": ...}
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: list[str] = field(default_factory=list)
    seed: int | None = None
    reasoning_effort: str | None = None
    json_schema: dict[str, Any] | None = None  # {"name", "schema", "strict"} or {} for json_object
    user: str | None = None

    def tool_names(self) -> dict[str, str]:
        """call id -> tool name, from the history: Gemini answers tool results by name."""
        names: dict[str, str] = {}
        for msg in self.messages:
            for part in msg.parts:
                if isinstance(part, ToolCall):
                    names[part.id] = part.name
        return names


@dataclass(slots=True)
class Usage:
    input_total: int = 0  # includes cached tokens
    cache_read: int = 0
    cache_write: int = 0
    output_total: int = 0  # includes reasoning tokens
    reasoning: int = 0


@dataclass(slots=True)
class Response:
    id: str
    model: str
    parts: list[Part] = field(default_factory=list)
    stop: Stop = "end"
    stop_sequence: str | None = None
    usage: Usage = field(default_factory=Usage)


# --- stream events ---------------------------------------------------------------------------


@dataclass(slots=True)
class Start:
    id: str = ""
    usage: Usage | None = None


@dataclass(slots=True)
class BlockStart:
    index: int
    kind: Literal["text", "tool", "reasoning"]
    id: str = ""
    name: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TextDelta:
    index: int
    text: str


@dataclass(slots=True)
class ArgsDelta:
    index: int
    json: str


@dataclass(slots=True)
class ReasoningDelta:
    index: int
    text: str = ""
    signature: str = ""


@dataclass(slots=True)
class BlockStop:
    index: int


@dataclass(slots=True)
class UsageEvent:
    usage: Usage  # cumulative: keep the last one, never sum


@dataclass(slots=True)
class Finish:
    stop: Stop
    stop_sequence: str | None = None


@dataclass(slots=True)
class Error:
    status: int
    message: str


Event = (
    Start
    | BlockStart
    | TextDelta
    | ArgsDelta
    | ReasoningDelta
    | BlockStop
    | UsageEvent
    | Finish
    | Error
)


# --- errors ----------------------------------------------------------------------------------


class BridgeError(DomainError):
    """svc's domain error on the bridge: reported to the client in its own dialect, with an
    HTTP status and, sometimes, headers (Retry-After, …)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, status=status)
        self.headers = headers or {}


def bad_request(message: str) -> BridgeError:
    return BridgeError(400, message)


def collect(events: list[Event], model: str) -> Response:
    """Fold a whole event list into a response (used by tests and by non-stream fallbacks)."""
    resp = Response(id="", model=model)
    blocks: dict[int, Part] = {}
    for ev in events:
        if isinstance(ev, Start):
            resp.id = ev.id
            if ev.usage:
                resp.usage = ev.usage
        elif isinstance(ev, BlockStart):
            part: Part
            if ev.kind == "tool":
                part = ToolCall(ev.id, ev.name, "", dict(ev.meta))
            else:
                part = Text("") if ev.kind == "text" else Reasoning()
            blocks[ev.index] = part
            resp.parts.append(part)
        elif isinstance(ev, TextDelta):
            blocks[ev.index].text += ev.text  # type: ignore[union-attr]
        elif isinstance(ev, ArgsDelta):
            blocks[ev.index].args += ev.json  # type: ignore[union-attr]
        elif isinstance(ev, ReasoningDelta):
            blocks[ev.index].text += ev.text  # type: ignore[union-attr]
            blocks[ev.index].signature += ev.signature  # type: ignore[union-attr]
        elif isinstance(ev, UsageEvent):
            resp.usage = ev.usage
        elif isinstance(ev, Finish):
            resp.stop, resp.stop_sequence = ev.stop, ev.stop_sequence
    return resp


def events_of(resp: Response) -> list[Event]:
    """A whole response as stream events: for providers that answer JSON to a stream request."""
    events: list[Event] = [Start(resp.id, resp.usage)]
    for i, part in enumerate(resp.parts):
        if isinstance(part, ToolCall):
            events += [BlockStart(i, "tool", part.id, part.name, dict(part.meta))]
            events += [ArgsDelta(i, part.args)] if part.args else []
        elif isinstance(part, Text | Reasoning):
            kind: Literal["text", "reasoning"] = "text" if isinstance(part, Text) else "reasoning"
            delta: Event = (
                TextDelta(i, part.text) if kind == "text" else ReasoningDelta(i, part.text)
            )
            events += [BlockStart(i, kind), delta]
        else:
            continue
        events.append(BlockStop(i))
    return [*events, UsageEvent(resp.usage), Finish(resp.stop, resp.stop_sequence)]


def estimate_tokens(req: Request) -> int:
    """A local estimate (about 4 characters a token), used when the provider cannot count."""
    chars = sum(len(s) for s in req.system)
    for msg in req.messages:
        for part in msg.parts:
            if isinstance(part, Text | Reasoning):
                chars += len(part.text)
            elif isinstance(part, ToolCall):
                chars += len(part.name) + len(part.args)
            elif isinstance(part, ToolResult):
                chars += len(part.text())
            elif isinstance(part, Image):
                chars += 4 * 1000
    chars += sum(len(json.dumps(t.schema)) + len(t.name) for t in req.tools)
    return max(1, chars // 4)
