"""Slack (contract §14) with slack-bolt in Socket Mode: the app opens a WebSocket to Slack, so no
public URL is needed. Each thread is a conversation: a message in a channel starts one (svc
answers in its thread), a reply in the thread continues it.

The Web API client points at `api_base` (default https://slack.com/api/), and the Socket Mode
client opens its connection through that same client (`apps.connections.open`), so a test
double or an Enterprise proxy works alike. Reconnecting is the SDK's; when the socket stays
down, the service fails and the supervisor brings it back with backoff (status `connecting`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from typing import Any

import httpx
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels_app.config import ChannelConfig, ChannelError
from channels_app.conversation import Channel
from channels_app.platform import Buttons, Incoming

_ANY_SVC_ACTION = re.compile(r"^svc_\d+$")  # the permission buttons svc posts
DOWN_FOR_S = 3.0  # the socket down this long (the SDK's own reconnect failing): restart
FILE_LIMIT = 20 * 1024 * 1024


def _chat_key(channel: str, thread_ts: str) -> str:
    return f"{channel}:{thread_ts}"


def _split(chat: str) -> tuple[str, str]:
    channel, _, thread_ts = chat.partition(":")
    return channel, thread_ts


class SlackPlatform:
    name = "slack"
    max_len = 4000  # Slack truncates longer messages in the client; it advises under 4,000
    edit_every_s = 1.5

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def send(self, chat: str, text: str, buttons: Buttons | None = None) -> str:
        channel, thread_ts = _split(chat)
        sent = await self.client.chat_postMessage(
            channel=channel, text=text, thread_ts=thread_ts or None, blocks=_blocks(text, buttons)
        )
        return str(sent["ts"])

    async def edit(
        self, chat: str, message_id: str, text: str, buttons: Buttons | None = None
    ) -> None:
        channel, _ = _split(chat)
        await self.client.chat_update(
            channel=channel, ts=message_id, text=text, blocks=_blocks(text, buttons) or []
        )


def _blocks(text: str, buttons: Buttons | None) -> list[dict[str, Any]] | None:
    if not buttons:
        return None
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}},
        {"type": "actions", "elements": [
            {"type": "button", "action_id": f"svc_{i}", "value": data,
             "text": {"type": "plain_text", "text": label[:75]}}
            for i, (label, data) in enumerate(buttons)
        ]},
    ]  # fmt: skip


class SlackChannel:
    def __init__(self, config: ChannelConfig) -> None:
        self.config = config
        self.client = AsyncWebClient(token=config.token, base_url=config.api_base)
        self.channel = Channel(config, SlackPlatform(self.client))
        self.username = ""
        self.bot_user = ""

    async def run(self, online: Callable[[str], None]) -> None:
        try:
            who = await self.client.auth_test()
        except SlackApiError as exc:
            raise ChannelError(
                f"Slack refused the bot token ({exc.response.get('error')}): check "
                f"channels.{self.config.name}.bot_token_env (an xoxb- token)"
            ) from exc
        self.username, self.bot_user = str(who.get("user", "")), str(who.get("user_id", ""))
        app = AsyncApp(client=self.client, process_before_response=True)
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_message)
        app.action({"action_id": _ANY_SVC_ACTION})(self._on_action)
        try:
            # Asked once here: the SDK's own connect retries a refused app token forever.
            await self.client.apps_connections_open(app_token=self.config.app_token)
        except SlackApiError as exc:
            raise ChannelError(
                f"Slack refused the app token ({exc.response.get('error')}): check "
                f"channels.{self.config.name}.app_token_env (an xapp- token with "
                "connections:write)"
            ) from exc
        handler = AsyncSocketModeHandler(app, self.config.app_token)
        try:
            await asyncio.wait_for(handler.connect_async(), 30)
            online(f"@{self.username} (Socket Mode)")
            await self._watch(handler)
        finally:
            self.channel.stop()
            with contextlib.suppress(Exception):
                await handler.close_async()

    async def _watch(self, handler: AsyncSocketModeHandler) -> None:
        down_since: float | None = None
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(0.5)
            if await handler.client.is_connected():
                down_since = None
            elif down_since is None:
                down_since = loop.time()
            elif loop.time() - down_since > DOWN_FOR_S:
                raise ChannelError("the Socket Mode connection to Slack was lost")

    async def _on_message(self, event: dict[str, Any], ack: Callable | None = None) -> None:
        if event.get("bot_id") or event.get("subtype") not in (None, "file_share"):
            return  # its own messages and edits, joins, …: not prompts
        if event.get("user") == self.bot_user:
            return
        thread = str(event.get("thread_ts") or event.get("ts"))
        files, too_large = await self._files(event.get("files") or [])
        text = str(event.get("text") or "")
        if self.bot_user:
            text = text.replace(f"<@{self.bot_user}>", "").strip()
        await self.channel.on_message(
            Incoming(
                chat=_chat_key(str(event.get("channel")), thread),
                user=str(event.get("user", "")),
                text=text,
                event_id=f"m{event.get('channel')}:{event.get('ts')}",
                files=tuple(files),
                too_large=tuple(too_large),
            )
        )

    async def _on_action(self, ack: Callable, body: dict[str, Any]) -> None:
        await ack()
        action = (body.get("actions") or [{}])[0]
        message = body.get("message") or {}
        channel = str((body.get("channel") or {}).get("id") or body.get("container", {}).get(
            "channel_id", ""))  # fmt: skip
        thread = str(message.get("thread_ts") or message.get("ts") or "")
        await self.channel.on_button(
            _chat_key(channel, thread), str((body.get("user") or {}).get("id", "")),
            str(action.get("value", "")), f"a{action.get('action_ts') or body.get('trigger_id')}",
        )  # fmt: skip

    async def _files(
        self, files: list[dict[str, Any]]
    ) -> tuple[list[tuple[str, bytes]], list[str]]:
        got, too_large = [], []
        headers = {"Authorization": f"Bearer {self.config.token}"}
        async with httpx.AsyncClient(timeout=30) as http:
            for item in files:
                name = str(item.get("name") or item.get("id") or "file")
                if int(item.get("size") or 0) > FILE_LIMIT or not item.get("url_private"):
                    too_large.append(name)
                    continue
                answer = await http.get(str(item["url_private"]), headers=headers)
                answer.raise_for_status()
                got.append((name, answer.content))
        return got, too_large

    @property
    def name(self) -> str:
        return self.config.name

    async def send_notification(self, title: str, body: str, url: str) -> None:
        """A notification (contract §15) to the channel's `notify_chat`."""
        if self.config.notify_chat:
            text = f"*{title}*\n{body}" + (f"\n{url}" if url else "")
            await self.channel.platform.send(self.config.notify_chat, text[:4000])
