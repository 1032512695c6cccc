"""How a chat goes on after its agent's process is gone (contract §17 "Resume").

A resumed chat starts its agent again and continues the same ACP session when the agent can:
`session/resume` when the agent offers it (`agentCapabilities.sessionCapabilities.resume`; the
agent restores the session without replaying it), else `session/load` (`loadSession`; the agent
replays the conversation as updates, which svc drops: its history already holds them). When the
agent offers neither, or both fail (the agent lost its session), svc starts a new ACP session
and primes it: the first prompt after the resume carries a summary of svc's own history of the
chat (the person's prompts and the agent's answers) before the person's words. Either way the
history gets one `resumed` event saying which way it went, so the chat pane shows it.

Plain Python: no process, no I/O. `AcpSession._handshake` picks the way and records it as a
`Continued`; the session services read the stored history and prime the chat.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Way = Literal["session/resume", "session/load", "summary"]

# The summary's bounds, in characters (about 4 characters a token): the newest turns that fit in
# SUMMARY_MAX (about 4k tokens, small beside every agent's context and its own system prompt),
# each message cut to MESSAGE_MAX, keeping its start and end (a question's point and an answer's
# conclusion are usually there). The first prompt, which often says what the chat is for, is
# kept when anything older is left out.
SUMMARY_MAX = 16_000
MESSAGE_MAX = 2_000


# ACP has an agent replay a loaded session before it answers `session/load`, but Gemini CLI
# 0.61 answers first and replays after (its loadSession does not await its streamHistory): the
# replay is over once the agent has said nothing for REPLAY_QUIET_S, within REPLAY_MAX_S.
REPLAY_QUIET_S = 0.5
REPLAY_MAX_S = 10.0


async def replay_over(
    replayed: Callable[[], int], quiet_s: float = REPLAY_QUIET_S, max_s: float = REPLAY_MAX_S
) -> None:
    """Return once the count of replayed updates has not moved for `quiet_s` (or after
    `max_s`): until then what the agent sends is still its replay, which svc drops."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_s
    seen = -1
    while seen != replayed() and loop.time() < deadline:
        seen = replayed()
        await asyncio.sleep(quiet_s)


def ways(capabilities: Any) -> list[Way]:
    """The ways to continue an agent's own session, best first, from its `initialize` answer's
    `agentCapabilities` (None: it said nothing)."""
    found: list[Way] = []
    session = getattr(capabilities, "session_capabilities", None)
    if getattr(session, "resume", None) is not None:
        found.append("session/resume")
    if getattr(capabilities, "load_session", False):
        found.append("session/load")
    return found


@dataclass
class Continued:
    """How a resumed chat went on: `way`, `tried` (the ways that failed, with the agent's
    words) and, for a summary, the `primer` its next prompt carries (once)."""

    way: Way
    agent_session_id: str
    tried: list[str]
    primer: str = ""

    def primed(self, text: str) -> str:
        return f"{self.primer}\n\n[user, now]\n{text}" if self.primer else text

    def event(self) -> dict[str, Any]:
        """The `resumed` event's payload: which way, and why, in a sentence the chat shows."""
        if self.way != "summary":
            message = f"resumed: the agent continued its own session ({self.way})"
            if self.primer:  # an earlier resume's new session never got its summary
                message += "; its next prompt carries svc's summary of this chat"
        else:
            why = (
                f"the agent could not continue its own ({'; '.join(self.tried)})"
                if self.tried
                else "the agent offers neither session/resume nor session/load"
            )
            given = (
                "svc gives it a summary of this chat with the next prompt"
                if self.primer
                else "there was nothing to summarise"
            )
            message = f"resumed in a new agent session: {why}, so {given}"
        return {
            "way": self.way,
            "agent_session_id": self.agent_session_id,
            "tried": self.tried,
            "primed": bool(self.primer),
            "message": message,
        }


def unprimed(events: list[dict[str, Any]]) -> bool:
    """The chat was last resumed by a summary that no prompt has carried yet: the agent session
    it resumes now never heard the conversation."""
    for event in reversed(events):
        if event.get("kind") == "user_message_chunk":
            return False
        if event.get("kind") == "resumed":
            return event.get("way") == "summary" and bool(event.get("primed"))
    return False


def _cut(text: str, limit: int = MESSAGE_MAX) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = (limit - 40) // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"


def turns(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(prompt, answer) pairs from a chat's stored events, in order. A prompt is what the person
    typed (svc stores it before any primer); the answer is the agent's message chunks until the
    turn ended."""
    found: list[tuple[str, list[str]]] = []
    for event in events:
        kind = event.get("kind")
        if kind == "user_message_chunk":
            found.append((str(event.get("text") or ""), []))
        elif kind == "agent_message_chunk" and found:
            found[-1][1].append(str(event.get("text") or ""))
    return [(prompt, "".join(answer)) for prompt, answer in found]


def summary(events: list[dict[str, Any]], limit: int = SUMMARY_MAX) -> str:
    """What a new agent session is told of the chat so far; empty when there was nothing."""
    blocks = [_turn_text(prompt, answer) for prompt, answer in turns(events)]
    if not blocks:
        return ""
    kept = blocks
    if sum(len(b) for b in blocks) > limit:
        first, rest = blocks[0], blocks[1:]
        budget, newest = limit - len(first), []
        for block in reversed(rest):
            if len(block) > budget and newest:
                break
            newest.append(block)  # the newest turn always, however long (it is cut anyway)
            budget -= len(block)
        newest.reverse()
        left_out = len(rest) - len(newest)
        gap = f"[… {left_out} earlier turn{'s' if left_out != 1 else ''} left out …]"
        kept = [first, gap, *newest] if left_out else [first, *newest]
    head = (
        "[svc] This chat was interrupted and its agent could not continue its own session, so "
        "this is a new one. The conversation so far, as svc recorded it:"
    )
    return "\n\n".join([head, *kept])


def _turn_text(prompt: str, answer: str) -> str:
    parts = [f"[user]\n{_cut(prompt)}"]
    if answer.strip():
        parts.append(f"[assistant]\n{_cut(answer)}")
    return "\n\n".join(parts)
