"""sessions_app/host/resume.py: which way a chat continues, and the summary a new agent session
is primed with (its bounds), as plain functions."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from acp.schema import AgentCapabilities, SessionCapabilities, SessionResumeCapabilities

from sessions_app.host import resume


def turn(prompt: str, *answer: str) -> list[dict[str, Any]]:
    events = [{"kind": "user_message_chunk", "text": prompt}]
    events += [{"kind": "agent_message_chunk", "text": chunk} for chunk in answer]
    return [*events, {"kind": "turn_end", "stop_reason": "end_turn"}]


def test_session_resume_comes_before_session_load_and_neither_is_no_way() -> None:
    both = AgentCapabilities(
        load_session=True,
        session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities()),
    )
    assert resume.ways(both) == ["session/resume", "session/load"]
    assert resume.ways(AgentCapabilities(load_session=True)) == ["session/load"]
    assert resume.ways(AgentCapabilities()) == []
    assert resume.ways(None) == []


def test_the_summary_gives_each_turn_its_prompt_and_the_whole_answer() -> None:
    events = [
        *turn("remember quokka", "I will", " remember."),
        {"kind": "tool_call", "title": "read file"},  # not part of the summary
        *turn("and now?", "quokka"),
    ]
    text = resume.summary(events)
    assert text.endswith(
        "[user]\nremember quokka\n\n[assistant]\nI will remember.\n\n"
        "[user]\nand now?\n\n[assistant]\nquokka"
    )
    assert text.startswith("[svc] This chat was interrupted")
    assert resume.summary([]) == ""


def test_the_summary_keeps_the_first_prompt_and_the_newest_turns_within_its_bound() -> None:
    events = [*turn("what this chat is for", "ok")]
    for n in range(50):
        events += turn(f"question {n} " + "x" * 500, f"answer {n} " + "y" * 500)
    text = resume.summary(events)
    assert len(text) <= resume.SUMMARY_MAX + 200
    assert "[user]\nwhat this chat is for" in text  # the first prompt stays
    assert "question 49" in text and "answer 49" in text  # the newest turn stays
    assert "question 0 " not in text
    kept = text.count("[user]\n") - 1
    assert f"[… {50 - kept} earlier turns left out …]" in text


def test_a_long_message_keeps_its_start_and_its_end() -> None:
    long = "START " + "m" * 10_000 + " END"
    text = resume.summary(turn(long, "fine"))
    assert "START" in text and "END" in text
    assert "characters left out" in text
    assert len(text) < resume.MESSAGE_MAX + 500


def test_the_primer_goes_before_the_persons_words_once_there_is_one() -> None:
    continued = resume.Continued("summary", "new-id", [], primer="[svc] so far")
    assert continued.primed("hi") == "[svc] so far\n\n[user, now]\nhi"
    continued.primer = ""
    assert continued.primed("hi") == "hi"


def test_the_resumed_event_says_which_way_and_why() -> None:
    own = resume.Continued("session/load", "a1", ["session/resume: Resource not found"])
    assert own.event()["message"] == "resumed: the agent continued its own session (session/load)"
    neither = resume.Continued("summary", "b2", [], primer="x").event()
    assert neither["primed"] is True
    assert "offers neither session/resume nor session/load" in neither["message"]
    lost = resume.Continued("summary", "b2", ["session/load: gone"], primer="x").event()
    assert "could not continue its own (session/load: gone)" in lost["message"]
    empty = resume.Continued("summary", "b2", []).event()
    assert empty["message"].endswith("there was nothing to summarise")


def test_a_summary_no_prompt_carried_yet_is_owed_at_the_next_resume() -> None:
    resumed = {"kind": "resumed", "way": "summary", "primed": True}
    assert resume.unprimed([*turn("a", "b"), resumed])
    assert not resume.unprimed([*turn("a", "b"), resumed, *turn("c", "d")])
    assert not resume.unprimed([*turn("a", "b"), {**resumed, "way": "session/load"}])
    assert not resume.unprimed(turn("a", "b"))


async def test_a_replay_is_over_once_the_agent_has_been_quiet() -> None:
    count = 0

    async def replaying() -> None:
        nonlocal count
        for _ in range(5):
            await asyncio.sleep(0.03)
            count += 1

    task = asyncio.ensure_future(replaying())
    await resume.replay_over(lambda: count, quiet_s=0.1, max_s=30)
    assert count == 5  # every late update was counted before it returned
    await task
    # An agent that never stops replaying: max_s ends the wait (the generous outer bound only
    # catches a wait that never ends; it measures nothing).
    await asyncio.wait_for(resume.replay_over(time.monotonic_ns, quiet_s=0.05, max_s=0.3), 30)
