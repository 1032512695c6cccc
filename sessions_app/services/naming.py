"""A session's name (issue 34 "Sessions have names"): what the agent calls it (ACP
`session_info_update` with a title), else the first words of its first prompt, else
`<agent> in <folder>`; a name the person gave wins over all of them until cleared. The writes of
a session's name: the person's (`session_rename`, one transaction) and the agent's or the first
prompt's (`session_name_from_event`, in the transaction that stores the event)."""

from __future__ import annotations

from django.db import transaction

from core import errors
from core import live as lists
from sessions_app.models import Session

PROMPT_WORDS = 6
PROMPT_CHARS = 60

# Who named it: a later source only replaces an earlier one of lower rank.
RANK = {"": 0, "prompt": 1, "agent": 2, "user": 3}


def first_words(text: str, words: int = PROMPT_WORDS, limit: int = PROMPT_CHARS) -> str:
    """The first `words` words of a prompt, cut on a word boundary within `limit` characters;
    "…" says there was more."""
    all_words = text.split()
    taken: list[str] = []
    for word in all_words[:words]:
        if taken and len(" ".join([*taken, word])) > limit:
            break
        taken.append(word[:limit])
    name = " ".join(taken)
    return f"{name}…" if len(taken) < len(all_words) else name


def _name(session_id: str, title: str, by: str) -> bool:
    """Set the name when `by` may replace the one there; True when it changed."""
    rows = Session.objects.filter(pk=session_id)
    lower = [source for source, rank in RANK.items() if rank <= RANK[by]]
    if by == "prompt":  # only a session that has no name yet takes its first prompt's
        lower = [""]
    changed = rows.filter(title_by__in=lower).exclude(title=title, title_by=by)
    if changed.update(title=title, title_by=by):
        lists.broadcast_on_commit("sessions")
        return True
    return False


def session_name_from_event(*, session_id: str, kind: str, payload: dict) -> None:
    """A chat event that may name its session: the agent's title, or the first prompt. Runs in
    the caller's transaction (records.session_event_append stores the event with it)."""
    if kind == "session_info_update":
        title = " ".join(str(payload.get("title") or "").split())[: Session.TITLE_MAX]
        if title:
            _name(session_id, title, "agent")
    elif kind == "user_message_chunk":
        title = first_words(str(payload.get("text") or ""))
        if title:
            _name(session_id, title, "prompt")


@transaction.atomic
def session_rename(*, session_id: str, title: str) -> Session:
    """The person's name for it; a blank one hands naming back to the agent and the prompt
    (the name goes back to the default until one of them gives another)."""
    session = Session.objects.filter(pk=session_id).first()
    if session is None:
        raise errors.NotFound(f"no session {session_id}")
    title = " ".join(title.split())[: Session.TITLE_MAX]
    session.title, session.title_by = (title, "user") if title else ("", "")
    session.save(update_fields=["title", "title_by", "updated_at"])
    lists.broadcast_on_commit("sessions")
    return session
