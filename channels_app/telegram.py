"""Telegram (contract §14) with python-telegram-bot, over long polling against
`{api_base}/bot{token}/{method}` — so a self-hosted Bot API server works, and no public URL is
needed.

Why python-telegram-bot and not aiogram: both are well kept and async; PTB is the most used,
builds on httpx (already svc's HTTP client), and takes the Bot API root and file root as plain
settings. svc uses its `Bot` (typed methods, the API's errors as exceptions) and runs the
getUpdates loop itself: the supervisor (§12) then owns reconnects and their backoff, and each
update id is recorded before it is answered, so a redelivered update is never answered twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.error import (
    BadRequest,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)

from channels_app import reach
from channels_app.config import ChannelConfig, ChannelError
from channels_app.platform import Buttons, FileNotReceived, InboxFile, Incoming

if TYPE_CHECKING:
    from channels_app.conversation import Conversations

POLL_S = 20  # long-polling wait per getUpdates
FILE_LIMIT = 20 * 1024 * 1024  # what the Bot API lets a bot download


class TelegramPlatform:
    name = "telegram"
    max_len = 4096
    edit_every_s = 1.5

    def __init__(self, bot: Bot) -> None:
        self.bot = bot

    async def send(self, chat: str, text: str, buttons: Buttons | None = None) -> str:
        sent = await self.bot.send_message(int(chat), text, reply_markup=_keyboard(buttons))
        return str(sent.message_id)

    async def edit(
        self, chat: str, message_id: str, text: str, buttons: Buttons | None = None
    ) -> None:
        try:
            await self.bot.edit_message_text(
                text, chat_id=int(chat), message_id=int(message_id), reply_markup=_keyboard(buttons)
            )
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise

    def retry_in(self, exc: Exception) -> float | None:
        """What the Bot API said, for the outbox: flood control's own wait; a network failure,
        a timeout or a 5xx (python-telegram-bot's NetworkError) and a refused token (the
        channel is down until it is fixed, not the message) are passing; a 400 (chat not
        found, message to edit not found), a 403 (the bot was blocked) are final."""
        if isinstance(exc, RetryAfter):
            wait = exc.retry_after
            return float(wait.total_seconds() if hasattr(wait, "total_seconds") else wait)
        if isinstance(exc, BadRequest):  # a NetworkError subclass in python-telegram-bot
            return None
        if isinstance(exc, (NetworkError, InvalidToken, OSError, TimeoutError)):
            return 0.0
        return None


async def _download(name: str, item: Any) -> bytes:
    """getFile, then the file from `{api_base}/file/bot{token}/…`. The error a person reads
    names the file and what Telegram said, never the URL (it carries the bot token)."""
    try:
        handle = await item.get_file()
        return bytes(await handle.download_as_bytearray())
    except TelegramError as exc:
        raise FileNotReceived(
            f"{name} could not be downloaded from Telegram ({exc.message}); send it again"
        ) from exc


def _keyboard(buttons: Buttons | None) -> InlineKeyboardMarkup | None:
    if not buttons:
        return None
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(label[:64], callback_data=data)] for label, data in buttons]
    )


class TelegramChannel:
    def __init__(self, config: ChannelConfig, conversations: Conversations) -> None:
        base = config.api_base.rstrip("/")
        self.config = config
        self.bot = Bot(config.token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot")
        self.platform = TelegramPlatform(self.bot)
        # The conversation outlives this connection: a restart of the service (the Bot API
        # away) keeps following the chats' turns into the outbox (contract §17).
        self.channel = conversations.conversation(config, self.platform)
        self.username = ""

    async def run(self, online: Callable[[str], None]) -> None:
        self.started = timezone.now()  # what the inbox holds from before is replayed
        try:
            await self.bot.initialize()  # getMe: a wrong token fails here
        except InvalidToken as exc:
            raise ChannelError(
                f"Telegram refused the bot token (channels.{self.config.name}.bot_token_env or "
                "bot_token): copy it again from @BotFather"
            ) from exc
        except NetworkError as exc:
            raise ChannelError(self._unreachable(exc)) from exc
        self.username = self.bot.username or ""
        offset: int | None = None
        delivering = None
        try:
            await self.bot.delete_webhook()  # getUpdates refuses to run beside a webhook
            online(f"@{self.username} (long polling)")
            delivering = asyncio.ensure_future(self.channel.outbox.run(self.platform))
            await self.channel.replay_unfinished(self.started)
            while True:
                try:
                    updates = await self.bot.get_updates(offset=offset, timeout=POLL_S)
                except NetworkError as exc:
                    raise ChannelError(f"lost it: {self._unreachable(exc)}") from exc
                for update in updates:
                    # Past it whatever happens: the next getUpdates confirms it to Telegram.
                    # Sent again all the same (a restart first), it is recorded, so skipped.
                    offset = update.update_id + 1
                    await self._take_safely(update)
        finally:
            if delivering is not None:
                delivering.cancel()
                await asyncio.gather(delivering, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self.bot.shutdown()

    def _unreachable(self, exc: Exception) -> str:
        setting = f"channels.{self.config.name}.api_base"
        return reach.unreachable("telegram", self.config.api_base, exc, setting, self.config.token)

    async def _take_safely(self, update: Update) -> None:
        """One update; what goes wrong with it stays with it (recorded `failed`), and the
        getUpdates loop goes on: a crash here would restart the service into the same update."""
        try:
            await self._take(update)
        except Exception as exc:
            await self.channel.failed(f"u{update.update_id}", exc)

    async def _take(self, update: Update) -> None:
        event_id = f"u{update.update_id}"
        if update.callback_query is not None:
            query = update.callback_query
            with contextlib.suppress(Exception):
                await query.answer()
            if query.message is not None and query.data:
                await self.channel.on_button(
                    str(query.message.chat.id),
                    str(query.from_user.id),
                    query.data,
                    event_id,
                    name=_name_of(query.from_user),
                )
            return
        message = update.message or update.edited_message
        if message is None or message.from_user is None:
            return
        files, skipped = self._files(message)
        await self.channel.on_message(
            Incoming(
                chat=str(message.chat.id),
                user=str(message.from_user.id),
                text=message.text or message.caption or "",
                event_id=event_id,
                files=tuple(files),
                skipped=tuple(skipped),
                name=_name_of(message.from_user),
            )
        )

    def _files(self, message: Message) -> tuple[list[InboxFile], list[tuple[str, str]]]:
        """The message's photo and document, to be downloaded only if the sender is allowed
        (the conversation decides): nothing is fetched here."""
        wanted: list[tuple[str, Any, int]] = []
        if message.photo:
            largest = message.photo[-1]
            wanted.append((f"photo-{message.message_id}.jpg", largest, largest.file_size or 0))
        if message.document is not None:
            document = message.document
            name = document.file_name or f"document-{message.message_id}"
            wanted.append((name, document, document.file_size or 0))
        files, skipped = [], []
        for name, item, size in wanted:
            if size > FILE_LIMIT:
                skipped.append((name, "it is larger than Telegram lets a bot download (20 MB)"))
            else:
                files.append(InboxFile(name, functools.partial(_download, name, item)))
        return files, skipped

    @property
    def name(self) -> str:
        return self.config.name

    async def send_notification(
        self, title: str, body: str, url: str, event: str = "", session_id: str | None = None
    ) -> None:
        """A notification (contract §15) to the channel's `notify_chat`, as plain text (no
        parse_mode): nothing in a title or body can become a link whose label hides its
        target, or any formatting, and a cut at 4,096 cannot break markup into a refused
        message (docs/channels.md, "Notifications")."""
        if self.channel.answered_here(self.config.notify_chat, event, session_id):
            return
        if self.config.notify_chat:
            text = f"{title}\n{body}" + (f"\n{url}" if url else "")
            # Straight to the Bot API: the notifier keeps its own delivery record and tries
            # again while Telegram cannot be reached (notifications_app/hub.py).
            await self.platform.send(self.config.notify_chat, text[:4096])


def _name_of(user: Any) -> str:
    """What Telegram calls a user, for the record of what they decided: @username, else their
    name."""
    return f"@{user.username}" if user.username else str(user.full_name or "")
