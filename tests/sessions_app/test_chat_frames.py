"""A chat event is never one frame over 1 MiB (sessions_app/chat_frames.py): chunks split into
parts that put back together give the text; anything else is cut, saying where it is whole."""

from __future__ import annotations

import json

from sessions_app.chat_frames import FRAME_MAX, frames


def test_a_small_event_is_one_frame_of_utf8() -> None:
    event = {"kind": "agent_message_chunk", "seq": 3, "session_id": "s", "text": "😀" * 10}
    (frame,) = frames(event)
    assert json.loads(frame) == event and "😀" in frame


def test_a_chunk_over_the_limit_comes_in_parts_that_give_its_text() -> None:
    text = "\x01" * 200_000  # 1.2 MB escaped, twice with its content
    event = {"kind": "agent_message_chunk", "seq": 7, "session_id": "s", "text": text}
    event["content"] = {"type": "text", "text": text}
    sent = [json.loads(f) for f in frames(event)]
    assert all(len(f.encode()) <= FRAME_MAX for f in frames(event))
    assert [(p["part"], p["parts"], p["seq"]) for p in sent] == [(i, 5, 7) for i in range(5)]
    assert "".join(p["text"] for p in sent) == text
    assert "".join(p["content"]["text"] for p in sent) == text


def test_another_event_over_the_limit_is_cut_and_names_where_it_is_whole() -> None:
    event = {
        "kind": "tool_call",
        "seq": 9,
        "session_id": "s",
        "title": "cat",
        "out": "x" * FRAME_MAX,
    }
    (frame,) = frames(event)
    cut = json.loads(frame)
    assert cut["truncated"] is True and cut["bytes"] > FRAME_MAX and cut["title"] == "cat"
    assert "out" not in cut and cut["fetch"] == "/api/sessions/s/events/9"
