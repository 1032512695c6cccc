"""Review comments delivered into a terminal (subagents_app/diff_comments.py): an agent's TUI
gets one paste and one Enter, never a control character; a plain shell gets nothing typed and
a 409. Split from test_diff_comments.py (parsing, the API, chats), whose fixtures it uses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from core.errors import Conflict
from harness.runtime import running
from sessions_app import services
from sessions_app.host import pty
from sessions_app.models import Session
from subagents_app import diff_comments, diffs
from subagents_app.diff_comments import Comment
from tests.subagents_app.test_diff_comments import post

pytestmark = pytest.mark.usefixtures("review_agents")


class Flow:
    async def wait_writable(self) -> None:
        return None


class Screen:
    """One viewer of a terminal: everything it has shown, and a wait for what it should show."""

    def __init__(self) -> None:
        self.seen, self.grew = bytearray(), asyncio.Event()

    async def got(self, data: bytes) -> None:
        self.seen.extend(data)
        self.grew.set()

    async def state(self, event: dict[str, Any]) -> None:
        return None

    async def shows(self, needle: bytes, times: int = 1, limit: float = 15) -> None:
        async with asyncio.timeout(limit):
            while self.seen.count(needle) < times:
                self.grew.clear()
                await self.grew.wait()


async def watch(rt: Any, session_id: str) -> tuple[Screen, Any]:
    screen = Screen()
    view = rt.host.attach_terminal(session_id, screen.got, screen.state, Flow())
    assert view is not None
    return screen, view


def test_a_paste_carries_no_control_character_and_stays_whole() -> None:
    text = "a\x1b[201~b\x03c\x7fd\x9be\x00\r\nf\tg\rh"
    assert pty.paste_bytes(text, bracketed=True) == b"\x1b[200~a[201~bcde\nf\tg\nh\x1b[201~"
    # Without bracketed paste every newline would submit: one line, and no tab (a key).
    assert pty.paste_bytes("one\n\n  two\tthree\r\n\x1b[Bfour", bracketed=False) == (
        b"one   two three [Bfour"
    )


@pytest.mark.django_db(transaction=True)
async def test_an_agent_terminal_gets_one_line_and_one_enter_without_bracketed_paste(
    repo: Path,
) -> None:
    async with running() as rt:
        session = await services.asession_create(host=rt.host, agent="cat", workspace=str(repo))
        sid = str(session.id)
        screen, view = await watch(rt, sid)
        text = "Review of your changes: 1 comment.\n\n1. app.py:2\n   two?"
        assert (await diff_comments.asend(session, text, rt.host))["delivered"] == "typed"
        # cat prints each line back once Enter reached it: the tty's echo, then cat's copy.
        await screen.shows(b"two?", times=2)
        one_line = b"Review of your changes: 1 comment. 1. app.py:2    two?"
        assert screen.seen.count(one_line) == 2 and screen.seen.count(b"app.py:2") == 2
        await view.detach()
        await services.asession_stop(host=rt.host, session_id=sid)
        assert not rt.host.type_into_terminal(sid, "late")


def hostile_repo(repo: Path, line: str) -> None:
    """A change whose added line is `line`: what a diff comment on it quotes."""
    (repo / "app.py").write_text(f"import os\n{line}\nprint(x)\n")


@pytest.mark.django_db(transaction=True)
async def test_a_plain_shell_gets_nothing_typed_and_a_409(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = tmp_path / "x"
    hostile_repo(repo, f"$(touch {made})")
    async with running() as rt:
        session = await services.asession_create(host=rt.host, agent="shell", workspace=str(repo))
        sid = str(session.id)
        screen, view = await watch(rt, sid)
        typed: list[str] = []
        monkeypatch.setattr(rt.host, "type_into_terminal", lambda s, t: typed.append(t) or True)
        found = await sync_to_async(diffs.session_diff)(session)
        text = diff_comments.prompt_text([Comment("app.py", 2, "what is this?")], found)
        assert f"> +$(touch {made})" in text
        with pytest.raises(Conflict) as refused:
            await diff_comments.asend(session, text, rt.host)
        assert refused.value.status == 409 and "diff comments go to agents" in str(refused.value)
        assert "Start an agent session" in str(refused.value) and typed == []
        # The shell runs what it reads in order: once a later command has run, anything typed
        # before it has run too — and the file is still not there.
        view.write(b"echo svc-$((6*7))-done\r")
        await screen.shows(b"svc-42-done")
        assert not made.exists()
        await view.detach()
        await services.asession_stop(host=rt.host, session_id=sid)


@pytest.mark.django_db
def test_api_refuses_comments_for_a_plain_shell(api: Client, repo: Path) -> None:
    session = Session.objects.create(
        agent="shell", workspace=str(repo), kind="terminal", status="running"
    )
    answer = post(
        api,
        f"/api/sessions/{session.id}/diff/comments",
        {"comments": [{"path": "app.py", "line": 2, "text": "x"}]},
    )
    assert answer.status_code == 409
    message = answer.json()["error"]["message"]
    assert "plain shell" in message and "diff comments go to agents" in message


@pytest.mark.django_db(transaction=True)
async def test_an_agent_tui_gets_one_bracketed_paste_without_controls_then_one_enter(
    repo: Path,
) -> None:
    hostile_repo(repo, "x = '\x1b[201~\x03\x1b[2~rm -rf ~\x9b1m\x7f'  # $(touch y)")
    async with running() as rt:
        session = await services.asession_create(host=rt.host, agent="tui", workspace=str(repo))
        sid = str(session.id)
        screen, view = await watch(rt, sid)
        await screen.shows(b"READY")  # bracketed paste is on from here
        found = await sync_to_async(diffs.session_diff)(session)
        text = diff_comments.prompt_text([Comment("app.py", 2, "why?\nplease explain")], found)
        assert "\x1b[201~\x03" in text  # the file's own bytes, quoted
        assert (await diff_comments.asend(session, text, rt.host))["delivered"] == "typed"
        await screen.shows(b"\r\n", times=2)  # READY's line, then GOT's
        got = bytes.fromhex(screen.seen.split(b"GOT:")[1].split(b"\r\n")[0].decode())
        start, end = b"\x1b[200~", b"\x1b[201~"
        assert got.startswith(start) and got.endswith(end + b"\r")
        assert got.count(start) == got.count(end) == got.count(b"\r") == 1
        inside = got[len(start) : -len(end) - 1].decode()
        bad = [c for c in inside if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
        assert bad == []
        assert "app.py:2\n   > +x = '[201~[2~rm -rf ~1m'  # $(touch y)\n   why?" in inside
        await view.detach()
        await services.asession_stop(host=rt.host, session_id=sid)
