"""core.untrusted_json: every way a text is refused is a ValueError, never RecursionError, and what
is within the limits parses exactly as json.loads parses it."""

from __future__ import annotations

import json
import time

import pytest

from core import untrusted_json
from core.untrusted_json import MAX_DEPTH, TooDeep, TooLarge, UntrustedJSONError


def nested(depth: int, *, objects: bool = False) -> str:
    return '{"a":' * depth + "1" + "}" * depth if objects else "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_000, 1_499, 100_000])
@pytest.mark.parametrize("objects", [False, True])
def test_nesting_past_the_limit_is_too_deep_at_any_depth(depth: int, objects: bool) -> None:
    with pytest.raises(TooDeep, match=f"deeper than {MAX_DEPTH} levels"):
        untrusted_json.loads(nested(depth, objects=objects), max_bytes=10**7)


def test_the_refusals_are_value_errors_that_old_handlers_already_catch() -> None:
    assert issubclass(TooDeep, ValueError) and issubclass(TooLarge, ValueError)
    assert issubclass(TooDeep, UntrustedJSONError) and not issubclass(TooDeep, RecursionError)


def test_nesting_at_the_limit_parses() -> None:
    assert untrusted_json.loads(nested(MAX_DEPTH), max_bytes=10**6) == json.loads(nested(MAX_DEPTH))
    assert untrusted_json.loads(nested(5), max_bytes=100, max_depth=5) == [[[[[]]]]]
    with pytest.raises(TooDeep):
        untrusted_json.loads(nested(6), max_bytes=100, max_depth=5)


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"a": "[" * 10_000 + "{" * 10_000, "b": ["]", "\\[", '"{']})
    assert untrusted_json.loads(text, max_bytes=10**6) == json.loads(text)


def test_many_containers_side_by_side_are_shallow() -> None:
    text = json.dumps([{"role": "user", "content": [{"type": "text"}]}] * 5_000)
    assert untrusted_json.loads(text, max_bytes=10**7) == json.loads(text)


def test_larger_than_max_bytes_is_too_large_before_parsing() -> None:
    with pytest.raises(TooLarge, match="larger than 10 bytes"):
        untrusted_json.loads(b'"' + b"x" * 10 + b'"', max_bytes=10)
    assert untrusted_json.loads(b'"' + b"x" * 8 + b'"', max_bytes=10) == "x" * 8


@pytest.mark.parametrize("data", ["", "{", "[1,]", "nope", b"\xff\xfe\x00"])
def test_what_is_not_json_is_still_a_json_decode_error(data: str | bytes) -> None:
    with pytest.raises(ValueError) as refused:
        untrusted_json.loads(data, max_bytes=100)
    assert not isinstance(refused.value, UntrustedJSONError)


def test_bytes_str_and_options_are_as_json_loads_takes_them() -> None:
    assert untrusted_json.loads(b'{"x": [1, 2.5, null]}', max_bytes=100) == {"x": [1, 2.5, None]}
    assert untrusted_json.loads(bytearray(b"[true]"), max_bytes=100) == [True]
    assert untrusted_json.loads('"\\ud83d"', max_bytes=100) == "\ud83d"  # as json.loads keeps it

    def strict(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    with pytest.raises(ValueError, match="NaN is not JSON"):
        untrusted_json.loads("[NaN]", max_bytes=100, parse_constant=strict)


def test_the_attack_is_refused_in_milliseconds() -> None:
    started = time.perf_counter()
    for text in (nested(100_000), nested(100_000, objects=True)):
        with pytest.raises(TooDeep):
            untrusted_json.loads(text, max_bytes=10**7)
    assert time.perf_counter() - started < 0.5
