"""The fake Telegram Bot API server against the real, unpatched python-telegram-bot: if PTB can
log in, send, edit, poll and download through it, the channel's tests can trust it."""

from __future__ import annotations

import asyncio
import json
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator

import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import BadRequest, Conflict, InvalidToken, NetworkError, RetryAfter
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from harness.fakes.telegram_api import FakeTelegram

USER = 4242


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


def make_bot(tg: FakeTelegram, token: str | None = None) -> Bot:
    return Bot(token or tg.token, base_url=tg.base_url, base_file_url=tg.base_file_url)


def make_application(tg: FakeTelegram) -> Application:
    return (
        Application.builder()
        .token(tg.token)
        .base_url(tg.base_url)
        .base_file_url(tg.base_file_url)
        .build()
    )


def keyboard(*pairs: tuple[str, str]) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton(t, callback_data=d) for t, d in pairs]])


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\x80\x20\x10" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


async def test_get_me(tg: FakeTelegram) -> None:
    async with make_bot(tg) as bot:
        me = await bot.get_me()
    assert (me.id, me.username, me.is_bot) == (123456, "svc_test_bot", True)
    assert me.can_join_groups is True
    assert tg.calls("getMe")[0]["status"] == 200


async def test_wrong_token_is_invalid_token(tg: FakeTelegram) -> None:
    for token in ("123456:WRONG", "not-a-token"):
        bot = make_bot(tg, token)
        with pytest.raises(InvalidToken):
            await bot.initialize()
    assert [c["status"] for c in tg.calls("getMe")] == [401, 401]
    # the exact answer Telegram gives for a well-formed but unknown token
    assert tg.log[0]["token"] == "123456:WRONG"


async def test_send_edit_and_not_modified(tg: FakeTelegram) -> None:
    tg.send_text(USER, "hi")  # the user opens the private chat
    async with make_bot(tg) as bot:
        sent = await bot.send_message(USER, "working…", reply_markup=keyboard(("Stop", "stop")))
        assert sent.text == "working…"
        assert sent.chat.id == USER and sent.chat.type == "private"
        assert sent.from_user.username == "svc_test_bot"
        assert sent.reply_markup.inline_keyboard[0][0].callback_data == "stop"

        edited = await bot.edit_message_text(
            "done",
            chat_id=USER,
            message_id=sent.message_id,
            reply_markup=keyboard(("Stop", "stop")),
        )
        assert edited.text == "done" and edited.edit_date is not None
        with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
            await bot.edit_message_text(
                "done",
                chat_id=USER,
                message_id=sent.message_id,
                reply_markup=keyboard(("Stop", "stop")),
            )
        # the same text without reply_markup removes the keyboard: that is a change
        edited = await bot.edit_message_text("done", chat_id=USER, message_id=sent.message_id)
        assert edited.reply_markup is None
        with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
            await bot.edit_message_text("x", chat_id=USER, message_id=999)

    [message] = tg.sent(USER)
    assert message["text"] == "done" and "reply_markup" not in message
    edits = tg.edits(USER)
    assert [e["ok"] for e in edits] == [True, False, True, False]
    assert "message is not modified" in edits[1]["error"]
    assert edits[0]["t"] <= edits[2]["t"]


async def test_platform_limits(tg: FakeTelegram) -> None:
    tg.send_text(USER, "hi")
    async with make_bot(tg) as bot:
        with pytest.raises(BadRequest, match=r"(?i)^message is too long$"):
            await bot.send_message(USER, "x" * 4097)
        ok = await bot.send_message(USER, "é" * 4096)  # characters, not bytes
        assert len(ok.text) == 4096
        with pytest.raises(BadRequest, match=r"(?i)^message text is empty$"):
            await bot.send_message(USER, "")
        with pytest.raises(BadRequest, match=r"(?i)^text must be non-empty$"):
            await bot.send_message(USER, " \n ")
        with pytest.raises(BadRequest, match=r"(?i)^chat not found$"):
            await bot.send_message(777, "hello")
        with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
            await bot.send_message(USER, "x", reply_markup=keyboard(("B", "d" * 65)))
        trimmed = await bot.send_message(USER, "\n  padded \n")
        assert trimmed.text == "padded"
    assert [c["status"] for c in tg.calls("sendMessage")] == [400, 200, 400, 400, 400, 400, 200]


async def test_parse_modes(tg: FakeTelegram) -> None:
    tg.send_text(USER, "hi")
    async with make_bot(tg) as bot:
        html = await bot.send_message(
            USER, "<b>bold</b> &amp; <a href='https://example.com'>link</a> 🙂 <i>end</i>", "HTML"
        )
        assert html.text == "bold & link 🙂 end"
        kinds = [(e.type, e.offset, e.length) for e in html.entities]
        assert kinds == [("bold", 0, 4), ("text_link", 7, 4), ("italic", 15, 3)]  # UTF-16
        assert html.entities[1].url == "https://example.com/"
        with pytest.raises(
            BadRequest, match=r'(?i)can.t parse entities: unsupported start tag "x"'
        ):
            await bot.send_message(USER, "a <x>b</x>", "HTML")
        with pytest.raises(BadRequest, match=r"(?i)character '\.' is reserved"):
            await bot.send_message(USER, "*bold* end.", "MarkdownV2")
        md2 = await bot.send_message(USER, "*bold* end\\. `code`", "MarkdownV2")
        assert md2.text == "bold end. code"
        assert [e.type for e in md2.entities] == ["bold", "code"]
        cmd = await bot.send_message(USER, "try /start or https://example.com/x.")
        assert [e.type for e in cmd.entities] == ["bot_command", "url"]


async def test_offsets_confirm_updates(tg: FakeTelegram) -> None:
    tg.send_text(USER, "one")
    tg.send_text(USER, "two")
    async with make_bot(tg) as bot:
        first = await bot.get_updates(timeout=0)
        again = await bot.get_updates(timeout=0)  # nothing confirmed yet: the same two
        assert [u.message.text for u in first] == ["one", "two"]
        assert [u.update_id for u in again] == [u.update_id for u in first]
        assert first[1].update_id == first[0].update_id + 1
        confirmed = await bot.get_updates(offset=first[-1].update_id + 1, timeout=0)
        assert confirmed == ()
        assert await bot.get_updates(timeout=0) == ()  # forgotten for good
        assert tg.pending_updates == []

        # a long poll is answered as soon as an update arrives
        started = time.monotonic()
        poll = asyncio.create_task(bot.get_updates(offset=first[-1].update_id + 1, timeout=10))
        await asyncio.sleep(0.2)
        tg.send_text(USER, "three")
        [update] = await poll
        assert update.message.text == "three"
        assert time.monotonic() - started < 3

        # and it waits `timeout` seconds when nothing comes
        started = time.monotonic()
        assert await bot.get_updates(offset=update.update_id + 1, timeout=1) == ()
        assert 0.9 < time.monotonic() - started < 3


async def test_second_poller_conflicts(tg: FakeTelegram) -> None:
    async with make_bot(tg) as first, make_bot(tg) as second:
        waiting = asyncio.create_task(first.get_updates(timeout=5))
        await asyncio.sleep(0.2)
        other = asyncio.create_task(second.get_updates(timeout=1))
        with pytest.raises(Conflict, match="terminated by other getUpdates request"):
            await waiting
        assert await other == ()


async def test_application_polling_text_and_callback(tg: FakeTelegram) -> None:
    seen: list[str] = []

    async def on_start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        seen.append("start")
        await context.bot.set_my_commands([("start", "Start over"), ("stop", "Stop it")])

    async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        seen.append(update.message.text)
        await context.bot.send_chat_action(update.effective_chat.id, "typing")
        await update.message.reply_text(
            f"echo: {update.message.text}",
            reply_markup=keyboard(("Yes", "y"), ("No", "n")),
            do_quote=True,  # sends reply_parameters
        )

    async def on_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        seen.append(f"tap:{query.data}")
        await query.answer("noted")
        await query.edit_message_text(f"you chose {query.data}")

    application = make_application(tg)
    application.add_handler(CommandHandler("start", on_start))
    application.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, on_text))
    application.add_handler(CallbackQueryHandler(on_tap))
    async with application:
        await application.updater.start_polling(poll_interval=0, timeout=2)
        await application.start()
        try:
            tg.send_text(USER, "/start")
            tg.send_text(USER, "ping", first_name="Ann")
            reply = await tg.async_wait_for(lambda: tg.sent(USER))
            assert reply[0]["text"] == "echo: ping"
            assert reply[0]["reply_to_message"]["text"] == "ping"
            query_id = tg.tap(USER, reply[0]["message_id"], "y")
            await tg.async_wait_for(lambda: tg.sent(USER)[0]["text"] == "you chose y")
            await tg.async_wait_for(lambda: tg.callback_answer(query_id))
            await asyncio.sleep(0.3)  # more polls: nothing is delivered twice
        finally:
            await application.updater.stop()
            await application.stop()
    assert seen == ["start", "ping", "tap:y"]
    assert tg.callback_answer(query_id)["text"] == "noted"
    assert [c["command"] for c in tg.commands()] == ["start", "stop"]
    assert tg.calls("sendChatAction")[0]["params"]["action"] == "typing"
    assert tg.pending_updates == []  # the updater confirmed what it got when it stopped
    assert "reply_markup" not in tg.sent(USER)[0]


async def test_photo_and_document_files(tg: FakeTelegram) -> None:
    picture = png(1000, 500)
    tg.send_photo(USER, picture, caption="look")
    async with make_bot(tg) as bot:
        [update] = await bot.get_updates(timeout=0)
        message = update.message
        assert message.caption == "look"
        largest = message.photo[-1]
        assert (largest.width, largest.height) == (1000, 500)
        assert [p.width for p in message.photo] == [90, 320, 800, 1000]
        file = await bot.get_file(largest.file_id)
        assert file.file_path.startswith(tg.base_file_url)
        assert bytes(await file.download_as_bytearray()) == picture
        with pytest.raises(BadRequest, match=r"(?i)invalid file_id"):
            await bot.get_file("nope")

        sent = await bot.send_document(USER, b"hello world", filename="notes.txt", caption="f")
        assert sent.document.file_name == "notes.txt"
        assert sent.document.mime_type == "text/plain"
        upload = await bot.get_file(sent.document.file_id)
        assert bytes(await upload.download_as_bytearray()) == b"hello world"

    tg.send_document(USER, b"%PDF-1.4", "spec.pdf", "application/pdf")
    async with make_bot(tg) as bot:
        updates = await bot.get_updates(offset=update.update_id + 1, timeout=0)
        assert updates[0].message.document.mime_type == "application/pdf"
    assert tg.sent(USER)[0]["document"]["file_size"] == 11
    assert tg.calls("sendDocument")[0]["params"]["document"]["size"] == 11


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")  # RetryAfter's own
async def test_injected_flood_error_and_reconnect(tg: FakeTelegram) -> None:
    tg.send_text(USER, "hi")
    async with make_bot(tg) as bot:
        tg.fail_next("sendMessage", error_code=429, retry_after=3)
        with pytest.raises(RetryAfter, match="Retry in 3 seconds"):
            await bot.send_message(USER, "hello")
        await bot.send_message(USER, "hello")

        tg.go_away()
        with pytest.raises(NetworkError):
            await bot.get_me()
        tg.come_back()
        assert (await bot.get_me()).username == "svc_test_bot"


async def test_application_survives_an_outage(tg: FakeTelegram) -> None:
    got: list[str] = []

    async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        got.append(update.message.text)

    application = make_application(tg)
    application.add_handler(MessageHandler(filters.TEXT, on_text))
    async with application:
        await application.updater.start_polling(poll_interval=0, timeout=2)
        await application.start()
        try:
            tg.send_text(USER, "before")
            await tg.async_wait_for(lambda: got == ["before"])
            tg.go_away()  # the waiting long poll is cut, new connections are refused
            tg.send_text(USER, "during")
            await asyncio.sleep(0.3)
            tg.come_back()
            await tg.async_wait_for(lambda: got == ["before", "during"], timeout=8)
        finally:
            await application.updater.stop()
            await application.stop()
    assert tg.pending_updates == []


def call(tg: FakeTelegram, method: str, body: bytes | None = None, **headers: str) -> tuple:
    request = urllib.request.Request(
        f"{tg.api_base}/bot{tg.token}/{method}", data=body, headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_wire_protocol_from_sync_code(tg: FakeTelegram) -> None:
    """What any HTTP client may send: JSON bodies with typed values, query strings, any case."""
    tg.send_text(USER, "hi")
    body = json.dumps(
        {
            "chat_id": USER,
            "text": "<i>hey</i>",
            "parse_mode": "HTML",
            "reply_markup": {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]},
        }
    ).encode()
    status, answer = call(tg, "SENDMESSAGE", body, **{"Content-Type": "application/json"})
    assert status == 200 and answer["ok"] is True
    message = answer["result"]
    assert message["text"] == "hey"
    assert message["entities"] == [{"offset": 0, "length": 3, "type": "italic"}]
    assert message["reply_markup"] == {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}

    query = urllib.parse.urlencode({"chat_id": USER, "action": "dance"})
    assert call(tg, f"sendChatAction?{query}") == (
        400,
        {
            "ok": False,
            "error_code": 400,
            "description": "Bad Request: wrong parameter action in request",
        },
    )
    assert call(tg, "noSuchMethod") == (
        404,
        {"ok": False, "error_code": 404, "description": "Not Found: method not found"},
    )
    bad_token = urllib.request.Request(f"{tg.api_base}/bot123456:NOPE/getMe")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(bad_token, timeout=5)
    assert json.loads(caught.value.read()) == {
        "ok": False,
        "error_code": 401,
        "description": "Unauthorized",
    }

    tg.tap(USER, message["message_id"], "a")
    updates = tg.wait_for(lambda: call(tg, "getUpdates?timeout=1")[1]["result"])
    assert [sorted(u) for u in updates] == [
        ["message", "update_id"],
        ["callback_query", "update_id"],
    ]
    assert updates[1]["callback_query"]["message"]["message_id"] == message["message_id"]
    with pytest.raises(ValueError, match="no button"):
        tg.tap(USER, message["message_id"], "b")
