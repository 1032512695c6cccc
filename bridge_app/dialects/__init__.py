"""The dialects svc speaks, each a codec around the neutral form in `bridge_app.ir`.

A dialect is a module that provides everything `Codec` lists (requests, responses, errors, model
lists, token counts, where and how to call a provider) and the two streaming classes of
`StreamCodec`. The four here keep their streaming half in `<dialect>_stream.py` to stay short; a
new dialect may put both in one file. Adding one is that file plus one line in `REGISTRY`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, cast

from bridge_app import ir
from bridge_app.dialects import (
    anthropic,
    anthropic_stream,
    gemini,
    gemini_stream,
    openai_chat,
    openai_chat_stream,
    openai_responses,
    openai_responses_stream,
)


class Codec(Protocol):
    """One dialect's bodies, as a client sends and receives them or a provider takes them."""

    NAME: str
    PATHS: dict[str, str]  # client paths after `v1/` → generate | count_tokens

    def decode_request(self, body: dict[str, Any], model: str) -> ir.Request: ...
    def encode_request(self, req: ir.Request) -> dict[str, Any]: ...
    def decode_response(self, body: dict[str, Any]) -> ir.Response: ...
    def encode_response(self, resp: ir.Response) -> dict[str, Any]: ...
    def encode_error(self, status: int, message: str) -> dict[str, Any]: ...
    def decode_error(self, body: Any) -> str: ...
    def encode_model(self, model_id: str) -> dict[str, Any]: ...
    def encode_model_list(self, ids: list[str]) -> dict[str, Any]: ...
    def encode_token_count(self, total: int) -> dict[str, Any]: ...
    def rewrite_model(self, data: dict[str, Any], model: str) -> None: ...
    # As a provider: where to send, and how to present the profile's key.
    def upstream_url(self, base: str, model: str, stream: bool) -> str: ...
    def count_tokens_url(self, base: str, model: str) -> str | None: ...
    def auth_headers(self, key: str) -> dict[str, str]: ...


class StreamDecoder(Protocol):
    """A provider's stream events in, neutral events out (`close()` flushes what is pending)."""

    def feed(self, event: str, data: dict[str, Any]) -> Iterable[ir.Event]: ...
    def close(self) -> Iterable[ir.Event]: ...


class StreamEncoder(Protocol):
    """Neutral events in, the client's stream bytes out (`close()` ends the stream)."""

    def encode(self, event: ir.Event) -> bytes: ...
    def close(self) -> bytes: ...


@dataclass(frozen=True)
class Dialect:
    codec: ModuleType
    stream: ModuleType  # provides StreamDecoder() and StreamEncoder(model, include_usage, …)

    @property
    def name(self) -> str:
        return self.codec.NAME


REGISTRY: tuple[Dialect, ...] = (
    Dialect(openai_chat, openai_chat_stream),
    Dialect(openai_responses, openai_responses_stream),
    Dialect(anthropic, anthropic_stream),
    Dialect(gemini, gemini_stream),
)
_BY_NAME = {d.name: d for d in REGISTRY}
NAMES = tuple(_BY_NAME)


def get(name: str) -> Codec:
    return cast(Codec, _BY_NAME[name].codec)


def stream(name: str) -> ModuleType:
    return _BY_NAME[name].stream


def missing(dialect: Dialect) -> list[str]:
    """What a registered dialect fails to provide (the registry test asks every dialect)."""
    wanted = [n for n in dir(Codec) if not n.startswith("_")] + ["NAME"]
    gaps = [f"{dialect.codec.__name__}.{n}" for n in wanted if not hasattr(dialect.codec, n)]
    for cls in ("StreamDecoder", "StreamEncoder"):
        if not hasattr(dialect.stream, cls):
            gaps.append(f"{dialect.stream.__name__}.{cls}")
    return gaps
