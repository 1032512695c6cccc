"""Review comments on a diff (contract §10, subagents_app/diff_comments.py) in process: what a
request may ask (paths of the diff, positive lines, non-empty text, ≤ 50), the one prompt they
become (`path:line`, the quoted line, the comment), and its delivery — to a chat's agent as an ACP
prompt (an ended chat resumed first), into an agent's terminal as one paste followed by one
Enter — with the refusals (400 in the API's error shape, 409 for a plain shell, an ended terminal
or a subagent still on its task). Text quoted from files never reaches a shell, and never carries
a control character into a terminal (issue 31, finding 3)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from core.errors import DomainError
from harness.git import git
from harness.runtime import running
from sessions_app import services
from sessions_app.models import Session, SessionEvent
from subagents_app import diff_comments, diffs, subagents
from subagents_app.diff_comments import Comment
from subagents_app.models import Subagent

# The fixtures `review_agents`, `repo` and `api`: conftest.py (test_diff_comments_terminal.py
# uses them too).
pytestmark = pytest.mark.usefixtures("review_agents")

PATCH_FILES = ["app.py", "old.txt"]
PATCH = """diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1,3 +1,4 @@
 import os
-x = 1
+x = 2
+y = 3
 print(x)
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-first
-second
\\ No newline at end of file
"""
# An agent's TUI as far as a paste goes: raw mode, bracketed paste on, then it reads until the
# paste has ended and an Enter came, and prints what it read (hex) for the test to check.
FOUND = {
    "base": "0123456789abcdef0123",
    "branch": "svc/t/a",
    "patch": PATCH,
    "files": [{"path": p} for p in PATCH_FILES],
}


# --- what may be asked ---------------------------------------------------------------------------


def test_parse_takes_comments_on_the_diffs_files() -> None:
    body = {
        "comments": [
            {"path": "app.py", "line": 2, "text": "  why 2?  "},
            {"path": "old.txt", "line": 1, "text": "keep", "side": "old"},
        ]
    }
    assert diff_comments.parse(body, PATCH_FILES) == [
        Comment("app.py", 2, "why 2?", "new"),
        Comment("old.txt", 1, "keep", "old"),
    ]


@pytest.mark.parametrize(
    ("comments", "says"),
    [
        (None, "at least one"),
        ([], "at least one"),
        ([{"path": "nope.py", "line": 1, "text": "x"}], "not a file of this diff"),
        ([{"path": "app.py", "line": 0, "text": "x"}], "positive integer"),
        ([{"path": "app.py", "line": "3", "text": "x"}], "positive integer"),
        ([{"path": "app.py", "line": True, "text": "x"}], "positive integer"),
        ([{"path": "app.py", "line": 1, "text": "   "}], "non-empty"),
        ([{"path": "app.py", "line": 1, "text": "x", "side": "left"}], "side must be one of"),
        ([{"path": "app.py", "line": 1, "text": "x"}] * 51, "at most 50"),
        (["app.py:1"], "must be an object"),
    ],
)
def test_parse_refuses(comments: Any, says: str) -> None:
    with pytest.raises(DomainError, match=says) as err:
        diff_comments.parse({"comments": comments}, PATCH_FILES)
    assert err.value.status == 400


# --- the prompt ----------------------------------------------------------------------------------


def test_diff_lines_numbers_both_sides() -> None:
    shown = diff_comments.diff_lines(PATCH, PATCH_FILES)
    assert shown[("app.py", "new", 2)] == "+x = 2" and shown[("app.py", "new", 3)] == "+y = 3"
    assert shown[("app.py", "old", 2)] == "-x = 1" and shown[("app.py", "new", 4)] == " print(x)"
    assert shown[("app.py", "old", 3)] == " print(x)"
    assert shown[("old.txt", "old", 2)] == "-second" and ("old.txt", "new", 1) not in shown


def test_one_prompt_names_each_comment_as_path_and_line_with_the_line_quoted() -> None:
    comments = [
        Comment("app.py", 3, "y is never used\nremove it"),
        Comment("old.txt", 2, "why delete this?", "old"),
        Comment("app.py", 99, "far"),
    ]
    text = diff_comments.prompt_text(comments, FOUND)
    assert text.startswith("Review of your changes (svc/t/a, against 0123456789ab): 3 comments.")
    assert "1. app.py:3\n   > +y = 3\n   y is never used\n   remove it" in text
    assert "2. old.txt:2 (line number in the original, before your change)\n   > -second\n" in text
    assert text.endswith("3. app.py:99\n   far")  # not a line the diff shows: nothing quoted


# --- the API -------------------------------------------------------------------------------------


def post(api: Client, url: str, body: Any) -> Any:
    return api.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_api_refusals_have_the_usual_error_shape(api: Client, repo: Path) -> None:
    session = Session.objects.create(
        agent="cat", workspace=str(repo), kind="terminal", status="exited"
    )
    url = f"/api/sessions/{session.id}/diff/comments"
    bad = post(api, url, {"comments": [{"path": "elsewhere.py", "line": 1, "text": "x"}]})
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error["code"] == "invalid" and "app.py" in error["message"]  # says what is there
    assert (
        post(api, url, {"comments": [{"path": "app.py", "line": -1, "text": "x"}]}).status_code
        == 400
    )
    ended = post(api, url, {"comments": [{"path": "app.py", "line": 2, "text": "x"}]})
    assert ended.status_code == 409 and "not running" in ended.json()["error"]["message"]
    assert post(api, "/api/sessions/nope/diff/comments", {"comments": []}).status_code == 404
    assert post(api, "/api/subagents/0123abcd/diff/comments", {"comments": []}).status_code == 404
    assert Client().post(url, "{}", content_type="application/json").status_code == 401


@pytest.mark.django_db
def test_api_refuses_a_subagent_still_on_its_task(api: Client, repo: Path) -> None:
    git(repo, "commit", "-qam", "clean")  # worktrees are made from a clean repository only
    turn = subagents.turn_create(
        mode="parallel", cwd=str(repo), agents=[{"name": "a", "agent": "fake", "task": "x"}]
    )
    try:
        run = turn.subagents.get()
        Subagent.objects.filter(pk=run.pk).update(status="running")
        (Path(subagents.worktree_of(run)) / "app.py").write_text("changed\n")
        answer = post(
            api,
            f"/api/subagents/{run.id}/diff/comments",
            {"comments": [{"path": "app.py", "line": 1, "text": "x"}]},
        )
        assert answer.status_code == 409 and "once its task has ended" in answer.content.decode()
    finally:
        subagents.turn_cleanup(turn_id=str(turn.id))


# --- delivery ------------------------------------------------------------------------------------


async def delivered(session_id: str, turns: int) -> None:
    """The chat has ended `turns` turns (asend hands the prompt on and returns at once)."""
    async with asyncio.timeout(20):
        while len(await events(session_id, "turn_end")) < turns:
            await asyncio.sleep(0.02)


async def events(session_id: str, kind: str, after_seq: int = 0) -> list[SessionEvent]:
    return await sync_to_async(list)(
        SessionEvent.objects.filter(session_id=session_id, kind=kind, seq__gt=after_seq).order_by(
            "seq"
        )
    )


@pytest.mark.django_db(transaction=True)
async def test_a_chat_agent_gets_one_prompt_and_an_ended_chat_is_resumed(repo: Path) -> None:
    async with running() as rt:
        session = await services.asession_create(
            host=rt.host, agent="fake", workspace=str(repo), kind="chat"
        )
        sid = str(session.id)
        found = await sync_to_async(diffs.session_diff)(session)
        comments = [Comment("app.py", 2, "two?"), Comment("app.py", 1, "drop os", "old")]
        text = diff_comments.prompt_text(comments, found)
        sent = await diff_comments.asend(session, text, rt.host)
        assert sent == {"session_id": sid, "delivered": "prompt", "resumed": False}
        await delivered(sid, 1)
        said = await events(sid, "user_message_chunk")
        assert [e.payload["text"] for e in said] == [text]  # one prompt, both comments
        # What the agent itself received, in its own words (the fake's `prompts` command).
        await rt.host.chat(sid).prompt("prompts")
        asked = (await events(sid, "user_message_chunk"))[-1].seq
        answer = await events(sid, "agent_message_chunk", asked)
        received = json.loads("".join(e.payload["text"] for e in answer))
        assert received[0] == text and "app.py:2\n   > +x = 2\n   two?" in received[0]
        assert (
            "2. app.py:1 (line number in the original, before your change)\n   > -import os"
            not in text
        )  # line 1 is unchanged context: quoted with a space, not a minus
        assert (
            "2. app.py:1 (line number in the original, before your change)\n   >  import os" in text
        )

        await services.asession_stop(
            host=rt.host, session_id=sid
        )  # as a finished subagent's session is
        assert rt.host.chat(sid) is None
        again = await diff_comments.asend(session, "Review of your changes: app.py:3 y?", rt.host)
        assert again["resumed"] is True and rt.host.chat(sid) is not None
        await delivered(sid, 3)
        assert (await events(sid, "user_message_chunk"))[-1].payload["text"].endswith("app.py:3 y?")
        await services.asession_stop(host=rt.host, session_id=sid)
