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
import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import aiohttp
from django.utils import timezone
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels_app import reach, slack_files
from channels_app.config import ChannelConfig, ChannelError
from channels_app.platform import Buttons, InboxFile, Incoming

if TYPE_CHECKING:
    from channels_app.conversation import Conversations

_ANY_SVC_ACTION = re.compile(r"^svc_\d+$")  # the permission buttons svc posts
DOWN_FOR_S = 3.0  # the socket down this long (the SDK's own reconnect failing): restart


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

    def retry_in(self, exc: Exception) -> float | None:
        """What Slack said, for the outbox: a rate limit's Retry-After; Slack unreachable, a
        5xx or its own "try again" errors, and a refused token (the channel is down until it
        is fixed, not the message) are passing; anything else it answered (channel_not_found,
        not_in_channel, message_not_found, …) is final."""
        if isinstance(exc, SlackApiError):
            response = exc.response
            error = str(response.get("error") or "") if response is not None else ""
            status = getattr(response, "status_code", 0) or 0
            if status == 429 or error == "ratelimited":
                headers = getattr(response, "headers", None) or {}
                retry = headers.get("Retry-After") or headers.get("retry-after") or 1
                try:
                    return float(retry)
                except (TypeError, ValueError):
                    return 1.0
            if status >= 500 or error in _PASSING:
                return 0.0
            return None
        if isinstance(exc, (aiohttp.ClientError, OSError, TimeoutError)):
            return 0.0
        return None


# Slack's errors that say "not now" rather than "never" (docs.slack.dev, chat.postMessage).
_PASSING = frozenset(
    {
        "fatal_error",
        "internal_error",
        "service_unavailable",
        "request_timeout",
        "team_added_to_org",
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "token_expired",
        "account_inactive",
    }
)


def _blocks(text: str, buttons: Buttons | None) -> list[dict[str, Any]] | None:
    if not buttons:
        return None
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}},
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "action_id": f"svc_{i}",
                    "value": data,
                    "text": {"type": "plain_text", "text": label[:75]},
                }
                for i, (label, data) in enumerate(buttons)
            ],
        },
    ]


class SlackChannel:
    def __init__(self, config: ChannelConfig, conversations: Conversations) -> None:
        self.config = config
        self.client = AsyncWebClient(token=config.token, base_url=config.api_base)
        self.platform = SlackPlatform(self.client)
        # The conversation outlives this connection: a restart of the service (Slack away)
        # keeps following the chats' turns into the outbox (contract §17).
        self.channel = conversations.conversation(config, self.platform)
        self.username = ""
        self.bot_user = ""
        self.names: dict[str, str] = {}  # user id -> how Slack names them (users.info, once)

    async def run(self, online: Callable[[str], None]) -> None:
        self.started = timezone.now()  # what the inbox holds from before is replayed
        try:
            who = await self.client.auth_test()
        except SlackApiError as exc:
            raise ChannelError(
                f"Slack refused the bot token ({exc.response.get('error')}): check "
                f"channels.{self.config.name}.bot_token_env (an xoxb- token)"
            ) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            setting = f"channels.{self.config.name}.api_base"
            secrets = (self.config.token, self.config.app_token)
            raise ChannelError(
                reach.unreachable("slack", self.config.api_base, exc, setting, *secrets)
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
        delivering = None
        try:
            await asyncio.wait_for(handler.connect_async(), 30)
            online(f"@{self.username} (Socket Mode)")
            delivering = asyncio.ensure_future(self.channel.outbox.run(self.platform))
            await self.channel.replay_unfinished(self.started)
            await self._watch(handler)
        finally:
            if delivering is not None:
                delivering.cancel()
                await asyncio.gather(delivering, return_exceptions=True)
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
        event_id = f"m{event.get('channel')}:{event.get('ts')}"
        try:
            name = await self._name_of(str(event.get("user", "")))
            await self.channel.on_message(self._incoming(event, event_id, name))
        except Exception as exc:  # bolt would only log it; recorded, the event is not retried
            await self.channel.failed(event_id, exc)

    async def _name_of(self, user: str) -> str:
        """How Slack names the sender (its events carry only the id): the dashboard's asking
        list shows it beside Allow. Asked once per user; a refusal (no users:read scope) leaves
        the id alone rather than failing the message."""
        if not user:
            return ""
        if user not in self.names:
            try:
                found = (await self.client.users_info(user=user)).get("user") or {}
            except (SlackApiError, aiohttp.ClientError, OSError, TimeoutError):
                return ""
            profile = found.get("profile") or {}
            self.names[user] = str(
                profile.get("display_name") or profile.get("real_name") or found.get("name") or ""
            )
        return self.names[user]

    def _incoming(self, event: dict[str, Any], event_id: str, name: str = "") -> Incoming:
        thread = str(event.get("thread_ts") or event.get("ts"))
        text = str(event.get("text") or "")
        if self.bot_user:
            text = text.replace(f"<@{self.bot_user}>", "").strip()
        files, skipped = self._files(event.get("files") or [])
        return Incoming(
            chat=_chat_key(str(event.get("channel")), thread),
            user=str(event.get("user", "")),
            text=text,
            event_id=event_id,
            files=tuple(files),
            skipped=tuple(skipped),
            name=name,
        )

    async def _on_action(self, ack: Callable, body: dict[str, Any]) -> None:
        await ack()
        action = (body.get("actions") or [{}])[0]
        message = body.get("message") or {}
        channel = str(
            (body.get("channel") or {}).get("id") or body.get("container", {}).get("channel_id", "")
        )
        thread = str(message.get("thread_ts") or message.get("ts") or "")
        user = body.get("user") or {}
        await self.channel.on_button(
            _chat_key(channel, thread),
            str(user.get("id", "")),
            str(action.get("value", "")),
            f"a{action.get('action_ts') or body.get('trigger_id')}",
            name=str(user.get("username") or user.get("name") or ""),
        )

    def _files(self, files: list[dict[str, Any]]) -> tuple[list[InboxFile], list[tuple[str, str]]]:
        """The event's files, to be downloaded only if the sender is allowed (the conversation
        decides) and only from where the bot token may go (slack_files): nothing is fetched
        here."""
        wanted, skipped = [], []
        for item in files:
            name = str(item.get("name") or item.get("id") or "file")
            url = str(item.get("url_private") or "")
            if int(item.get("size") or 0) > slack_files.FILE_LIMIT:
                skipped.append((name, "it is larger than svc takes from a chat (20 MB)"))
            elif not url:
                skipped.append((name, "Slack gave no address to download it from"))
            elif not slack_files.token_may_go_to(url, self.config.api_base):
                skipped.append(
                    (
                        name,
                        "it is not on Slack's file host (files.slack.com), and "
                        "svc sends the bot token nowhere else",
                    )
                )
            else:
                fetch = functools.partial(
                    slack_files.download, url, name, self.config.token, self.config.api_base
                )
                wanted.append(InboxFile(name, fetch))
        return wanted, skipped

    @property
    def name(self) -> str:
        return self.config.name

    async def send_notification(
        self, title: str, body: str, url: str, event: str = "", session_id: str | None = None
    ) -> None:
        """A notification (contract §15) to the channel's `notify_chat`. Slack reads `text` as
        mrkdwn: every part is escaped, so `<!channel>` or `<https://x|label>` in a body is
        shown as typed — never a mention, nor a link whose label hides where it goes."""
        if self.channel.answered_here(self.config.notify_chat, event, session_id):
            return
        if self.config.notify_chat:
            parts = [f"*{mrkdwn_escape(title)}*", mrkdwn_escape(body)]
            text = "\n".join(parts + ([mrkdwn_escape(url)] if url else []))
            # Straight to Slack: the notifier keeps its own delivery record and tries again
            # while Slack cannot be reached (notifications_app/hub.py).
            await self.platform.send(self.config.notify_chat, _cut(text, 4000))


def mrkdwn_escape(text: str) -> str:
    """Slack's three control characters escaped as its docs say ("Escaping text" in
    docs.slack.dev/messaging/formatting-message-text): & < > as &amp; &lt; &gt;."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, not ending inside an escape (`&am` would show as text)."""
    return text if len(text) <= limit else re.sub(r"&[a-z]{0,3}$", "", text[:limit])
