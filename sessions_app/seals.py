"""The seals of the sessions' rows that make svc act (core/row_seal.py): a queued prompt (sent to
an agent as a person's), a prompt's key (keeps a prompt from being sent), a handover code (picks a
session up) and what a session is started with again on resume (agent, workspace, kind, profile).

A database writer can insert or change any of these rows; svc sends, honours, picks up or starts
again only what it sealed itself. What is not sealed — a session's title, status or history —
is what svc shows, not what it runs (docs/security.md, attacker 8)."""

from __future__ import annotations

from core import row_seal
from sessions_app.models import HandoverCode, QueuedPrompt, Session

QUEUED, PROMPT_KEY, HANDOVER, LAUNCH = "queued prompt", "prompt key", "handover code", "session"


def _queued_fields(row: QueuedPrompt) -> tuple:
    # Not its id or place in the queue: "send now" moves it, and a prompt put back after a
    # failed send is a new row. A copy of a sealed row is a prompt svc wrote, sent again: what
    # a database writer can still do (docs/security.md, attacker 8).
    return (row.session_id, row.text, row.source, row.who, row.created_at)


def queued_seal(row: QueuedPrompt) -> str:
    return row_seal.seal(QUEUED, *_queued_fields(row))


def queued_sealed(row: QueuedPrompt) -> bool:
    if row_seal.sealed(QUEUED, row.seal, *_queued_fields(row)):
        return True
    row_seal.refused(QUEUED, row.pk, f"never sent to session {row.session_id}")
    return False


def prompt_key(session_id: str, key: str) -> str:
    """What is stored of a client's key: its seal. A key only svc can compute, so no row
    written into the database can match a real prompt's key and keep it from being sent."""
    return row_seal.seal(PROMPT_KEY, str(session_id), key)


def _handover_fields(code: HandoverCode) -> tuple:
    return (code.code, code.session_id, code.expires_at)


def handover_seal(code: HandoverCode) -> str:
    return row_seal.seal(HANDOVER, *_handover_fields(code))


def handover_sealed(code: HandoverCode) -> bool:
    if row_seal.sealed(HANDOVER, code.seal, *_handover_fields(code)):
        return True
    row_seal.refused(HANDOVER, code.pk, "nothing was picked up with it")
    return False


def _launch_fields(session: Session) -> tuple:
    return (session.pk, session.agent, session.workspace, session.kind, session.profile_id)


def launch_seal(session: Session) -> str:
    return row_seal.seal(LAUNCH, *_launch_fields(session))


def launch_sealed(session: Session) -> bool:
    """Whether svc started this session with this agent, workspace, kind and profile: only
    then is it started again (resume, and the resume of interrupted chats at start)."""
    if row_seal.sealed(LAUNCH, session.seal, *_launch_fields(session)):
        return True
    row_seal.refused(LAUNCH, session.pk, "it was not started again")
    return False
