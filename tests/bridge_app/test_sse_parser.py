"""The bridge's incremental SSE parser (bridge_app/streams.py): the same frames however the
provider's bytes are split across reads, CRLF or LF, `data:` with or without its space."""

from __future__ import annotations

import pytest

from bridge_app.streams import SSEParser

SSE = (
    b'event: message_start\ndata: {"a": 1}\n\n'
    b": a comment, not an event\n\n"
    b'data:{"b": "h\xc3\xa9llo \xe2\x9c\x93"}\n\n'
    b"event: multi\ndata: line one\ndata: line two\n\n"
    b"data: [DONE]\n\n"
)
PARSED = [
    ("message_start", '{"a": 1}'),
    ("", '{"b": "héllo ✓"}'),
    ("multi", "line one\nline two"),
    ("", "[DONE]"),
]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_sse_parser_gives_the_same_frames_however_the_reads_are_split(newline: bytes) -> None:
    raw = SSE.replace(b"\n", newline)
    for at in range(len(raw) + 1):  # every split point: mid-line, mid-CRLF, mid-character
        parser = SSEParser()
        assert parser.feed(raw[:at]) + parser.feed(raw[at:]) == PARSED, f"split at {at}"
    one_by_one = SSEParser()
    assert [f for i in range(len(raw)) for f in one_by_one.feed(raw[i : i + 1])] == PARSED


def test_sse_parser_takes_data_with_or_without_its_space_and_removes_only_one() -> None:
    parsed = SSEParser().feed(b"data:x\n\ndata: y\n\ndata:  z\n\nevent:  e  \ndata:\n\n")
    assert parsed == [("", "x"), ("", "y"), ("", " z"), ("e", "")]


def test_sse_parser_keeps_an_unfinished_frame_until_its_blank_line_arrives() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: [DONE]\n") == []
    assert parser.feed(b"\r\n") == [("", "[DONE]")]  # an LF line, then a CRLF blank line
    assert parser.feed(b"event: only-an-event\n\n") == []  # no data: not an event
