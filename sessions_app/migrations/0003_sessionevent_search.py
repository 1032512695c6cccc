"""Full-text search over the chat history (contract §10 Search).

SQLite: an FTS5 table `sessionevent_fts` (rowid = SessionEvent.id) kept in step by triggers.
PostgreSQL: a GIN index on `to_tsvector('simple', …)` of the same text. Each operation runs only
on its own database; what is indexed is the event's `text`, its tool call `title` and a
permission request's `tool_call.title` (sessions_app/search.py queries the same expressions).
"""

# ruff: noqa: S608 (SQL built from constants only)
from django.db import migrations

# The text of one event, as SQL over the row `{row}` (NEW / OLD in a trigger, the table in a
# backfill). Invalid JSON never aborts an insert: it is just not indexed.
SQLITE_DOC = (
    "CASE WHEN json_valid({row}.payload) THEN trim("
    "coalesce(json_extract({row}.payload, '$.text'), '') || ' ' || "
    "coalesce(json_extract({row}.payload, '$.title'), '') || ' ' || "
    "coalesce(json_extract({row}.payload, '$.tool_call.title'), '')"
    ") ELSE '' END"
)

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE sessionevent_fts USING fts5("
    "body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER sessionevent_fts_insert AFTER INSERT ON sessions_app_sessionevent BEGIN "
    "INSERT INTO sessionevent_fts(rowid, body) SELECT new.id, doc FROM (SELECT "
    + SQLITE_DOC.format(row="new")
    + " AS doc) WHERE doc != ''; END",
    "CREATE TRIGGER sessionevent_fts_delete AFTER DELETE ON sessions_app_sessionevent BEGIN "
    "DELETE FROM sessionevent_fts WHERE rowid = old.id; END",
    "CREATE TRIGGER sessionevent_fts_update AFTER UPDATE OF payload ON sessions_app_sessionevent "
    "BEGIN DELETE FROM sessionevent_fts WHERE rowid = old.id; "
    "INSERT INTO sessionevent_fts(rowid, body) SELECT new.id, doc FROM (SELECT "
    + SQLITE_DOC.format(row="new")
    + " AS doc) WHERE doc != ''; END",
    "INSERT INTO sessionevent_fts(rowid, body) SELECT id, doc FROM (SELECT e.id AS id, "
    + SQLITE_DOC.format(row="e")
    + " AS doc FROM sessions_app_sessionevent e) WHERE doc != ''",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS sessionevent_fts_update",
    "DROP TRIGGER IF EXISTS sessionevent_fts_delete",
    "DROP TRIGGER IF EXISTS sessionevent_fts_insert",
    "DROP TABLE IF EXISTS sessionevent_fts",
]

POSTGRES_DOC = (
    "coalesce(payload->>'text', '') || ' ' || coalesce(payload->>'title', '') || ' ' || "
    "coalesce(payload->'tool_call'->>'title', '')"
)
# The text as written, and again with punctuation as spaces: PostgreSQL's parser keeps
# `narwhal.txt` or `src/app.py` as one token, so `narwhal` alone would not be found otherwise.
POSTGRES_VECTOR = (
    f"(to_tsvector('simple', {POSTGRES_DOC}) || "
    f"to_tsvector('simple', regexp_replace({POSTGRES_DOC}, '[[:punct:]]+', ' ', 'g')))"
)
POSTGRES_FORWARD = [
    "CREATE INDEX sessionevent_search_gin ON sessions_app_sessionevent "
    f"USING GIN ({POSTGRES_VECTOR})"
]
POSTGRES_BACKWARD = ["DROP INDEX IF EXISTS sessionevent_search_gin"]


class RunSQLOn(migrations.RunSQL):
    """RunSQL that runs only when the connection is of `vendor` (sqlite, postgresql)."""

    def __init__(self, vendor: str, sql, reverse_sql=None, **kwargs) -> None:
        super().__init__(sql, reverse_sql, **kwargs)
        self.vendor = vendor

    def deconstruct(self):
        name, args, kwargs = super().deconstruct()
        return name, args, {"vendor": self.vendor, **kwargs}

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor == self.vendor:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor == self.vendor:
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0002_subagent_results")]

    operations = [
        RunSQLOn("sqlite", SQLITE_FORWARD, SQLITE_BACKWARD),
        RunSQLOn("postgresql", POSTGRES_FORWARD, POSTGRES_BACKWARD),
    ]
