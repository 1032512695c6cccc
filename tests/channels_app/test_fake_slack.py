"""The real slack-bolt AsyncApp + AsyncSocketModeHandler (slack-sdk's aiohttp Socket Mode client)
against harness.fakes.slack_api.FakeSlack, unpatched: if these pass, the fake speaks Slack well
enough for svc's Slack channel tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from harness.fakes.slack_api import FakeSlack

BUTTON = {
    "type": "actions",
    "block_id": "decide",
    "elements": [
        {
            "type": "button",
            "action_id": "approve",
            "text": {"type": "plain_text", "text": "Approve"},
            "value": "req-42",
        }
    ],
}


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack(retry_delays=(0.0, 1.0, 5.0)) as server:
        yield server


@pytest.fixture
async def handlers() -> AsyncIterator[list[AsyncSocketModeHandler]]:
    opened: list[AsyncSocketModeHandler] = []
    yield opened
    for handler in opened:
        await handler.close_async()


def make_app(fake: FakeSlack, token: str | None = None) -> AsyncApp:
    # One client for both: the handler's Socket Mode client calls apps.connections.open through
    # app.client (with the app-level token), so its base_url must be the fake's too.
    return AsyncApp(client=AsyncWebClient(token=token or fake.bot_token, base_url=fake.base_url))


async def connect(
    fake: FakeSlack, app: AsyncApp, handlers: list[AsyncSocketModeHandler]
) -> AsyncSocketModeHandler:
    handler = AsyncSocketModeHandler(app, fake.app_token, ping_interval=0.3)
    handlers.append(handler)
    await handler.connect_async()
    await fake.wait_for_async(lambda: fake.open_connections == 1)
    return handler


async def test_message_reply_in_thread_then_update(fake, handlers):
    app = make_app(fake)
    seen = []

    @app.event("message")
    async def on_message(event, say, client):
        if event.get("subtype") or event.get("bot_id"):
            return  # edits (message_changed) and the bot's own posts
        seen.append(event)
        posted = await say(text="thinking…", thread_ts=event.get("thread_ts") or event["ts"])
        await client.chat_update(channel=posted["channel"], ts=posted["ts"], text="echo: hi")

    await connect(fake, app, handlers)
    (call,) = fake.calls("apps.connections.open")
    assert call.ok and call.token == fake.app_token

    ts = fake.post_message("U1", "hi")
    await fake.wait_for_async(lambda: fake.updates("C1"))
    await fake.wait_for_async(fake.settled)

    assert [e["text"] for e in seen] == ["hi"]
    assert seen[0]["user"] == "U1" and seen[0]["channel"] == "C1"
    (reply,) = fake.posted("C1")
    assert reply["text"] == "echo: hi" and reply["thread_ts"] == ts
    (update,) = fake.updates("C1")
    assert update["ts"] == reply["ts"] and update["text"] == "echo: hi"
    assert [c.token for c in fake.calls("auth.test")] == [fake.bot_token]  # bolt caches it
    # the user's message, the bot's own post and its edit (Slack echoes both; bolt acks them)
    assert len(fake.items("events_api")) == 3
    fake.assert_acked_once()


async def test_app_mention_and_message_both_arrive(fake, handlers):
    app = make_app(fake)
    got = {"message": 0, "app_mention": 0}

    @app.event("message")
    async def on_message(event):
        if not event.get("subtype") and not event.get("bot_id"):
            got["message"] += 1

    @app.event("app_mention")
    async def on_mention(event, say):
        got["app_mention"] += 1
        await say(text=f"<@{event['user']}> yes?", thread_ts=event["ts"])

    await connect(fake, app, handlers)
    fake.post_message("U2", f"<@{fake.bot_user_id}> are you there?", channel="C7")
    await fake.wait_for_async(lambda: fake.posted("C7"))
    await fake.wait_for_async(fake.settled)
    assert got == {"message": 1, "app_mention": 1}
    assert fake.posted("C7")[0]["text"] == "<@U2> yes?"
    fake.assert_acked_once()


async def test_button_click_is_acked_and_answered(fake, handlers):
    app = make_app(fake)
    clicked = []

    @app.action("approve")
    async def on_approve(ack, body, action, respond):
        await ack()
        clicked.append((body, action))
        await respond(text=f"Approved {action['value']}", replace_original=True)

    await connect(fake, app, handlers)
    posted = await app.client.chat_postMessage(channel="C1", text="Approve?", blocks=[BUTTON])
    key = fake.click("U3", "C1", posted["ts"], "approve")

    await fake.wait_for_async(lambda: fake.updates("C1"))
    await fake.wait_for_async(fake.settled)
    ((body, action),) = clicked
    assert action["value"] == "req-42" and action["block_id"] == "decide"
    assert body["user"]["id"] == "U3" and body["channel"]["id"] == "C1"
    assert body["message"]["ts"] == posted["ts"] == body["container"]["message_ts"]
    (envelope,) = fake.envelopes_for(key)
    assert envelope.type == "interactive" and len(envelope.acks) == 1
    assert fake.posted("C1")[0]["text"] == "Approved req-42"
    fake.assert_acked_once()


async def test_slash_command_ack_carries_the_answer(fake, handlers):
    app = make_app(fake)

    @app.command("/svc")
    async def on_command(ack, command):
        await ack(f"got {command['text']}")

    await connect(fake, app, handlers)
    key = fake.slash("U1", "/svc", "status")
    await fake.wait_for_async(fake.settled)
    ((ack,),) = [e.acks for e in fake.envelopes_for(key)]
    assert ack.payload == {"text": "got status"}


async def test_wrong_tokens_fail_clearly():
    with FakeSlack(ack_timeout=0.3, retry_delays=(0.0, 0.1, 0.1)) as fake:
        bad = AsyncWebClient(token="xoxb-wrong", base_url=fake.base_url)
        with pytest.raises(SlackApiError) as err:
            await bad.auth_test()
        assert err.value.response["error"] == "invalid_auth"
        with pytest.raises(SlackApiError) as err:
            await AsyncWebClient(base_url=fake.base_url).auth_test()
        assert err.value.response["error"] == "not_authed"
        with pytest.raises(SlackApiError) as err:
            await AsyncWebClient(token=fake.app_token, base_url=fake.base_url).auth_test()
        assert err.value.response["error"] == "not_allowed_token_type"
        with pytest.raises(SlackApiError) as err:
            await bad.apps_connections_open(app_token="xapp-wrong")
        assert err.value.response["error"] == "invalid_auth"

        # A bolt app with a wrong bot token connects (the app-level token is fine), but every
        # event fails authorization: bolt acks it with its error text and runs no listener.
        app = make_app(fake, token="xoxb-wrong")
        ran = []

        @app.event("message")
        async def on_message(event):
            ran.append(event)

        handler = AsyncSocketModeHandler(app, fake.app_token, ping_interval=0.3)
        try:
            await handler.connect_async()
            fake.post_message("U1", "hello?")
            await fake.wait_for_async(fake.settled)
        finally:
            await handler.close_async()
        (ack,) = fake.acks
        assert "reinstall this app" in ack.payload["text"] and not ran
        wrong = [c.error for c in fake.calls("auth.test") if c.token == "xoxb-wrong"]
        assert wrong == ["invalid_auth", "invalid_auth"]  # ours above, then bolt's
        assert not fake.calls("chat.postMessage")
        fake.assert_acked_once()


async def test_unacked_event_is_retried_with_a_new_envelope():
    """slack-sdk's bare Socket Mode client, to leave the first delivery unacked."""
    with FakeSlack(ack_timeout=0.3, retry_delays=(0.0, 0.1, 0.1)) as fake:
        web = AsyncWebClient(base_url=fake.base_url)
        client = SocketModeClient(app_token=fake.app_token, web_client=web, ping_interval=0.3)
        received = []

        async def listener(client: SocketModeClient, req: SocketModeRequest) -> None:
            received.append((req.envelope_id, req.retry_attempt, req.retry_reason))
            if req.retry_attempt:
                await client.send_socket_mode_response(SocketModeResponse(req.envelope_id))

        client.socket_mode_request_listeners.append(listener)
        try:
            await client.connect()
            ts = fake.post_message("U1", "answer me")
            await fake.wait_for_async(fake.settled)
        finally:
            await client.close()
        first, retry = fake.envelopes_for(fake.event_key(ts))
        assert [(first.attempt, len(first.acks)), (retry.attempt, len(retry.acks))] == [
            (0, 0),
            (1, 1),
        ]
        assert retry.retry_reason == "timeout" and first.envelope_id != retry.envelope_id
        assert first.body["payload"]["event_id"] == retry.body["payload"]["event_id"]
        assert [r[1:] for r in received] == [(0, ""), (1, "timeout")]
        fake.assert_acked_once()

        # Never acked: 3 retries, then Slack gives up and the event is lost.
        client = SocketModeClient(app_token=fake.app_token, web_client=web, ping_interval=0.3)
        try:
            await client.connect()
            ts = fake.post_message("U1", "nobody listens")
            await fake.wait_for_async(fake.settled)
        finally:
            await client.close()
        item = fake.item(fake.event_key(ts))
        assert item.state == "dropped" and [e.attempt for e in item.envelopes] == [0, 1, 2, 3]


@pytest.mark.parametrize("abrupt", [False, True], ids=["close-frame", "reset"])
async def test_reconnects_after_go_away_and_delivers_once(fake, handlers, abrupt):
    app = make_app(fake)
    seen = []

    @app.event("message")
    async def on_message(event, say, request):
        if event.get("subtype") or event.get("bot_id"):
            return
        seen.append((event["text"], request.headers.get("x-slack-retry-num")))
        await say(text=f"re: {event['text']}")

    await connect(fake, app, handlers)
    fake.go_away(abrupt=abrupt)
    await fake.wait_for_async(lambda: fake.open_connections == 0)
    ts = fake.post_message("U1", "while away")
    await asyncio.sleep(0.4)  # the client retries against a 503 meanwhile
    assert not seen
    fake.come_back()

    await fake.wait_for_async(lambda: fake.posted("C1"), timeout=8)
    await fake.wait_for_async(fake.settled, timeout=8)
    await asyncio.sleep(0.3)  # would a duplicate show up?
    assert [text for text, _ in seen] == ["while away"]
    assert seen[0][1] not in (None, "0")  # Slack's retry of a delivery that found no socket
    assert [m["text"] for m in fake.posted("C1")] == ["re: while away"]
    envelopes = fake.envelopes_for(fake.event_key(ts))
    assert len(envelopes) == 1 and envelopes[0].retry_reason == "connection_failed"
    assert len(fake.connections) == 2 and fake.open_connections == 1
    assert len(fake.calls("apps.connections.open")) >= 2  # a fresh ticket for the new socket
    fake.assert_acked_once()


async def test_refresh_requested_disconnect(fake, handlers):
    app = make_app(fake)
    seen = []

    @app.event("message")
    async def on_message(event):
        if not event.get("subtype") and not event.get("bot_id"):
            seen.append(event["text"])

    await connect(fake, app, handlers)
    fake.disconnect("refresh_requested")
    await fake.wait_for_async(lambda: len(fake.connections) == 2 and fake.open_connections == 1)
    fake.post_message("U1", "after refresh")
    await fake.wait_for_async(fake.settled)
    await asyncio.sleep(0.2)
    assert seen == ["after refresh"]
    first, second = fake.connections
    assert first.closed_at is not None and second.closed_at is None
    assert fake.envelopes[-1].connection == second.id
    fake.assert_acked_once()


async def test_files_arrive_with_the_message_and_download_with_the_bot_token(fake, handlers):
    app = make_app(fake)
    files = []

    @app.event("message")
    async def on_message(event, client):
        if event.get("subtype") == "file_share":
            (shared,) = event["files"]
            info = await client.files_info(file=shared["id"])
            files.append(info["file"])

    await connect(fake, app, handlers)
    fake.post_message("U1", "see attached", files=[("notes.txt", b"hello file")])
    await fake.wait_for_async(lambda: files)
    url = files[0]["url_private"]
    async with aiohttp.ClientSession() as session:
        auth = {"Authorization": f"Bearer {fake.bot_token}"}
        async with session.get(url, headers=auth) as resp:
            assert await resp.read() == b"hello file"
        async with session.get(url) as resp:  # no token: Slack's sign-in page, a 200
            assert resp.status == 200 and resp.content_type == "text/html"
    await fake.wait_for_async(fake.settled)
    fake.assert_acked_once()


async def test_other_web_api_methods(fake):
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url)
    ts = fake.post_message("U1", "root")
    await client.reactions_add(channel="C1", timestamp=ts, name="eyes")
    with pytest.raises(SlackApiError) as err:
        await client.reactions_add(channel="C1", timestamp=ts, name="eyes")
    assert err.value.response["error"] == "already_reacted"
    reply = await client.chat_postMessage(channel="C1", text="in thread", thread_ts=ts)
    thread = await client.conversations_replies(channel="C1", ts=ts)
    assert [m["ts"] for m in thread["messages"]] == [ts, reply["ts"]]
    assert thread["messages"][0]["reactions"][0]["name"] == "eyes"
    eph = await client.chat_postEphemeral(channel="C1", user="U1", text="psst")
    assert fake.ephemerals("C1")[0]["ts"] == eph["message_ts"]
    assert (await client.users_info(user="U1"))["user"]["id"] == "U1"
    assert (await client.conversations_info(channel="C1"))["channel"]["name"] == "general"
    dm = await client.chat_postMessage(channel="U1", text="hello in private")
    assert dm["channel"].startswith("D") and fake.posted(dm["channel"])
    with pytest.raises(SlackApiError) as err:
        await client.chat_update(channel="C1", ts=ts, text="not mine")
    assert err.value.response["error"] == "cant_update_message"
    fake.fail_next("chat.update", "ratelimited")
    with pytest.raises(SlackApiError) as err:
        await client.chat_update(channel="C1", ts=reply["ts"], text="later")
    assert err.value.response.status_code == 429
    assert err.value.response.headers["Retry-After"] == "1"
    await client.chat_update(channel="C1", ts=reply["ts"], text="now")
    assert [u["text"] for u in fake.updates("C1")] == ["now"]
    with pytest.raises(RuntimeError, match="wait_for_async"):
        fake.wait_for(lambda: True)
