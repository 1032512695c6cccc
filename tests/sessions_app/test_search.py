"""Chat-history search (contract §10 Search): SQLite FTS5 in process, PostgreSQL full-text search
in a fresh database (never skipped: harness.services fails when it is not running), and
`/api/search` — the owner's only, q required, nothing typed ever a 500."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from core import config
from harness.daemon import manage
from harness.services import postgres_database
from tests.sessions_app import search_checks


@pytest.fixture
def api() -> Client:
    return Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})


@pytest.mark.django_db
@pytest.mark.parametrize("check", search_checks.CHECKS, ids=lambda c: c.__name__[6:])
def test_sqlite_fts5(check) -> None:
    assert connection.vendor == "sqlite"
    check()


@pytest.mark.django_db
def test_the_index_is_kept_by_triggers_on_insert_update_and_delete() -> None:
    from sessions_app.models import SessionEvent

    sid, [seq] = search_checks.chat(("agent_message_chunk", {"text": "a lonely ibex"}))
    event = SessionEvent.objects.get(session_id=sid, seq=seq)
    event.payload = {"text": "now a gecko"}
    event.save()
    assert search_checks.search("ibex") == []
    assert [h["seq"] for h in search_checks.search("gecko")] == [seq]
    event.delete()
    assert search_checks.search("gecko") == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sessionevent_fts")
        assert cursor.fetchone() == (0,)


def test_postgresql_full_text_search(tmp_path: Path) -> None:
    with postgres_database() as database_url:
        env = {"DATABASE_URL": database_url}
        manage(tmp_path, "migrate", "--noinput", "-v", "0", env=env)
        script = (
            "from django.db import connection; assert connection.vendor == 'postgresql'; "
            "from tests.sessions_app.search_checks import run_all; run_all()"
        )
        done = manage(tmp_path, "shell", "-c", script, env=env, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "SEARCH-CHECKS-OK" in done.stdout
        indexes = manage(
            tmp_path,
            "shell",
            "-c",
            "from django.db import connection; c = connection.cursor(); "
            'c.execute("SELECT indexdef FROM pg_indexes WHERE indexname = '
            "'sessionevent_search_gin'\"); print(c.fetchone()[0])",
            env=env,
        )
        assert "gin" in indexes.stdout.lower() and "to_tsvector" in indexes.stdout
        # The migration undoes cleanly (the index goes) and applies again.
        manage(tmp_path, "migrate", "sessions_app", "0002", "--noinput", "-v", "0", env=env)
        manage(tmp_path, "migrate", "--noinput", "-v", "0", env=env)


@pytest.mark.django_db
def test_the_api_answers_hits_for_the_owner_only(api: Client) -> None:
    sid, [_, seq] = search_checks.chat(
        ("user_message_chunk", {"text": "hi"}),
        ("agent_message_chunk", {"text": "the flamingo stands"}),
    )
    found = api.get("/api/search", {"q": "flamingo"})
    assert found.status_code == 200, found.content
    [hit] = found.json()
    assert set(hit) == {"session_id", "title", "agent", "seq", "kind", "snippet", "created_at"}
    assert (hit["session_id"], hit["seq"], hit["kind"]) == (sid, seq, "agent_message_chunk")
    assert (hit["title"], hit["agent"]) == ("hi", "fake")  # titled by its first prompt
    assert hit["snippet"] == "the <mark>flamingo</mark> stands"
    assert Client().get("/api/search", {"q": "flamingo"}).status_code == 401
    assert api.get("/api/search", {"q": "flamingo", "limit": "1"}).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("query", [{}, {"q": ""}, {"q": "   "}])
def test_a_missing_or_empty_q_is_a_clear_400(api: Client, query: dict) -> None:
    answer = api.get("/api/search", query)
    assert answer.status_code == 400
    assert "q is required" in answer.content.decode()


@pytest.mark.django_db
def test_a_bad_limit_is_a_400(api: Client) -> None:
    answer = api.get("/api/search", {"q": "x", "limit": "lots"})
    assert answer.status_code == 400 and "limit" in answer.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("q", search_checks.SPECIAL)
def test_special_characters_are_never_a_500(api: Client, q: str) -> None:
    search_checks.chat(("agent_message_chunk", {"text": "nothing to see"}))
    answer = api.get("/api/search", {"q": q})
    assert answer.status_code in (200, 400), answer.content
    if answer.status_code == 200:
        assert isinstance(answer.json(), list)
