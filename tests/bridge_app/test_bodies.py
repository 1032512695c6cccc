"""Large upstream bodies are encoded piece by piece, byte for byte what one dumps would give."""

from __future__ import annotations

import json

from bridge_app import bodies


def one_shot(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def test_pieces_join_to_the_one_shot_encoding_with_an_exact_length() -> None:
    obj = {"model": "m", "messages": [{"content": "é" * 300_000 + '\n"x"' * 1000}], "n": 1.5}
    body = bodies.JsonBody(obj)
    assert body.whole() == one_shot(obj)
    assert body.length == len(one_shot(obj))
    assert max(len(p) for p in body._pieces()) <= 4 * bodies.PIECE  # utf-8: ≤ 4 bytes a char


async def test_async_pieces_carry_the_same_bytes() -> None:
    text = '{"model":"m","big":"' + "x" * (3 * bodies.PIECE) + '"}'
    body = bodies.JsonBody(text)
    assert b"".join([p async for p in body.pieces()]) == text.encode()


def test_small_payloads_stay_plain_bytes_and_large_ones_stream() -> None:
    assert bodies.upstream_body({"a": 1}, size_hint=10) == b'{"a":1}'
    assert bodies.upstream_body('{"a":1}', size_hint=10) == b'{"a":1}'
    assert isinstance(bodies.upstream_body({"a": 1}, size_hint=bodies.LARGE + 1), bodies.JsonBody)
