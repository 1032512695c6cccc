"""Small helpers the four codecs share: SSE framing, data URLs, timestamps."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from bridge_app import ir


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {dumps(data)}\n\n".encode()


def now() -> int:
    return int(time.time())


def rfc3339(ts: int = 0) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def image_from_url(url: str) -> ir.Image:
    """`data:<type>;base64,<data>` becomes inline bytes; anything else stays a URL."""
    if url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return ir.Image(media_type=head or "image/png", data=data)
    return ir.Image(url=url)


def text_of(content: Any) -> str:
    """Text of a string or of a list of text-ish blocks (any dialect's spelling)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text", ""))
    return str(content)


def obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ir.bad_request(f"{what} must be an object")
    return value


def items(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ir.bad_request(f"{what} must be an array")
    return value


def number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ir.bad_request(f"{what} must be a number")
    return value


def stop_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(s) for s in value]


def merge_turns(messages: list[ir.Message]) -> list[ir.Message]:
    """Merge consecutive same-role turns and drop empty ones (Anthropic and Gemini require it)."""
    out: list[ir.Message] = []
    for msg in messages:
        parts = [p for p in msg.parts if not (isinstance(p, ir.Text) and not p.text)]
        if not parts:
            continue
        if out and out[-1].role == msg.role:
            out[-1].parts.extend(parts)
        else:
            out.append(ir.Message(msg.role, parts))
    return out
