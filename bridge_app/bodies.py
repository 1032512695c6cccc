"""Request bodies on their way upstream.

A large body (a 64 MiB request with images) is sent as a JsonBody: encoded in pieces while it is
written, so the objects, their JSON text and its bytes never all exist at once. Small bodies stay
plain bytes: the common case pays nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

LARGE = 1024 * 1024
PIECE = 256 * 1024
# A provider's answer is as large as the provider makes it: only its nesting is limited when it
# is parsed (core.untrusted_json).
MAX_ANSWER = 1 << 30
_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


class JsonBody:
    """JSON text (`str`) or JSON-able objects, encoded piece by piece; `length` is exact, so the
    request keeps a Content-Length (chunked uploads are not accepted everywhere)."""

    def __init__(self, payload: Any) -> None:
        self.payload = payload
        self.length = sum(len(piece) for piece in self._pieces())

    def _pieces(self) -> Iterator[bytes]:
        texts = (
            [self.payload] if isinstance(self.payload, str) else _encoder.iterencode(self.payload)
        )
        for text in texts:
            for start in range(0, len(text), PIECE):
                yield text[start : start + PIECE].encode()

    async def pieces(self) -> AsyncIterator[bytes]:
        for piece in self._pieces():
            yield piece

    def whole(self) -> bytes:
        return b"".join(self._pieces())


def upstream_body(payload: Any, size_hint: int) -> bytes | bytearray | JsonBody:
    """`payload`: the client's JSON text, bytes, or objects; `size_hint`: the client body size."""
    if isinstance(payload, bytes | bytearray):
        return payload
    if size_hint > LARGE:
        return JsonBody(payload)
    if isinstance(payload, str):
        return payload.encode()
    return _encoder.encode(payload).encode()
