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

import contextlib
from collections.abc import Callable
from typing import Any

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.error import BadRequest, InvalidToken, NetworkError

from channels_app.config import ChannelConfig, ChannelError
from channels_app.conversation import Channel
from channels_app.platform import Buttons, Incoming

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


def _keyboard(buttons: Buttons | None) -> InlineKeyboardMarkup | None:
    if not buttons:
        return None
    return InlineKeyboardMarkup([[InlineKeyboardButton(label[:64], callback_data=data)]
                                 for label, data in buttons])  # fmt: skip


class TelegramChannel:
    def __init__(self, config: ChannelConfig) -> None:
        base = config.api_base.rstrip("/")
        self.config = config
        self.bot = Bot(config.token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot")
        self.channel = Channel(config, TelegramPlatform(self.bot))
        self.username = ""

    async def run(self, online: Callable[[str], None]) -> None:
        try:
            await self.bot.initialize()  # getMe: a wrong token fails here
        except InvalidToken as exc:
            raise ChannelError(
                f"Telegram refused the bot token (channels.{self.config.name}.bot_token_env or "
                "bot_token): copy it again from @BotFather"
            ) from exc
        except NetworkError as exc:
            raise ChannelError(
                f"cannot reach the Bot API at {self.config.api_base} "
                f"(channels.{self.config.name}.api_base): {exc}"
            ) from exc
        self.username = self.bot.username or ""
        offset: int | None = None
        try:
            await self.bot.delete_webhook()  # getUpdates refuses to run beside a webhook
            online(f"@{self.username} (long polling)")
            while True:
                try:
                    updates = await self.bot.get_updates(offset=offset, timeout=POLL_S)
                except NetworkError as exc:
                    raise ChannelError(
                        f"lost the Bot API at {self.config.api_base}: {exc}"
                    ) from exc
                for update in updates:
                    offset = update.update_id + 1
                    await self._take(update)
        finally:
            self.channel.stop()
            with contextlib.suppress(Exception):
                await self.bot.shutdown()

    async def _take(self, update: Update) -> None:
        event_id = f"u{update.update_id}"
        if update.callback_query is not None:
            query = update.callback_query
            with contextlib.suppress(Exception):
                await query.answer()
            if query.message is not None and query.data:
                await self.channel.on_button(
                    str(query.message.chat.id), str(query.from_user.id), query.data, event_id
                )
            return
        message = update.message or update.edited_message
        if message is None or message.from_user is None:
            return
        files, too_large = await self._files(message)
        await self.channel.on_message(
            Incoming(
                chat=str(message.chat.id),
                user=str(message.from_user.id),
                text=message.text or message.caption or "",
                event_id=event_id,
                files=tuple(files),
                too_large=tuple(too_large),
            )
        )

    async def _files(self, message: Message) -> tuple[list[tuple[str, bytes]], list[str]]:
        wanted: list[tuple[str, Any, int]] = []
        if message.photo:
            largest = message.photo[-1]
            wanted.append((f"photo-{message.message_id}.jpg", largest, largest.file_size or 0))
        if message.document is not None:
            document = message.document
            name = document.file_name or f"document-{message.message_id}"
            wanted.append((name, document, document.file_size or 0))
        files, too_large = [], []
        for name, item, size in wanted:
            if size > FILE_LIMIT:
                too_large.append(name)
                continue
            handle = await item.get_file()
            files.append((name, bytes(await handle.download_as_bytearray())))
        return files, too_large

    @property
    def name(self) -> str:
        return self.config.name

    async def send_notification(self, title: str, body: str, url: str) -> None:
        """A notification (contract §15) to the channel's `notify_chat`."""
        if self.config.notify_chat:
            text = f"{title}\n{body}" + (f"\n{url}" if url else "")
            await self.channel.platform.send(self.config.notify_chat, text[:4096])
