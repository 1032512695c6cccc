"""Search over every session's chat history (contract §10 Search).

One row per stored event (SessionEvent): its `text` (message and thought chunks, prompts), its
tool call `title`, a permission request's `tool_call.title`. SQLite: the FTS5 table
`sessionevent_fts` that migration 0003's triggers keep in step; PostgreSQL: `websearch_to_tsquery`
against the GIN index on `to_tsvector('simple', …)` of the same text.

The query language is the web-search one on both: words (all must occur), "a quoted phrase",
`or` between alternatives, `-word` to exclude. Nothing a person types is an error: text that
makes no searchable term finds nothing. A snippet is HTML-escaped text with each hit in <mark>.
"""

from __future__ import annotations

import html
import re
from typing import TypedDict

from django.db import DatabaseError, connection

from sessions_app.models import SessionEvent

# Private-use characters as the database's hit markers: the snippet is escaped, then they become
# <mark> tags, so a hit can be shown without trusting the chat's text as HTML.
_START, _STOP = "\ue000", "\ue001"
MAX_LIMIT = 200

# The same expressions as migration 0003's index, so PostgreSQL uses it: the text as written
# and again with punctuation as spaces (its parser keeps `narwhal.txt` as one token).
POSTGRES_DOC = (
    "coalesce(payload->>'text', '') || ' ' || coalesce(payload->>'title', '') || ' ' || "
    "coalesce(payload->'tool_call'->>'title', '')"
)
POSTGRES_SPLIT = f"regexp_replace({POSTGRES_DOC}, '[[:punct:]]+', ' ', 'g')"
POSTGRES_VECTOR = (
    f"(to_tsvector('simple', {POSTGRES_DOC}) || to_tsvector('simple', {POSTGRES_SPLIT}))"
)


class Hit(TypedDict):
    session_id: str
    title: str  # the session's, so a list of hits can name it without another request
    agent: str
    seq: int
    kind: str
    snippet: str
    created_at: str | None


def search(q: str, limit: int = 50) -> list[Hit]:
    """The events matching `q`, best first (then newest), at most `limit` (1..200)."""
    q = (q or "").replace("\x00", " ").strip()  # PostgreSQL refuses NUL in any text
    limit = max(1, min(int(limit), MAX_LIMIT))
    if not q:
        return []
    rows = _postgres(q, limit) if connection.vendor == "postgresql" else _sqlite(q, limit)
    events = SessionEvent.objects.select_related("session").in_bulk([row[0] for row in rows])
    hits: list[Hit] = []
    for pk, snippet, doc in rows:
        event = events.get(pk)
        if event is None:  # deleted between the two queries
            continue
        hits.append(
            {
                "session_id": str(event.session_id),
                "title": event.session.title,
                "agent": event.session.agent,
                "seq": event.seq,
                "kind": event.kind,
                "snippet": _marked(whole_words((snippet or "").strip(), doc or "")),
                "created_at": event.created_at.isoformat() if event.created_at else None,
            }
        )
    return hits


def _marked(snippet: str) -> str:
    return html.escape(snippet).replace(_START, "<mark>").replace(_STOP, "</mark>")


_ELLIPSIS = "…"
_LONGEST_PART = 40  # a cut "word" longer than this (a URL, a hash) is dropped, not completed


def whole_words(snippet: str, doc: str) -> str:
    """The snippet widened to whole words of `doc`, with … where text goes on. Both databases cut
    at their own tokens, and a token is not a word: FTS5 starts `w27-x` at `x`, `don't` at `t`."""
    lead, tail = snippet.startswith(_ELLIPSIS), snippet.endswith(_ELLIPSIS)
    body = snippet[1 if lead else 0 : len(snippet) - (1 if tail and len(snippet) > 1 else 0)]
    plain = body.replace(_START, "").replace(_STOP, "")
    at = doc.find(plain) if plain.strip() else -1
    if at < 0:  # not found as written: drop the partial words at either cut end instead
        return _trimmed(body, lead, tail)
    before, after = doc[:at], doc[at + len(plain) :]
    prefix = re.search(r"\S*$", before).group(0)  # type: ignore[union-attr]
    suffix = re.match(r"\S*", after).group(0)  # type: ignore[union-attr]
    if len(prefix) > _LONGEST_PART or len(suffix) > _LONGEST_PART:
        return _trimmed(body, lead or bool(before.strip()), tail or bool(after.strip()))
    lead = bool(before[: len(before) - len(prefix)].strip())
    tail = bool(after[len(suffix) :].strip())
    return (_ELLIPSIS if lead else "") + prefix + body + suffix + (_ELLIPSIS if tail else "")


def _trimmed(body: str, lead: bool, tail: bool) -> str:
    """Without the first and last words where the text was cut (unless they hold a hit)."""
    if lead:
        first, space, rest = body.partition(" ")
        if space and _START not in first:
            body = rest
    if tail:
        rest, space, last = body.rpartition(" ")
        if space and _STOP not in last and _START not in last:
            body = rest
    return (_ELLIPSIS if lead else "") + body.strip() + (_ELLIPSIS if tail else "")


# --- SQLite FTS5 ---------------------------------------------------------------------------

_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def fts5_query(q: str) -> str:
    """The web-search syntax as an FTS5 expression in which every term is a quoted string, so no
    character a person types can be FTS5 syntax. Empty when nothing searchable is left."""
    parts: list[str] = []  # quoted terms and "OR"
    negated: list[str] = []
    for match in _TOKEN.finditer(q):
        minus, phrase, word = match.groups()
        if word is not None:
            if word.lower() == "or":
                if parts and parts[-1] != "OR":
                    parts.append("OR")
                continue
            minus, phrase = ("-", word[1:]) if word.startswith("-") else ("", word)
        if not any(ch.isalnum() for ch in phrase):  # no token in it: nothing to look for
            continue
        quoted = '"' + phrase.replace('"', '""') + '"'
        (negated if minus else parts).append(quoted)
    while parts and parts[-1] == "OR":
        parts.pop()
    if not parts:
        return ""
    expression = " ".join(parts)
    if negated:
        expression = f"({expression})" + "".join(f" NOT {term}" for term in negated)
    return expression


def _sqlite(q: str, limit: int) -> list[tuple[int, str, str]]:
    expression = fts5_query(q)
    if not expression:
        return []
    sql = (
        "SELECT rowid, snippet(sessionevent_fts, 0, %s, %s, '…', 16), body FROM sessionevent_fts "
        "WHERE sessionevent_fts MATCH %s ORDER BY rank, rowid DESC LIMIT %s"
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, [_START, _STOP, expression, limit])
            return [(int(pk), snippet, body) for pk, snippet, body in cursor.fetchall()]
    except DatabaseError:  # an FTS5 syntax error is no hit, never a 500
        return []


# --- PostgreSQL ----------------------------------------------------------------------------


def _postgres(q: str, limit: int) -> list[tuple[int, str, str]]:
    options = f"StartSel={_START}, StopSel={_STOP}, MaxWords=24, MinWords=8, ShortWord=0"
    sql = (  # constants only: q and the options are parameters
        f"SELECT id, ts_headline('simple', {POSTGRES_DOC}, query, %s), "  # noqa: S608
        f"ts_headline('simple', {POSTGRES_SPLIT}, query, %s), {POSTGRES_DOC} FROM ("
        f"SELECT id, payload, ts_rank({POSTGRES_VECTOR}, query) AS rank, query "
        "FROM sessions_app_sessionevent, websearch_to_tsquery('simple', %s) AS query "
        f"WHERE {POSTGRES_VECTOR} @@ query ORDER BY rank DESC, id DESC LIMIT %s) AS found "
        "ORDER BY rank DESC, id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [options, options, q, limit])
        # The text as written, unless only its punctuation-split form marks the hit.
        return [
            (int(pk), written if _START in written or _START not in split else split, doc)
            for pk, written, split, doc in cursor.fetchall()
        ]
