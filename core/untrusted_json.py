"""JSON from anyone svc does not trust (a request body, a WebSocket frame, a Redis message):
parsed with a size and a nesting limit, refused with one exception that is a ValueError.

Why a module of its own: the standard parser recurses once per level and, past ~1,500 levels,
raises RecursionError, which is not a ValueError. Every `except ValueError` around `json.loads`
let `[[[[…` through: it killed the fleet bus's reader and a relay's (one Redis message split the
fleet), closed `/ws/chat`, and was a 500 on every JSON route (issue 41, finding 4). A document
that does parse but is nested a thousand levels deep is no better: svc's own code that walks it
(a translator, a serializer) recurses too. So the limit is a number of svc's own, the one the MCP
SDK's parser applies to `/mcp` (pydantic-core: 200), and every surface refuses the same input.

Plain standard library, no Django: the fleet bus and the relays use it as the views do.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 200


class UntrustedJSONError(ValueError):
    """Refused before or while parsing; `str()` says why in words a client can be shown."""


class TooDeep(UntrustedJSONError):
    pass


class TooLarge(UntrustedJSONError):
    pass


def loads(
    data: str | bytes | bytearray,
    *,
    max_bytes: int,
    max_depth: int = MAX_DEPTH,
    **options: Any,
) -> Any:
    """`json.loads(data, **options)` for untrusted input. Raises TooLarge when `data` is longer
    than `max_bytes` (characters for a str), TooDeep when arrays and objects nest deeper than
    `max_depth`, and json.JSONDecodeError (a ValueError too) for what is not JSON."""
    if len(data) > max_bytes:
        raise TooLarge(f"the JSON is larger than {max_bytes} bytes")
    try:
        value = json.loads(data, **options)
    except RecursionError:
        # The C parser unwinds cleanly; what it refused is simply deeper than any limit here.
        raise TooDeep(_too_deep(max_depth)) from None
    # A document cannot nest deeper than it has brackets: counting them (in C, ~1 GB/s) spares
    # nearly every message the walk below. Brackets inside strings only make the count larger.
    if _brackets(data) > max_depth and _deeper_than(value, max_depth):
        raise TooDeep(_too_deep(max_depth))
    return value


def _brackets(data: str | bytes | bytearray) -> int:
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _deeper_than(value: Any, limit: int) -> bool:
    """Breadth first and without recursion: one list of the containers at each level."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            below += [v for v in items if type(v) is dict or type(v) is list]
        level = below
    return False


def _too_deep(limit: int) -> str:
    return f"the JSON nests arrays and objects deeper than {limit} levels"
