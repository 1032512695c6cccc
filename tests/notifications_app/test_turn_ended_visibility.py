"""`turn_ended` follows what the dashboard shows (contract §15): a chat socket says, per session,
whether its page shows it (`{"type": "visible"}`); a turn that ends while no client shows the
session is notified, once. In process: the real ASGI router (Channels' communicator), the
scripted fake agent, a started runtime.

Whether a turn end is news is decided at the turn's end, before its `turn_end` event reaches any
socket, and a notification decided then runs as a task of the notifier: so once a socket has
read `turn_end`, `notifier.wait_idle()` is the point after which the count is final."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from core import config
from harness.runtime import running, settings_file
from harness.termclient import hosting_settings
from notifications_app.models import Notification
from sessions_app.services import asession_create, asession_stop
from svcproject.parts import Parts

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fake_agent() -> Iterator[None]:
    with settings_file(hosting_settings()):
        yield


@pytest.fixture
async def rt(fake_agent: None) -> AsyncIterator[Parts]:
    async with running() as runtime:
        yield runtime


@pytest.fixture
async def sid(rt: Parts, tmp_path: Path) -> AsyncIterator[str]:
    session = await asession_create(
        host=rt.host, agent="fake", workspace=str(tmp_path), kind="chat"
    )
    yield str(session.id)
    await asession_stop(host=rt.host, session_id=str(session.id))


@sync_to_async
def turn_ended(session_id: str) -> list[dict[str, Any]]:
    rows = Notification.objects.filter(event="turn_ended", session_id=session_id)
    return [n.to_dict() for n in rows.order_by("created_at")]


class Page:
    """A /ws/chat client as the dashboard is one: it opens the session, then says whether it
    shows it (or, `visible` None, never says — an older page, the CLI)."""

    def __init__(self, parts: Parts, session_id: str) -> None:
        from harness.runtime import scoped
        from svcproject.asgi import routed

        token = config.current_auth().owner_token
        self.ws = WebsocketCommunicator(scoped(routed, parts), f"/ws/chat?token={token}")
        self.session_id = session_id

    async def open(self, visible: bool | None) -> None:
        assert (await self.ws.connect())[0]
        await self.ws.send_json_to({"type": "open", "session_id": self.session_id})
        await self.until("session")
        await self.until("queue")  # what waits for a turn: sent right after `session`
        if visible is not None:
            await self.visible(visible)

    async def visible(self, visible: bool) -> None:
        await self.ws.send_json_to(
            {"type": "visible", "session_id": self.session_id, "visible": visible}
        )

    async def until(self, kind: str) -> dict[str, Any]:
        while True:
            event = await self.ws.receive_json_from(timeout=15)
            assert event["kind"] != "error", event
            if event["kind"] == kind:
                return event

    async def turn(self, text: str = "echo done") -> None:
        """A prompt from this socket, read until its `turn_end`. The socket handles its
        messages in order, so a `visible` sent before is in effect when the prompt starts."""
        await self.ws.send_json_to({"type": "prompt", "session_id": self.session_id, "text": text})
        assert (await self.until("turn_end"))["stop_reason"] == "end_turn"


async def settled(rt: Parts, session_id: str) -> list[dict[str, Any]]:
    await rt.notifier.wait_idle()
    return await turn_ended(session_id)


async def test_a_socket_subscribed_but_not_showing_the_session_gets_one_turn_ended(
    rt: Parts, sid: str
) -> None:
    page = Page(rt, sid)
    await page.open(visible=False)  # the chat's tab is open in the page, another one is shown
    await page.turn()
    made = await settled(rt, sid)
    assert len(made) == 1
    assert made[0]["title"] == "fake finished its turn" and made[0]["session_id"] == sid
    await page.ws.disconnect()


async def test_a_socket_showing_the_session_gets_none(rt: Parts, sid: str) -> None:
    page = Page(rt, sid)
    await page.open(visible=True)
    await page.turn()
    assert await settled(rt, sid) == []
    await page.ws.disconnect()


async def test_shown_then_hidden_gets_one_for_the_turn_that_ends_hidden(
    rt: Parts, sid: str
) -> None:
    page = Page(rt, sid)
    await page.open(visible=True)
    await page.turn("echo seen")
    assert await settled(rt, sid) == []
    await page.visible(False)  # another tab, another view, or the browser tab hidden
    await page.turn("echo unseen")
    assert len(await settled(rt, sid)) == 1
    await page.visible(True)  # and back: seen again, nothing more
    await page.turn("echo seen again")
    assert len(await settled(rt, sid)) == 1
    await page.ws.disconnect()


async def test_a_closed_socket_no_longer_shows_the_session(rt: Parts, sid: str) -> None:
    page = Page(rt, sid)
    await page.open(visible=True)
    chat = rt.host.chat(sid)
    assert chat is not None and chat.shown()
    await page.ws.disconnect()  # returns once the consumer's disconnect has run
    assert not chat.shown()
    assert await chat.prompt("echo nobody there") == "end_turn"
    assert len(await settled(rt, sid)) == 1


async def test_a_socket_that_never_says_counts_as_showing(rt: Parts, sid: str) -> None:
    """An older page, the CLI's chat, an API client: no notification they did not ask for."""
    page = Page(rt, sid)
    await page.open(visible=None)
    await page.turn()
    assert await settled(rt, sid) == []
    await page.ws.disconnect()


async def test_one_showing_page_among_hidden_ones_is_enough(rt: Parts, sid: str) -> None:
    hidden, shown = Page(rt, sid), Page(rt, sid)
    await hidden.open(visible=False)
    await shown.open(visible=True)
    await hidden.turn()
    await shown.until("turn_end")
    assert await settled(rt, sid) == []
    await shown.ws.disconnect()  # the page that showed it is gone: the next end is news
    await hidden.turn()
    assert len(await settled(rt, sid)) == 1
    await hidden.ws.disconnect()


async def test_a_visible_for_a_session_the_socket_does_not_hold_is_ignored(
    rt: Parts, sid: str
) -> None:
    """A page reports its tabs of exited chats too: no error event (it would show in the chat),
    and no effect on another socket's session; a malformed `visible` is an error event."""
    page = Page(rt, sid)
    await page.open(visible=True)
    await page.ws.send_json_to({"type": "visible", "session_id": "elsewhere", "visible": False})
    await page.ws.send_json_to({"type": "visible", "session_id": sid, "visible": "no"})
    wrong = await page.ws.receive_json_from(timeout=15)
    assert wrong["kind"] == "error" and wrong["message"] == "visible must be true or false"
    await page.turn()  # had the first one counted or errored, the turn would notify or fail
    assert await settled(rt, sid) == []
    await page.ws.disconnect()


async def test_a_chat_channel_watching_the_session_is_not_a_dashboard_showing_it(
    rt: Parts, sid: str
) -> None:
    """A Telegram/Slack room follows every turn of its session, but nobody looks at a
    dashboard there: its subscription never counts as showing."""
    from channels_app.conversation import Room

    class Config:
        name = "telegram"

    class Channel:
        config = Config()
        host = rt.host
        fleet_sockets = fleet_forward = None  # a daemon alone

        def spawn(self, work: Any) -> None:
            work.close()  # what the room would post: not this test's business

    room = Room(Channel(), "4242")  # type: ignore[arg-type]
    try:
        assert await room.attach(sid)
        chat = rt.host.chat(sid)
        assert chat is not None and not chat.shown()
        assert await chat.prompt("echo to the channel only") == "end_turn"
        assert len(await settled(rt, sid)) == 1
        page = Page(rt, sid)  # a dashboard tab showing it as well: then it is seen
        await page.open(visible=True)
        await page.turn()
        assert len(await settled(rt, sid)) == 1
        await page.ws.disconnect()
    finally:
        room.detach()
        room._worker.cancel()
        await asyncio.gather(room._worker, return_exceptions=True)
