"""Review comments on a diff (contract §10): the comments a person left on a session's or a
subagent's changes become ONE prompt to that session's agent, each naming `path:line` with the
line it is about quoted from the diff.

Where the prompt goes: a chat (or a subagent's) session gets it as an ACP prompt through the same
`AcpSession.prompt` the dashboard chat uses — after the turn it is in, if any. A subagent's
session is stopped when its turn ends, so an ended chat is resumed first (`asession_resume`, the
dashboard's Resume): comments on a finished subagent's work are the point of reviewing it. An
agent's terminal (its TUI) gets the text as one bracketed paste, control characters removed, then
one Enter (PtySession.paste). A plain shell never gets it: the prompt quotes file lines anyone
may have written, and a shell runs what is typed (`$(touch x)`). A plain shell is a terminal
session of the agent named `shell` — the built-in login shell, or settings that redefine it;
every other agent, built-in or declared in settings, is a program that takes the text as a
prompt. A plain shell, a terminal that has ended, or a subagent still working on its task, is
a 409.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync, sync_to_async

from core.errors import Conflict, DomainError, NotFound
from sessions_app import selectors, services
from sessions_app.models import Session
from subagents_app import diffs
from subagents_app.models import Subagent

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger(__name__)

MAX_COMMENTS = 50
MAX_TEXT_CHARS = 10_000
SIDES = ("new", "old")
# Agents whose terminal is a command interpreter, not an agent: typed text would run.
PLAIN_SHELL_AGENTS = frozenset({"shell"})
QUOTE_CHARS = 300  # a quoted line longer than this is cut: the agent can read the file
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Comment:
    path: str
    line: int
    text: str
    side: str = "new"  # "new": a line number in the changed file; "old": in the base's file


# --- what was asked ------------------------------------------------------------------------------


def parse(body: Any, paths: list[str]) -> list[Comment]:
    """The comments of a request body `{"comments": [{path, line, text, side?}]}`, checked
    against the diff's files; DomainError (400) saying what is wrong otherwise."""
    raw = body.get("comments") if isinstance(body, dict) else None
    if not isinstance(raw, list) or not raw:
        raise DomainError('send {"comments": [{"path", "line", "text", "side"?}]}, at least one')
    if len(raw) > MAX_COMMENTS:
        raise DomainError(f"at most {MAX_COMMENTS} comments at once, got {len(raw)}")
    known = set(paths)
    found = []
    for i, item in enumerate(raw):
        where = f"comments[{i}]"
        if not isinstance(item, dict):
            raise DomainError(f"{where} must be an object with path, line and text")
        path, line, text = item.get("path"), item.get("line"), item.get("text")
        side = item.get("side", "new")
        if not isinstance(path, str) or path not in known:
            listed = ", ".join(sorted(known)[:20]) or "none"
            raise DomainError(f"{where}.path {path!r} is not a file of this diff ({listed})")
        # bool is an int to Python; a JSON `true` is no line number.
        if not isinstance(line, int) or isinstance(line, bool) or line < 1:
            raise DomainError(f"{where}.line must be a positive integer, got {line!r}")
        if not isinstance(text, str) or not text.strip():
            raise DomainError(f"{where}.text must be a non-empty string")
        if len(text) > MAX_TEXT_CHARS:
            raise DomainError(f"{where}.text is over {MAX_TEXT_CHARS} characters")
        if side not in SIDES:
            raise DomainError(f"{where}.side must be one of {', '.join(SIDES)}, got {side!r}")
        found.append(Comment(path=path, line=line, text=text.strip(), side=side))
    return found


# --- the prompt ----------------------------------------------------------------------------------


def diff_lines(patch: str, paths: list[str]) -> dict[tuple[str, str, int], str]:
    """Every line the unified diff shows, by (path, side, line number), with its +/-/space marker.

    The patch's `diff --git` sections come in the order of the diff's file list (one diff, one
    queue: diffs.changes), so the i-th section is the i-th path — no parsing of git's quoted
    names needed."""
    found: dict[tuple[str, str, int], str] = {}
    section, old, new = -1, 0, 0
    in_hunk = False
    for text in patch.split("\n"):
        if text.startswith("diff --git "):
            section, in_hunk = section + 1, False
            continue
        if section < 0 or section >= len(paths):
            continue
        path = paths[section]
        if match := _HUNK.match(text):
            old, new, in_hunk = int(match[1]), int(match[2]), True
            continue
        if not in_hunk or not text or text[0] not in " +-":
            continue
        if text[0] in " -":
            found[(path, "old", old)] = text
            old += 1
        if text[0] in " +":
            found[(path, "new", new)] = text
            new += 1
    return found


def prompt_text(comments: list[Comment], found: dict[str, Any]) -> str:
    """One prompt for all of them: what is being reviewed, then each comment as `path:line`, the
    line it is about (quoted from the diff) and what the reviewer said."""
    paths = [f["path"] for f in found.get("files", [])]
    shown = diff_lines(found.get("patch", ""), paths)
    branch = found.get("branch") or "the working tree"
    base = str(found.get("base", ""))[:12]
    count = f"{len(comments)} comment" + ("s" if len(comments) != 1 else "")
    lines = [
        f"Review of your changes ({branch}, against {base}): {count}. "
        "Address each one in the files; line numbers are in the changed file unless marked "
        "as the original's.",
    ]
    for n, comment in enumerate(comments, 1):
        where = f"{comment.path}:{comment.line}"
        if comment.side == "old":
            where += " (line number in the original, before your change)"
        lines += ["", f"{n}. {where}"]
        if (quoted := shown.get((comment.path, comment.side, comment.line))) is not None:
            cut = quoted if len(quoted) <= QUOTE_CHARS else quoted[:QUOTE_CHARS] + "…"
            lines.append(f"   > {cut}")
        lines += [f"   {said}" if said else "" for said in comment.text.splitlines()]
    return "\n".join(lines)


# --- whose agent ---------------------------------------------------------------------------------


def target_of_session(session_id: str) -> tuple[Session, dict[str, Any]]:
    session = selectors.session_get(selectors.session_id_resolve(session_id) or session_id)
    if session is None:
        raise NotFound(f"no session {session_id!r}; use an id from GET /api/sessions")
    _refuse_working_subagent(Subagent.objects.filter(session=session).first())
    return session, diffs.session_diff(session)


def target_of_subagent(run_id: str) -> tuple[Session, dict[str, Any]]:
    run = diffs.subagent_get(run_id)
    if run.session_id is None:
        raise Conflict(f"subagent {run.name!r} has no session to send comments to")
    _refuse_working_subagent(run)
    return Session.objects.get(pk=run.session_id), diffs.subagent_diff(run)


def _refuse_working_subagent(run: Subagent | None) -> None:
    """A subagent still on its task is stopped by svc when the task ends: a prompt queued
    behind it would be cut off."""
    if run is not None and run.status in diffs.RUNNING:
        raise Conflict(
            f"subagent {run.name!r} is {run.status}: send comments once its task has ended"
        )


# --- sending -------------------------------------------------------------------------------------


def is_plain_shell(session: Session) -> bool:
    return session.kind == Session.Kind.TERMINAL and session.agent in PLAIN_SHELL_AGENTS


def _refuse_plain_shell(session: Session) -> None:
    if is_plain_shell(session):
        raise Conflict(
            f"session {session.id} is a plain shell: diff comments go to agents, and a shell "
            "would run the quoted lines as commands. Start an agent session (claude, codex, "
            "gemini, …) in this workspace and comment on its changes there, or act on the "
            "comments yourself in the shell."
        )


async def asend(session: Session, text: str, host: ProcessHost) -> dict[str, Any]:
    """Hand `text` to the session's agent (through the process `host`) and return at once (the
    turn runs on its own)."""
    _refuse_plain_shell(session)  # before anything touches its terminal
    sid = str(session.id)
    if session.kind == Session.Kind.TERMINAL:
        if not host.type_into_terminal(sid, text):
            raise Conflict(f"terminal session {sid} is not running: start a new one to send this")
        return {"session_id": sid, "delivered": "typed", "resumed": False}
    if session.kind == Session.Kind.API:
        raise Conflict(
            f"session {sid} is driven by its API client (agent-as-API): not prompted here"
        )
    resumed = False
    if host.chat(sid) is None:
        await _resume(session, host)
        resumed = True
    if not host.prompt_soon(sid, text):
        raise Conflict(f"session {sid}'s agent exited before the comments reached it")
    return {"session_id": sid, "delivered": "prompt", "resumed": resumed}


async def _resume(session: Session, host: ProcessHost) -> None:
    """The ended chat's agent started again, under the rules it worked by."""
    sid = str(session.id)
    async with host.resume_lock:
        if host.chat(sid) is not None:
            return
        await services.asession_resume(host=host, session_id=sid)
        chat = host.chat(sid)
        if chat is None:
            raise Conflict(f"session {sid}'s agent exited right after it was resumed")
        if session.kind == Session.Kind.SUBAGENT:
            chat.permission_mode = await _subagent_policy(sid)


async def _subagent_policy(session_id: str) -> str:
    """A resumed subagent works under its turn's rules, as it did (subagent_runs): unattended in
    its own worktree, or read-only when brainstorming."""
    run = await sync_to_async(
        lambda: Subagent.objects.select_related("turn").filter(session_id=session_id).first()
    )()
    return "deny" if run is None or run.turn.mode == "brainstorming" else "allow"


def send(session: Session, text: str, host: ProcessHost) -> dict[str, Any]:
    """The sync edge of asend (DRF views): runs on the daemon's loop."""
    return async_to_sync(asend)(session, text, host)
