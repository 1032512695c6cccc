"""A /ws/chat event as the text frames that carry it: never one frame over the limit.

daphne refuses to send a WebSocket message over 1 MiB (`maxMessagePayloadSize`, daphne ≥ 4.2.2)
by raising inside the consumer, which closed the socket 1011; browsers and the `websockets`
client refuse one over 1 MiB on their side too. A 99,000-emoji prompt is 2.4 MB of JSON as
`json.dumps` escapes it (its text twice, text and ACP content), so such a chat could never be
opened again. Here:

- text is sent as UTF-8, not `\\uXXXX` escapes (an emoji costs 4 bytes, not 12);
- a chunk event (`*_chunk` with `text`) over the limit is split into parts: the same event with
  `part` (0…) and `parts`, each carrying its piece of the text (and of a text `content`);
  concatenated, the parts' texts are the event's;
- any other event over the limit is cut to its small fields with `truncated: true`, `bytes` (its
  size) and `fetch`, the route that answers it whole (`GET /api/sessions/{id}/events/{seq}`).
"""

from __future__ import annotations

import json
from typing import Any

FRAME_MAX = 1 << 20  # what daphne sends and what browsers and `websockets` take by default
PART_CHARS = 40_000  # ≤ 6 bytes a character escaped: ≤ 240 KB of text, twice, in one part
SMALL_FIELD = 1024  # a truncated event keeps its fields up to this size (ids, titles, status)


def encode(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False)


def frames(event: dict[str, Any]) -> list[str]:
    """The frames that carry `event`, each at most FRAME_MAX bytes."""
    text = encode(event)
    if _fits(text):
        return [text]
    said = event.get("text")
    if str(event.get("kind", "")).endswith("_chunk") and isinstance(said, str):
        parts = [encode(part) for part in _parts(event, said)]
        if all(_fits(part) for part in parts):
            return parts
    return [encode(truncated(event, len(text.encode())))]


def _fits(text: str) -> bool:
    # Characters first: most frames are small, and counting bytes means encoding them.
    return len(text) * 4 <= FRAME_MAX or len(text.encode()) <= FRAME_MAX


def _parts(event: dict[str, Any], text: str) -> list[dict[str, Any]]:
    pieces = [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)]
    content = event.get("content")
    text_content = isinstance(content, dict) and content.get("type") == "text"
    parts = []
    for index, piece in enumerate(pieces):
        part = {**event, "text": piece, "part": index, "parts": len(pieces)}
        if text_content:
            part["content"] = {**content, "text": piece}
        parts.append(part)
    return parts


def truncated(event: dict[str, Any], size: int) -> dict[str, Any]:
    """The event's small fields, and where to read it whole."""
    kept = {k: v for k, v in event.items() if _small(v)}
    kept |= {"truncated": True, "bytes": size}
    seq, session_id = event.get("seq"), event.get("session_id")
    if isinstance(seq, int) and session_id:
        kept["fetch"] = f"/api/sessions/{session_id}/events/{seq}"
    return kept


def _small(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, str) and len(value) <= SMALL_FIELD
