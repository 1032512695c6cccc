"""One agent turn as a model answer: what the agent is told (`prompt_text`), and its ACP events
turned into the bridge's neutral stream events (`TurnEvents`), which every dialect's codec
encodes. Plain Python: no process, no I/O.

Message chunks are the answer's text; thoughts, tool activity, plans and permission decisions
are its reasoning channel, so a caller sees why the agent did what it did (or stopped).
"""

from __future__ import annotations

from typing import Any

from bridge_app import ir

_STOPS: dict[str, ir.Stop] = {
    "end_turn": "end",
    "max_tokens": "max_tokens",
    "max_turn_requests": "max_tokens",
    "refusal": "filtered",
    "cancelled": "end",
}


def _text(message: ir.Message) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, ir.Text | ir.Reasoning))


def tail(req: ir.Request) -> list[ir.Message]:
    """The messages after the last assistant turn: what is new in a resent conversation."""
    last = max((i for i, m in enumerate(req.messages) if m.role == "assistant"), default=-1)
    return req.messages[last + 1 :]


def carries_history(req: ir.Request) -> bool:
    """The request brings earlier turns of its conversation (Chat and Messages clients resend
    the whole conversation each time)."""
    return len(tail(req)) < len(req.messages)


def prompt_text(req: ir.Request, new_session: bool) -> str:
    """What the agent is told. A session that has seen the conversation gets only its new
    tail; a new one gets the system prompt and the earlier turns first, as context, with the
    request itself last."""
    new = [_text(m) for m in tail(req) if m.role != "assistant"]
    if not new_session:
        return "\n\n".join(t for t in new if t)
    context = [f"[system]\n{s}" for s in req.system if s.strip()]
    earlier = req.messages[: len(req.messages) - len(tail(req))]
    context += [f"[{m.role}]\n{_text(m)}" for m in earlier if _text(m)]
    if not context:
        return "\n\n".join(t for t in new if t)
    return "\n\n".join([*context, "[user, now]", *[t for t in new if t]])


def _reasoning_line(event: dict[str, Any]) -> str | None:
    kind = event.get("kind")
    if kind == "agent_thought_chunk":
        return event.get("text") or ""
    if kind == "tool_call":
        return f"\n[tool] {event.get('title', '')} ({event.get('status', 'pending')})\n"
    if kind == "tool_call_update" and event.get("status"):
        return f"[tool] {event.get('toolCallId', '')}: {event['status']}\n"
    if kind == "plan":
        entries = event.get("entries") or []
        done = lambda e: "x" if e.get("status") == "completed" else " "  # noqa: E731
        return "\n[plan]\n" + "".join(f"[{done(e)}] {e.get('content', '')}\n" for e in entries)
    if kind == "permission_resolved" and event.get("policy"):
        title = (event.get("tool_call") or {}).get("title", "an action")
        if event.get("allowed"):
            return f"\n[permission] allowed: {title}\n"
        return (
            f"\n[permission] refused: {title} — svc refuses permission requests unless the "
            "request sends `X-Svc-Permission-Mode: allow`\n"
        )
    return None


def speaks(event: dict[str, Any]) -> bool:
    """The event shows the caller something: answer text or a reasoning line."""
    if event.get("kind") == "agent_message_chunk":
        return bool(event.get("text"))
    return bool(_reasoning_line(event))


class TurnEvents:
    """ACP events in, neutral stream events out: a text block for the answer, a reasoning block
    for everything else, switching as the agent does."""

    def __init__(self, response_id: str) -> None:
        self.response_id = response_id
        self._index = -1
        self._open: str | None = None  # "text" | "reasoning"
        self.usage: ir.Usage | None = None
        self.started = False
        self.answered = False  # any text or reasoning went out

    def _switch(self, kind: str) -> list[ir.Event]:
        if self._open == kind:
            return []
        events: list[ir.Event] = [] if self._open is None else [ir.BlockStop(self._index)]
        self._index += 1
        self._open = kind
        return [*events, ir.BlockStart(self._index, kind)]  # type: ignore[arg-type]

    def _start(self) -> list[ir.Event]:
        if self.started:
            return []
        self.started = True
        return [ir.Start(id=self.response_id)]

    def feed(self, event: dict[str, Any]) -> list[ir.Event]:
        if event.get("kind") == "usage_update":
            return []
        if event.get("kind") == "agent_message_chunk":
            text = event.get("text") or ""
            if not text:
                return []
            self.answered = True
            return [*self._start(), *self._switch("text"), ir.TextDelta(self._index, text)]
        line = _reasoning_line(event)
        if not line:
            return []
        self.answered = True
        start = [*self._start(), *self._switch("reasoning")]
        return [*start, ir.ReasoningDelta(self._index, line)]

    def finish(self, stop_reason: str, usage: dict[str, Any] | None = None) -> list[ir.Event]:
        events = self._start()
        if self._open is None:  # an answer with no text still has one (empty) text block
            events += self._switch("text")
        events.append(ir.BlockStop(self._index))
        if usage:
            events.append(ir.UsageEvent(_usage(usage)))
        return [*events, ir.Finish(_STOPS.get(stop_reason, "end"))]


def _usage(acp: dict[str, Any]) -> ir.Usage:
    return ir.Usage(
        input_total=int(acp.get("inputTokens") or acp.get("input_tokens") or 0),
        cache_read=int(acp.get("cachedReadTokens") or acp.get("cached_read_tokens") or 0),
        output_total=int(acp.get("outputTokens") or acp.get("output_tokens") or 0),
        reasoning=int(acp.get("thoughtTokens") or acp.get("thought_tokens") or 0),
    )
