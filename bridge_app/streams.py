"""Streams through the bridge: the provider's SSE bytes parsed and translated event by event
into the client's own stream grammar (or relayed as they are, when nothing needs to change)."""

from __future__ import annotations

from typing import Any

from bridge_app import bodies, dialects, ir
from bridge_app.dialects.common import dumps
from bridge_app.translate import Outbound, json_of
from bridge_app.usage import Meter
from core import untrusted_json


class SSEParser:
    """Incremental: keeps partial frames across reads; CRLF or LF; `data:` with or without space."""

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        self.buf = (self.buf + chunk).replace(b"\r\n", b"\n")
        *frames, self.buf = self.buf.split(b"\n\n")
        return [f for f in (self._frame(fr) for fr in frames) if f is not None]

    @staticmethod
    def _frame(frame: bytes) -> tuple[str, str] | None:
        event, data = "", []
        for line in frame.decode("utf-8", "replace").split("\n"):
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                event = line[6:].strip()
        return (event, "\n".join(data)) if data else None


class StreamTranslator:
    """Provider SSE bytes in, client-dialect bytes out, one upstream event at a time."""

    def __init__(self, out: Outbound) -> None:
        self.out = out
        self.raw = out.passthrough and out.requested == out.upstream_model
        self.parser = SSEParser()
        self.decoder = dialects.stream(out.provider.NAME).StreamDecoder()
        kwargs = {} if out.client.NAME != "gemini" else {"array": not out.sse}
        encoder = dialects.stream(out.client.NAME).StreamEncoder
        self.encoder = encoder(out.requested, out.include_usage, **kwargs)
        self.events = 0  # upstream events seen: a stream that carried none is a failure
        self.failed = False
        self.answer: list[ir.Event] = []  # kept only when this turn is to be remembered
        self.finished: tuple[dict[str, Any], ir.Message] | None = None
        self.meter = Meter(out.provider.NAME)  # the provider's usage, for the request log
        self.held = b""  # relayed bytes of a frame not yet ended (only when hiding usage)

    def _encode(self, ev: ir.Event) -> bytes:
        if self.out.history is not None:
            self.answer.append(ev)
        return self.encoder.encode(ev)

    def _finish(self) -> bytes:
        """The encoder's closing events; what the turn answered is kept for `remembered()`."""
        tail = self.encoder.close()
        final = getattr(self.encoder, "final", None)
        if self.out.history is not None and final is not None:
            answer = ir.Message("assistant", ir.collect(self.answer, self.out.requested).parts)
            self.finished = (final, answer)
        return tail

    def remembered(self) -> tuple[dict[str, Any], ir.Message] | None:
        """(the final Responses object, the answer) of a translated Responses turn, once it
        ended; exchange.py stores it for `previous_response_id`."""
        return self.finished

    def feed(self, chunk: bytes) -> bytes:
        if self.raw:
            self.meter.scan(chunk)
            return self._usage_frames_dropped(chunk) if self.out.hide_usage else chunk
        pieces = []
        for event, data in self.parser.feed(chunk):
            if data == "[DONE]":
                continue
            try:
                obj = untrusted_json.loads(data, max_bytes=bodies.MAX_ANSWER)
            except ValueError:
                continue  # keep-alives and junk lines are not events
            self.events += 1
            self.meter.event(event, obj)
            if self.out.passthrough:
                pieces.append(self._rewrite(event, obj))
                continue
            for ev in self.decoder.feed(event, obj):
                if not self.failed:  # nothing may follow the dialect's error event
                    pieces.append(self._encode(ev))
                    self.failed = isinstance(ev, ir.Error)
        return b"".join(pieces)

    def whole(self, raw: bytes) -> bytes:
        """A provider that answered a stream request with one JSON body: replay it as events."""
        data = json_of(raw)
        if not isinstance(data, dict):
            return self.fail(502, "the provider answered something that is not a JSON object")
        self.events += 1
        self.meter.whole(data)
        resp = self.out.provider.decode_response(data)
        return b"".join(self._encode(ev) for ev in ir.events_of(resp)) + self._finish()

    def _usage_frames_dropped(self, chunk: bytes) -> bytes:
        """Relayed bytes, less the usage-only chunk the client did not ask for (whole frames:
        a frame split across reads waits for its end)."""
        self.held = (self.held + chunk).replace(b"\r\n", b"\n")
        *frames, self.held = self.held.split(b"\n\n")
        return b"".join(f + b"\n\n" for f in frames if not _usage_only(f))

    def _rewrite(self, event: str, obj: dict[str, Any]) -> bytes:
        if self.out.hide_usage:
            if obj.get("usage") and not obj.get("choices"):
                return b""
            obj.pop("usage", None)
        self.out.client.rewrite_model(obj, self.out.requested)
        head = f"event: {event}\n" if event else ""
        return f"{head}data: {dumps(obj)}\n\n".encode()

    def close(self) -> bytes:
        if self.failed:
            return b""
        if not self.raw and self.events == 0:
            return self.fail(502, "the provider ended the stream without sending any event")
        if self.out.passthrough:
            tail = (
                b"data: [DONE]\n\n"
                if self.out.client.NAME == "openai-chat" and not self.raw
                else b""
            )
            held, self.held = self.held, b""
            return (b"" if _usage_only(held) else held) + tail
        return b"".join(self._encode(ev) for ev in self.decoder.close()) + self._finish()

    def fail(self, status: int, message: str) -> bytes:
        """The client dialect's own error event, for failures after the 200 went out."""
        if self.failed:
            return b""
        self.failed = True
        # Relayed bytes may stop mid-frame: a blank line first keeps the error its own event.
        head = b"\n\n" if self.raw and self.out.client.NAME != "gemini" else b""
        return head + self.encoder.encode(ir.Error(status, message))


def _usage_only(frame: bytes) -> bool:
    """OpenAI Chat's last chunk when usage is asked for: no choices, only the usage."""
    return b'"usage"' in frame and b'"choices":[]' in frame.replace(b" ", b"")
