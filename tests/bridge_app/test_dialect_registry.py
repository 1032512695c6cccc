"""The dialect registry: every registered dialect provides the whole codec protocol, and a
dialect that does not is caught."""

from __future__ import annotations

import types

from bridge_app import dialects, routes


def test_every_registered_dialect_provides_the_whole_protocol() -> None:
    assert [d.name for d in dialects.REGISTRY] == list(dialects.NAMES)
    for dialect in dialects.REGISTRY:
        assert dialects.missing(dialect) == [], dialect.name


def test_an_incomplete_dialect_is_named_with_what_it_lacks() -> None:
    half = types.ModuleType("half")
    half.NAME, half.PATHS = "half", {"talk": "generate"}
    gaps = dialects.missing(dialects.Dialect(half, half))
    assert "half.decode_request" in gaps and "half.StreamEncoder" in gaps


def test_a_dialects_paths_come_from_its_codec() -> None:
    for name in ("openai-chat", "openai-responses", "anthropic"):
        for path, operation in dialects.get(name).PATHS.items():
            route = routes.parse(f"/svc/local-api/p/s/{name}/v1/{path}")
            assert route is not None and route.operation == operation, (name, path)


def test_every_codec_counts_tokens_in_its_own_shape() -> None:
    shapes = {name: dialects.get(name).encode_token_count(7) for name in dialects.NAMES}
    assert shapes["anthropic"] == {"input_tokens": 7}
    assert shapes["gemini"] == {"totalTokens": 7}
    assert shapes["openai-responses"]["input_tokens"] == 7
