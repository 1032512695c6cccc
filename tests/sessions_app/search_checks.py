"""What chat-history search (sessions_app/search.py) must do, on whichever database Django is
connected to: test_search.py runs each check in process on SQLite (FTS5), and all of them in a
`manage.py shell` against a fresh PostgreSQL database. Each check uses its own words, so they
can share one database."""

from __future__ import annotations

from typing import Any

from sessions_app import services
from sessions_app.models import Session
from sessions_app.search import search


def chat(*events: tuple[str, dict[str, Any]]) -> tuple[str, list[int]]:
    """A chat session whose events are stored through the real store path; (id, seqs)."""
    session = Session.objects.create(agent="fake", workspace="/tmp", kind=Session.Kind.CHAT)
    sid = str(session.id)
    seqs = [
        services.session_event_append(session_id=sid, kind=kind, payload=payload)
        for kind, payload in events
    ]
    return sid, seqs


def check_a_word_in_one_chunk_is_found_with_its_session_and_event() -> None:
    sid, seqs = chat(
        ("user_message_chunk", {"text": "echo hello zebrafish world"}),
        ("agent_message_chunk", {"text": "hello"}),
        ("agent_message_chunk", {"text": " zebrafish"}),
        ("agent_message_chunk", {"text": " world"}),
        ("turn_end", {"stop_reason": "end_turn"}),
    )
    hits = search("zebrafish")
    assert {(h["session_id"], h["seq"], h["kind"]) for h in hits} == {
        (sid, seqs[2], "agent_message_chunk"),
        (sid, seqs[0], "user_message_chunk"),
    }, hits
    chunk = next(h for h in hits if h["seq"] == seqs[2])
    assert "<mark>zebrafish</mark>" in chunk["snippet"], chunk
    assert chunk["created_at"] and chunk["created_at"][:4].isdigit()
    assert len(search("ZebraFish")) == 2  # case does not matter
    assert search("zebrafis") == []  # a word, not a substring


def check_thoughts_tool_calls_and_permission_requests_are_found() -> None:
    _, seqs = chat(
        ("agent_thought_chunk", {"text": "hmm the mongoose question"}),
        ("tool_call", {"toolCallId": "t1", "title": "Read narwhal.txt", "tool_kind": "read"}),
        (
            "permission_request",
            {
                "request_id": "r1",
                "tool_call": {"toolCallId": "t2", "title": "Delete the okapi folder"},
                "options": [{"option_id": "allow", "name": "Allow", "kind": "allow_once"}],
            },
        ),
        ("turn_end", {"stop_reason": "end_turn"}),
    )
    assert [(h["seq"], h["kind"]) for h in search("mongoose")] == [(seqs[0], "agent_thought_chunk")]
    assert [(h["seq"], h["kind"]) for h in search("narwhal")] == [(seqs[1], "tool_call")]
    assert [(h["seq"], h["kind"]) for h in search("okapi")] == [(seqs[2], "permission_request")]
    assert search("end_turn") == []  # what is not chat text is not indexed
    assert search("allow_once") == []


def check_ranking_puts_the_closer_match_first() -> None:
    filler = " ".join(f"word{i}" for i in range(40))
    _, weak = chat(("agent_message_chunk", {"text": f"{filler} axolotl {filler}"}))
    _, strong = chat(("agent_message_chunk", {"text": "axolotl axolotl facts: axolotl"}))
    hits = search("axolotl")
    assert [h["seq"] for h in hits] == [strong[0], weak[0]]
    sid_strong = hits[0]["session_id"]
    assert sid_strong != hits[1]["session_id"]
    assert len(search("axolotl", limit=1)) == 1


def check_a_phrase_matches_the_words_in_order() -> None:
    _, yes = chat(("agent_message_chunk", {"text": "the red panda sleeps"}))
    chat(("agent_message_chunk", {"text": "a panda is never red"}))
    assert [h["seq"] for h in search('"red panda"')] == yes
    assert len(search("red panda")) == 2  # without quotes: both words, any order
    assert "<mark>" in search('"red panda"')[0]["snippet"]


def check_or_and_exclusion() -> None:
    chat(("agent_message_chunk", {"text": "a quokka smiles"}))
    chat(("agent_message_chunk", {"text": "a wombat digs"}))
    chat(("agent_message_chunk", {"text": "quokka meets wombat"}))
    assert len(search("quokka or wombat")) == 3
    only = [h["snippet"] for h in search("quokka -wombat")]
    assert only == ["a <mark>quokka</mark> smiles"], only


def check_a_deleted_sessions_events_are_gone() -> None:
    sid, _ = chat(
        ("user_message_chunk", {"text": "remember the pangolin"}),
        ("tool_call", {"toolCallId": "t", "title": "pangolin notes"}),
    )
    assert len(search("pangolin")) == 2
    Session.objects.get(pk=sid).delete()
    assert search("pangolin") == []


def check_the_snippet_is_escaped_html() -> None:
    chat(("agent_message_chunk", {"text": "<script>alert(1)</script> tapir & co"}))
    [hit] = search("tapir")
    assert "<script>" not in hit["snippet"]
    # SQLite shows the tag escaped; PostgreSQL's ts_headline leaves tags out. Never raw HTML.
    assert "<mark>tapir</mark> &amp; co" in hit["snippet"], hit


SPECIAL = [
    '"',
    '""',
    '"""',
    "*",
    "**",
    "AND",
    "NOT",
    "OR",
    "or",
    "-",
    "--",
    "(",
    ")",
    "()",
    "^",
    ":",
    "a:b",
    "NEAR(a b)",
    "'",
    "'; DROP TABLE x; --",
    "\\",
    "%",
    "_",
    "{body}:x",
    "body:x",
    "+",
    "~",
    "&",
    "|",
    "!",
    "<->",
    "@@",
    "\x00",
    "😀",
    "é",
    "a" * 300,
]


def check_special_characters_never_fail() -> None:
    chat(("agent_message_chunk", {"text": "the capybara swims"}))
    for q in SPECIAL:
        assert isinstance(search(q), list), q
    for q in ['capybara"', "capybara)", "(capybara", "capybara*", "capybara:", '"capybara']:
        assert [h["kind"] for h in search(q)] == ["agent_message_chunk"], q
    assert len(search("capybara", limit=10_000)) == 1  # the limit is clamped, not refused


CHECKS = [
    check_a_word_in_one_chunk_is_found_with_its_session_and_event,
    check_thoughts_tool_calls_and_permission_requests_are_found,
    check_ranking_puts_the_closer_match_first,
    check_a_phrase_matches_the_words_in_order,
    check_or_and_exclusion,
    check_a_deleted_sessions_events_are_gone,
    check_the_snippet_is_escaped_html,
    check_special_characters_never_fail,
]


def run_all() -> None:
    """For `manage.py shell -c`: every check, then one line the test reads."""
    for check in CHECKS:
        check()
    print("SEARCH-CHECKS-OK")
