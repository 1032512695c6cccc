"""A fake Telegram Bot API server: a real aiohttp server on a loopback port that the unmodified
python-telegram-bot (or any other client) talks to over HTTP, for tests without a network.

It is written from the Bot API reference (https://core.telegram.org/bots/api) and from what the
open-source Bot API server (tdlib/telegram-bot-api, with tdlib underneath) does, independently of
svc's own channel code. What it reproduces:

* URLs `{api_base}/bot{token}/{method}` (method names case-insensitive, GET or POST, parameters in
  the query string, a JSON object, a urlencoded form or multipart form data; every parameter
  arrives as a string, and structured ones such as `reply_markup` as JSON text, exactly like
  the real server sees them) and file downloads at `{api_base}/file/bot{token}/{file_path}`;
* answers `{"ok": true, "result": ...}` / `{"ok": false, "error_code", "description"
  [, "parameters"]}` with the real descriptions (`Bad Request: chat not found`, `Bad Request:
  message is not modified: ...`, `Unauthorized`, `Conflict: terminated by other getUpdates
  request; ...`, `Not Found: method not found`, ...);
* the update queue of getUpdates: ids increase by one, `offset` confirms (forgets) older updates,
  a negative offset keeps only the last updates, long polling waits up to `timeout` (an integer,
  at most 50 s) and is answered as soon as an update arrives, a second concurrent getUpdates
  ends the first one with 409, `allowed_updates` is remembered and applies to updates created
  afterwards;
* messages as the server builds them: text cleaned (control characters become spaces, `\\r` is
  dropped) and trimmed of leading/trailing spaces and newlines, parse_mode HTML / MarkdownV2 /
  Markdown parsed into entities (with the real "can't parse entities" errors), offsets in
  UTF-16 code units, 1-4096 characters (Unicode code points) after parsing, captions up to
  1024, bot_command/url/mention/hashtag entities detected automatically;
* inline keyboards (only they are echoed in Message.reply_markup), callback_data of 1-64 bytes,
  edits that change nothing refused with "message is not modified", editMessageText without
  reply_markup removing the keyboard, replies (`reply_parameters` or `reply_to_message_id`),
  forum topics (`message_thread_id`).

Test controls (thread-safe, for sync or async test code): `send_text`, `send_photo`,
`send_document`, `tap` queue updates as if a user acted; `log`, `calls`, `sent`, `edits`,
`commands` show what the bot did; `wait_for` / `async_wait_for` poll a predicate; `fail_next`
makes the next calls of a method fail (e.g. 429 with retry_after); `go_away` / `come_back` close
and reopen the listening socket (dropping open connections) for reconnect tests.

Deliberate simplifications: one bot per server (every valid token is that bot); no rate limits
unless injected with `fail_next`; the server's anti-spam rules for getUpdates repeated with the
same offset (timeout stretched to 3 s within 3 s, limit 1 within 0.5 s) are off unless
`anti_spam=True`; the 3 s delay the server puts on repeated 409 answers is not reproduced;
entity merging/splitting of overlapping entities is not reproduced; smaller photo sizes carry
the original bytes (no re-encoding); inline-mode messages are not modelled.
Run standalone: `python -m tests.fakes.telegram_api --port 8081`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import itertools
import json
import mimetypes
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.telegram_entities import ApiError, bad
from tests.fakes.telegram_text import MAX_RAW_TEXT_BYTES, format_text  # noqa: F401 (re-exported)

DEFAULT_TOKEN = "123456:TEST"

MAX_TEXT = 4096  # message_text_length_max, in code points
MAX_CAPTION = 1024  # message_caption_length_max
LONG_POLL_MAX_TIMEOUT = 50
MAX_DOWNLOAD = 20 * 1024 * 1024

NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"

# getUpdates delivers these only when asked for explicitly in allowed_updates.
NOT_BY_DEFAULT = {"chat_member", "message_reaction", "message_reaction_count"}

CHAT_ACTIONS = {
    "cancel",
    "typing",
    "record_video",
    "upload_video",
    "record_audio",
    "record_voice",
    "upload_audio",
    "upload_voice",
    "upload_photo",
    "upload_document",
    "choose_sticker",
    "pick_up_location",
    "find_location",
    "record_video_note",
    "upload_video_note",
}


# --- parameters -------------------------------------------------------------------------------


@dataclass
class Upload:
    name: str
    file_name: str
    content_type: str
    data: bytes


def to_int(value: str, default: int = 0) -> int:
    """td::to_integer: an optional sign and the leading digits; anything else gives 0."""
    m = re.match(r"\s*([+-]?\d+)", value or "")
    return int(m.group(1)) if m else default


def to_bool(value: str) -> bool:
    return (value or "").strip().lower() in ("true", "1")


def json_arg(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return None


def _image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, JPEG or WebP header."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        if data[12:16] == b"VP8X":
            w = int.from_bytes(data[24:27], "little") + 1
            h = int.from_bytes(data[27:30], "little") + 1
            return w, h
        if data[12:16] == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return w & 0x3FFF, h & 0x3FFF
    if data[:2] == b"\xff\xd8":
        k = 2
        while k + 9 < len(data):
            if data[k] != 0xFF:
                k += 1
                continue
            marker = data[k + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                k += 2
                continue
            (length,) = struct.unpack(">H", data[k + 2 : k + 4])
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[k + 5 : k + 9])
                return w, h
            k += 2 + length
    return None


# --- the server -------------------------------------------------------------------------------


@dataclass
class _File:
    file_id: str
    file_unique_id: str
    file_path: str
    data: bytes


@dataclass
class _Stored:
    message: dict[str, Any]
    from_bot: bool
    deleted: bool = False


@dataclass
class _Failure:
    code: int
    description: str
    retry_after: int | None
    left: int


class FakeTelegram:
    """The fake Bot API server. `start()` it (or use it as a context manager), point the client at
    `api_base`, and drive it with the test controls."""

    def __init__(
        self,
        valid_tokens: Iterable[str] | None = None,
        *,
        port: int = 0,
        bot_first_name: str = "svc test",
        bot_username: str = "svc_test_bot",
        anti_spam: bool = False,
    ) -> None:
        self.valid_tokens = set(valid_tokens or {DEFAULT_TOKEN})
        first = sorted(self.valid_tokens)[0]
        bot_id = to_int(first.split(":", 1)[0]) or 123456
        self.bot_user: dict[str, Any] = {
            "id": bot_id,
            "is_bot": True,
            "first_name": bot_first_name,
            "username": bot_username,
        }
        self.port = port
        self.anti_spam = anti_spam
        self.loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self._closing = False
        self._away = False
        # state (guarded by _lock)
        self._log: list[dict[str, Any]] = []
        self._edits: list[dict[str, Any]] = []
        self._users: dict[int, dict[str, Any]] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._topics: dict[int, set[int]] = {}
        self._next_message_id: dict[int, int] = {}
        self._messages: dict[tuple[int, int], _Stored] = {}
        self._files: dict[str, _File] = {}
        self._paths: dict[str, str] = {}
        self._file_counter = itertools.count()
        self._queue: list[dict[str, Any]] = []  # pending updates, ascending update_id
        self._next_update_id = 100000001
        self._allowed: set[str] | None = None  # None: the default set
        self._callbacks: dict[str, dict[str, Any]] = {}
        self._callback_counter = itertools.count(5200000000000000001)
        self._commands: dict[tuple[str, str], list[dict[str, str]]] = {}
        self._failures: dict[str, list[_Failure]] = {}
        self._webhook_url = ""
        self._long_poll: asyncio.Future[str] | None = None
        self._last_poll: tuple[int, float] = (-1, 0.0)

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What python-telegram-bot takes as `base_url` (it appends the token)."""
        return f"{self.api_base}/bot"

    @property
    def base_file_url(self) -> str:
        return f"{self.api_base}/file/bot"

    @property
    def token(self) -> str:
        return sorted(self.valid_tokens)[0]

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle_method)
        app.router.add_route("GET", "/file/bot{token}/{path:.+}", self._handle_file)
        app.router.add_route("*", "/{tail:.*}", self._handle_other)
        return app

    def start(self) -> FakeTelegram:
        if not self.port:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="fake-telegram", daemon=True
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("FakeTelegram did not start")
        return self

    def _serve(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self._runner = web.AppRunner(
            self.app(), access_log=None, handler_cancellation=True, shutdown_timeout=1.0
        )
        self.loop.run_until_complete(self._runner.setup())
        self.loop.run_until_complete(self._open_site())
        ready.set()
        self.loop.run_forever()
        self.loop.close()

    async def _open_site(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await self._site.start()

    def stop(self) -> None:
        if not self.loop or not self._runner:
            return
        self._closing = True
        self._run(self._stop_async())
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread:
            self._thread.join(5)
        self._runner = None

    async def _stop_async(self) -> None:
        self._wake("closing")
        assert self._runner is not None
        await self._runner.cleanup()

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, coro: Any, timeout: float = 10.0) -> Any:
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def go_away(self) -> None:
        """Close the listening socket and drop every open connection: clients get connection
        refused/reset until come_back()."""
        self._run(self._go_away())

    async def _go_away(self) -> None:
        if self._away:
            return
        self._away = True
        if self._site is not None:
            await self._site.stop()
            self._site = None
        server = self._runner.server if self._runner else None
        for conn in list(server.connections if server else []):
            conn.force_close()

    def come_back(self) -> None:
        """Listen again on the same port."""
        self._run(self._come_back())

    async def _come_back(self) -> None:
        if not self._away:
            return
        for _ in range(100):
            try:
                await self._open_site()
                break
            except OSError:
                await asyncio.sleep(0.05)
        else:
            raise RuntimeError(f"port {self.port} could not be reopened")
        self._away = False

    # --- test controls: users act ----------------------------------------------------------

    def add_user(
        self,
        user_id: int,
        first_name: str = "Test",
        *,
        last_name: str | None = None,
        username: str | None = None,
        language_code: str | None = "en",
    ) -> dict[str, Any]:
        with self._lock:
            user = {"id": user_id, "is_bot": False, "first_name": first_name}
            if last_name:
                user["last_name"] = last_name
            if username:
                user["username"] = username
            if language_code:
                user["language_code"] = language_code
            self._users[user_id] = user
            chat = self._chats.get(user_id)
            if chat is not None and chat["type"] == "private":
                self._chats[user_id] = self._private_chat(user)
            return copy.deepcopy(user)

    def add_chat(
        self,
        chat_id: int,
        type: str = "supergroup",
        *,
        title: str = "Test group",
        username: str | None = None,
        is_forum: bool = False,
        topics: Iterable[int] = (),
    ) -> dict[str, Any]:
        """A group, supergroup or channel the bot is in (private chats appear by themselves when a
        user writes)."""
        with self._lock:
            chat: dict[str, Any] = {"id": chat_id, "title": title, "type": type}
            if username:
                chat["username"] = username
            if is_forum:
                chat["is_forum"] = True
            self._chats[chat_id] = chat
            self._topics[chat_id] = set(topics)
            return copy.deepcopy(chat)

    def add_topic(self, chat_id: int, message_thread_id: int) -> None:
        with self._lock:
            self._topics.setdefault(chat_id, set()).add(message_thread_id)

    def send_text(
        self,
        user_id: int,
        text: str,
        chat_id: int | None = None,
        first_name: str = "Test",
        *,
        username: str | None = None,
        message_thread_id: int | None = None,
        reply_to_message_id: int | None = None,
    ) -> dict[str, Any]:
        """A user writes `text` (in their private chat with the bot unless chat_id is given);
        returns the Message as the update carries it."""
        text, ents = format_text(text, "", "", {})
        if not text:
            raise ValueError("Telegram clients cannot send an empty message")
        content: dict[str, Any] = {"text": text}
        if ents:
            content["entities"] = ents
        return self._user_message(
            user_id, chat_id, first_name, username, content, message_thread_id, reply_to_message_id
        )

    def send_photo(
        self,
        user_id: int,
        data: bytes,
        caption: str = "",
        chat_id: int | None = None,
        first_name: str = "Test",
        *,
        username: str | None = None,
        message_thread_id: int | None = None,
    ) -> dict[str, Any]:
        """A user sends a photo; its sizes are stored and can be fetched with getFile."""
        with self._lock:
            sizes = self._store_photo(data)
        content: dict[str, Any] = {"photo": sizes}
        self._add_caption(content, caption, "", "")
        return self._user_message(
            user_id, chat_id, first_name, username, content, message_thread_id, None
        )

    def send_document(
        self,
        user_id: int,
        data: bytes,
        file_name: str,
        mime_type: str | None = None,
        caption: str = "",
        chat_id: int | None = None,
        first_name: str = "Test",
        *,
        username: str | None = None,
        message_thread_id: int | None = None,
    ) -> dict[str, Any]:
        """A user sends a file as a document."""
        with self._lock:
            document = self._store_document(data, file_name, mime_type)
        content: dict[str, Any] = {"document": document}
        self._add_caption(content, caption, "", "")
        return self._user_message(
            user_id, chat_id, first_name, username, content, message_thread_id, None
        )

    def tap(
        self,
        user_id: int,
        message_id: int,
        callback_data: str,
        chat_id: int | None = None,
        first_name: str = "Test",
        *,
        strict: bool = True,
    ) -> str:
        """A user presses the inline button carrying `callback_data` on the bot's message; returns
        the callback query id. With strict (the default) the button must exist on the message's
        current keyboard, as it must for a real client."""
        chat_id = user_id if chat_id is None else chat_id
        with self._lock:
            user = self._ensure_user(user_id, first_name, None)
            stored = self._messages.get((chat_id, message_id))
            if stored is None or stored.deleted:
                raise ValueError(f"no message {message_id} in chat {chat_id}")
            if strict:
                rows = (stored.message.get("reply_markup") or {}).get("inline_keyboard", [])
                datas = [b.get("callback_data") for row in rows for b in row]
                if callback_data not in datas:
                    raise ValueError(
                        f"message {message_id} has no button with callback_data "
                        f"{callback_data!r} (it has {datas})"
                    )
            query_id = str(next(self._callback_counter))
            query = {
                "id": query_id,
                "from": copy.deepcopy(user),
                "message": copy.deepcopy(stored.message),
                "chat_instance": str(
                    (chat_id * 6364136223846793005 + 1442695040888963407) % (1 << 63)
                ),
                "data": callback_data,
            }
            self._callbacks[query_id] = {"answered": False, "answer": None}
            self._add_update("callback_query", query)
        return query_id

    def fail_next(
        self,
        method: str,
        *,
        error_code: int = 429,
        description: str | None = None,
        retry_after: int | None = None,
        count: int = 1,
    ) -> None:
        """Make the next `count` calls of `method` fail, e.g. flood control:
        fail_next("editMessageText", error_code=429, retry_after=2)."""
        if error_code == 429 and retry_after is None:
            retry_after = 1
        if description is None:
            description = (
                f"Too Many Requests: retry after {retry_after}"
                if error_code == 429
                else "Internal Server Error"
            )
        with self._lock:
            self._failures.setdefault(method.lower(), []).append(
                _Failure(error_code, description, retry_after, count)
            )

    # --- test controls: what the bot did ---------------------------------------------------

    @property
    def log(self) -> list[dict[str, Any]]:
        """Every request: {"t": time.monotonic() at arrival, "method", "params", "status",
        "token"}. Params are the strings the server received; uploaded files appear as
        {"file_name", "mime_type", "size"}. "status" is None while a request is unanswered and
        stays None when the connection went away first (a cancelled long poll)."""
        with self._lock:
            return copy.deepcopy(self._log)

    def calls(self, method: str) -> list[dict[str, Any]]:
        method = method.lower()
        return [rec for rec in self.log if rec["method"].lower() == method]

    def sent(self, chat_id: int) -> list[dict[str, Any]]:
        """The messages the bot sent to chat_id (not deleted), oldest first, as they are now: text
        after edits, reply_markup, edit_date."""
        with self._lock:
            return [
                copy.deepcopy(s.message)
                for (cid, _), s in sorted(self._messages.items())
                if cid == chat_id and s.from_bot and not s.deleted
            ]

    def message(self, chat_id: int, message_id: int) -> dict[str, Any] | None:
        with self._lock:
            stored = self._messages.get((chat_id, message_id))
            return copy.deepcopy(stored.message) if stored else None

    def edits(self, chat_id: int) -> list[dict[str, Any]]:
        """editMessageText calls on chat_id: {"t", "message_id", "text", "parse_mode", "ok",
        "error"} (failed calls included, with their description in "error")."""
        with self._lock:
            return [copy.deepcopy(e) for e in self._edits if e["chat_id"] == chat_id]

    def callback_answer(self, query_id: str) -> dict[str, Any] | None:
        """What answerCallbackQuery said for that query (None if not answered)."""
        with self._lock:
            info = self._callbacks.get(query_id)
            return copy.deepcopy(info["answer"]) if info else None

    def commands(self, scope: dict[str, Any] | None = None, language_code: str = "") -> list:
        with self._lock:
            key = (_scope_key(scope), language_code)
            return copy.deepcopy(self._commands.get(key, []))

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Updates not yet confirmed by an offset."""
        with self._lock:
            return copy.deepcopy(self._queue)

    def wait_for(
        self, predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.01
    ) -> Any:
        """Poll predicate() from sync code until it is truthy; returns its value. From a coroutine
        use `await async_wait_for(...)` (blocking there would stall the client's event loop)."""
        if _loop_running():
            raise RuntimeError("wait_for blocks: use `await fake.async_wait_for(...)` here")
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            time.sleep(interval)

    async def async_wait_for(
        self, predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.01
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met within {timeout} s")
            await asyncio.sleep(interval)

    # --- internals: state (call with _lock held) --------------------------------------------

    def _private_chat(self, user: dict[str, Any]) -> dict[str, Any]:
        chat = {"id": user["id"], "first_name": user["first_name"]}
        if user.get("last_name"):
            chat["last_name"] = user["last_name"]
        if user.get("username"):
            chat["username"] = user["username"]
        chat["type"] = "private"
        return chat

    def _ensure_user(self, user_id: int, first_name: str, username: str | None) -> dict:
        user = self._users.get(user_id)
        if user is None:
            user = {"id": user_id, "is_bot": False, "first_name": first_name}
            if username:
                user["username"] = username
            user["language_code"] = "en"
            self._users[user_id] = user
        if user_id not in self._chats:
            self._chats[user_id] = self._private_chat(user)
        return user

    def _chat_for(self, chat_id: int) -> dict[str, Any]:
        chat = self._chats.get(chat_id)
        if chat is None:
            kind = "supergroup" if str(chat_id).startswith("-100") else "group"
            chat = {"id": chat_id, "title": "Test group", "type": kind}
            self._chats[chat_id] = chat
            self._topics.setdefault(chat_id, set())
        return chat

    def _new_message_id(self, chat_id: int) -> int:
        value = self._next_message_id.get(chat_id, 1)
        self._next_message_id[chat_id] = value + 1
        return value

    def _user_message(
        self,
        user_id: int,
        chat_id: int | None,
        first_name: str,
        username: str | None,
        content: dict[str, Any],
        thread_id: int | None,
        reply_to: int | None,
    ) -> dict[str, Any]:
        with self._lock:
            user = self._ensure_user(user_id, first_name, username)
            chat_id = user_id if chat_id is None else chat_id
            chat = self._chat_for(chat_id)
            message: dict[str, Any] = {
                "message_id": self._new_message_id(chat_id),
                "from": copy.deepcopy(user),
                "chat": copy.deepcopy(chat),
                "date": int(time.time()),
            }
            if thread_id and chat.get("is_forum"):
                self._topics.setdefault(chat_id, set()).add(thread_id)
                message["message_thread_id"] = thread_id
            if reply_to is not None:
                replied = self._messages.get((chat_id, reply_to))
                if replied is None:
                    raise ValueError(f"no message {reply_to} in chat {chat_id} to reply to")
                message["reply_to_message"] = self._without_reply(replied.message)
            message.update(content)
            if thread_id and chat.get("is_forum"):
                message["is_topic_message"] = True
            self._messages[(chat_id, message["message_id"])] = _Stored(message, from_bot=False)
            self._add_update("message", message)
            return copy.deepcopy(message)

    @staticmethod
    def _without_reply(message: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(message)
        out.pop("reply_to_message", None)
        return out

    def _add_update(self, kind: str, payload: dict[str, Any]) -> None:
        allowed = self._allowed
        if (allowed is None and kind in NOT_BY_DEFAULT) or (
            allowed is not None and kind not in allowed
        ):
            return
        update = {"update_id": self._next_update_id, kind: copy.deepcopy(payload)}
        self._next_update_id += 1
        self._queue.append(update)
        if self.loop is not None and not self.loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._wake, "update")

    def _wake(self, reason: str) -> None:
        """On the server loop: end the waiting long poll (if any)."""
        fut = self._long_poll
        if fut is not None and not fut.done():
            fut.set_result(reason)

    def _new_file_ids(self, kind: str) -> tuple[str, str]:
        n = next(self._file_counter)
        prefix = {"photo": "AgACAgIAAxkBAAI", "document": "BQACAgIAAxkBAAI"}[kind]
        return f"{prefix}{n:06d}fake{self.port}", f"AQAD{n:06d}fk"

    def _store_file(self, kind: str, data: bytes, extension: str) -> _File:
        file_id, unique = self._new_file_ids(kind)
        folder = "photos" if kind == "photo" else "documents"
        path = f"{folder}/file_{len(self._paths)}{extension}"
        stored = _File(file_id, unique, path, data)
        self._files[file_id] = stored
        self._paths[path] = file_id
        return stored

    def _store_photo(self, data: bytes) -> list[dict[str, Any]]:
        if not data:
            raise bad("File must be non-empty")
        width, height = _image_size(data) or (1280, 960)
        longest = max(width, height)
        sizes = []
        for box in (90, 320, 800, 1280, 2560):
            scale = min(1.0, box / longest)
            stored = self._store_file("photo", data, ".jpg")
            sizes.append(
                {
                    "file_id": stored.file_id,
                    "file_unique_id": stored.file_unique_id,
                    "file_size": len(data),
                    "width": max(1, round(width * scale)),
                    "height": max(1, round(height * scale)),
                }
            )
            if box >= longest:
                break
        return sizes

    def _store_document(self, data: bytes, file_name: str, mime_type: str | None) -> dict[str, Any]:
        if not data:
            raise bad("File must be non-empty")
        if not mime_type or mime_type == "application/octet-stream":
            mime_type = mimetypes.guess_type(file_name)[0] or mime_type
        extension = ""
        if "." in file_name:
            extension = "." + file_name.rsplit(".", 1)[1][:10]
        stored = self._store_file("document", data, extension)
        document: dict[str, Any] = {}
        if file_name:
            document["file_name"] = file_name
        if mime_type:
            document["mime_type"] = mime_type
        document.update(
            {
                "file_id": stored.file_id,
                "file_unique_id": stored.file_unique_id,
                "file_size": len(data),
            }
        )
        return document

    def _add_caption(
        self, content: dict[str, Any], caption: str, parse_mode: str, entities: str
    ) -> None:
        if not caption:
            return
        text, ents = format_text(caption, parse_mode, entities, self._users)
        if len(text) > MAX_CAPTION:
            raise bad("Message caption is too long")
        if text:
            content["caption"] = text
            if ents:
                content["caption_entities"] = ents

    # --- internals: HTTP --------------------------------------------------------------------

    async def _read_params(self, request: web.Request) -> tuple[dict[str, str], dict[str, Upload]]:
        params: dict[str, str] = {}
        uploads: dict[str, Upload] = {}
        for key, value in request.query.items():
            params.setdefault(key, value)
        ctype = request.content_type
        if request.method not in ("POST", "PUT", "PATCH") or not request.can_read_body:
            return params, uploads
        if ctype == "application/json":
            # the server turns each top-level field into a string parameter (strings as they are,
            # anything else as JSON text); a body it cannot parse is ignored, as there
            raw = await request.read()
            with contextlib.suppress(ValueError):
                body = json.loads(raw) if raw.strip() else {}
                if isinstance(body, dict):
                    for key, value in body.items():
                        if value is not None:
                            text = value if isinstance(value, str) else json.dumps(value)
                            params.setdefault(key, text)
        elif ctype in ("application/x-www-form-urlencoded", "multipart/form-data"):
            form = await request.post()
            for key, value in form.items():
                if isinstance(value, web.FileField):
                    uploads[key] = Upload(
                        key, value.filename, value.content_type, value.file.read()
                    )
                else:
                    params.setdefault(key, str(value))
        return params, uploads

    def _check_token(self, token: str) -> None:
        user_part = token.split(":", 1)[0]
        if (
            not token
            or token[0] == "0"
            or len(token) > 80
            or "/" in token
            or ":" not in token
            or not user_part.isdigit()
            or not 0 < int(user_part) < (1 << 54)
        ):
            raise ApiError(401, "Unauthorized: invalid token specified")
        if token not in self.valid_tokens:
            raise ApiError(401, "Unauthorized")

    async def _handle_method(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        token = request.match_info["token"]
        method_raw = request.match_info["method"]
        method = method_raw.lower()
        record: dict[str, Any] = {
            "t": started,
            "method": _CANONICAL.get(method, method_raw),
            "params": {},
            "status": None,
            "token": token,
        }
        with self._lock:
            self._log.append(record)
        try:
            params, uploads = await self._read_params(request)
            with self._lock:
                record["params"] = dict(params)
                for key, up in uploads.items():
                    record["params"][key] = {
                        "file_name": up.file_name,
                        "mime_type": up.content_type,
                        "size": len(up.data),
                    }
            self._check_token(token)  # before anything else, like the real server
            handler = _HANDLERS.get(method)
            if handler is None and method != "getupdates":
                raise ApiError(404, "Not Found: method not found")
            self._injected_failure(method)
            if handler is None:
                body = await self._get_updates(params)
            else:
                with self._lock:
                    body = handler(self, params, uploads)
            status = 200
        except ApiError as err:
            status, body = err.code, err.body()
        with self._lock:
            record["status"] = status
        headers = {}
        retry = (body.get("parameters") or {}).get("retry_after")
        if status == 429 and retry:
            headers["Retry-After"] = str(retry)
        return web.json_response(body, status=status, headers=headers, dumps=_dumps)

    def _injected_failure(self, method: str) -> None:
        with self._lock:
            queue = self._failures.get(method)
            if not queue:
                return
            failure = queue[0]
            failure.left -= 1
            if failure.left <= 0:
                queue.pop(0)
        parameters = {"retry_after": failure.retry_after} if failure.retry_after else None
        raise ApiError(failure.code, failure.description, parameters)

    async def _handle_file(self, request: web.Request) -> web.StreamResponse:
        token = request.match_info["token"]
        path = request.match_info["path"]
        record = {
            "t": time.monotonic(),
            "method": "file",
            "params": {"file_path": path},
            "status": None,
            "token": token,
        }
        with self._lock:
            self._log.append(record)
        try:
            self._check_token(token)
        except ApiError as err:
            with self._lock:
                record["status"] = err.code
            return web.json_response(err.body(), status=err.code)
        with self._lock:
            file_id = self._paths.get(path)
            data = self._files[file_id].data if file_id else None
            record["status"] = 200 if data is not None else 404
        if data is None:
            return web.json_response(
                {"ok": False, "error_code": 404, "description": "Not Found"}, status=404
            )
        return web.Response(body=data, content_type="application/octet-stream")

    async def _handle_other(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(
            {"ok": False, "error_code": 404, "description": "Not Found"}, status=404
        )

    # --- internals: getUpdates --------------------------------------------------------------

    def _take_updates(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Forget confirmed updates and return those from offset on (with the effective offset
        to use when the poll is woken up)."""
        with self._lock:
            if offset < 0:
                keep = -offset
                if len(self._queue) > keep:
                    del self._queue[: len(self._queue) - keep]
            head = self._queue[0]["update_id"] if self._queue else self._next_update_id
            if offset <= 0:
                offset = head
            if offset > self._next_update_id + 10:
                # the server refuses an offset "in the future" and reads from the head
                return copy.deepcopy(self._queue[:limit]), offset
            self._queue = [u for u in self._queue if u["update_id"] >= offset]
            return copy.deepcopy(self._queue[:limit]), offset

    async def _get_updates(self, params: dict[str, str]) -> dict[str, Any]:
        if self._webhook_url:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active; use "
                "deleteWebhook to delete the webhook first",
            )
        offset = to_int(params.get("offset", ""))
        limit = max(1, min(100, to_int(params["limit"]))) if params.get("limit") else 100
        timeout = max(0, min(LONG_POLL_MAX_TIMEOUT, to_int(params.get("timeout", ""))))
        allowed = _allowed_updates(params.get("allowed_updates", ""))
        if allowed is not None:
            with self._lock:
                self._allowed = allowed or None
        now = time.monotonic()
        if self.anti_spam:
            last_offset, last_time = self._last_poll
            if offset == last_offset and timeout < 3 and now < last_time + 3.0:
                timeout = 3
            if offset == last_offset and now < last_time + 0.5:
                limit = 1
        self._last_poll = (offset, now)

        updates, offset = self._take_updates(offset, limit)
        if updates or timeout == 0 or self._closing:
            return {"ok": True, "result": updates}
        # only one long poll at a time: a new one ends the previous with 409
        self._wake("conflict")
        assert self.loop is not None
        fut: asyncio.Future[str] = self.loop.create_future()
        self._long_poll = fut
        deadline = now + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return {"ok": True, "result": []}
                try:
                    reason = await asyncio.wait_for(asyncio.shield(fut), remaining)
                except TimeoutError:
                    return {"ok": True, "result": self._take_updates(offset, limit)[0]}
                if reason == "conflict":
                    raise ApiError(
                        409,
                        "Conflict: terminated by other getUpdates request; make sure that only "
                        "one bot instance is running",
                    )
                if reason == "webhook":
                    raise ApiError(409, "Conflict: terminated by setWebhook request")
                updates, offset = self._take_updates(offset, limit)
                if updates or reason == "closing":
                    return {"ok": True, "result": updates}
                fut = self.loop.create_future()
                self._long_poll = fut
        finally:
            if self._long_poll is fut:
                self._long_poll = None

    # --- internals: methods (run with _lock held) ---------------------------------------------

    def _resolve_chat(self, params: dict[str, str]) -> dict[str, Any]:
        raw = params.get("chat_id", "")
        if not raw:
            raise bad("chat_id is empty")
        if raw.startswith("@"):
            for chat in self._chats.values():
                if chat.get("username", "").lower() == raw[1:].lower():
                    return chat
            raise bad("chat not found")
        chat = self._chats.get(to_int(raw))
        if chat is None:
            raise bad("chat not found")
        return chat

    def _thread_id(self, chat: dict[str, Any], params: dict[str, str]) -> int:
        thread = to_int(params.get("message_thread_id", ""))
        if thread <= 0:
            return 0
        if chat["type"] == "private" or chat.get("is_forum"):
            if thread == 1 and chat.get("is_forum"):
                raise bad("message thread not found")
            if thread not in self._topics.get(chat["id"], set()):
                raise bad("message thread not found")
            return thread
        return 0

    def _reply_target(self, chat: dict[str, Any], params: dict[str, str]) -> dict | None:
        reply_id = 0
        allow_without = to_bool(params.get("allow_sending_without_reply", ""))
        reply_chat = chat
        if params.get("reply_parameters"):
            value = json_arg(params["reply_parameters"])
            if not isinstance(value, dict):
                raise bad("Object expected as reply parameters")
            reply_id = value.get("message_id") if isinstance(value.get("message_id"), int) else 0
            allow_without = bool(value.get("allow_sending_without_reply", allow_without))
            if "chat_id" in value and str(value["chat_id"]) != str(chat["id"]):
                reply_chat = self._resolve_chat({"chat_id": str(value["chat_id"])})
        elif params.get("reply_to_message_id"):
            reply_id = to_int(params["reply_to_message_id"])
        if reply_id <= 0:
            return None
        stored = self._messages.get((reply_chat["id"], reply_id))
        if stored is None or stored.deleted:
            if allow_without:
                return None
            raise bad("message to be replied not found")
        return self._without_reply(stored.message)

    def _reply_markup(self, params: dict[str, str]) -> dict[str, Any] | None:
        """Parse reply_markup; returns the inline keyboard as Message.reply_markup shows it (other
        keyboards are accepted but never echoed)."""
        raw = params.get("reply_markup", "")
        if not raw:
            return None
        value = json_arg(raw)
        if value is None and raw.strip() != "null":
            raise bad("Can't parse reply keyboard markup JSON object")
        if not isinstance(value, dict):
            raise bad("Object expected as reply markup")
        rows = value.get("inline_keyboard")
        if rows is None:
            return None
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise bad(
                'Field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays'
            )
        out_rows = []
        for row in rows:
            out_row = []
            for button in row:
                out_row.append(_inline_button(button))
            out_rows.append(out_row)
        if not any(out_rows):
            return None
        return {"inline_keyboard": out_rows}

    def _destination(
        self, params: dict[str, str]
    ) -> tuple[dict[str, Any], int, dict[str, Any] | None, dict[str, Any] | None]:
        """Check what every send method checks, in the server's order: the keyboard, the chat,
        the topic, the message replied to. Returns (chat, thread id, reply_to, inline markup)."""
        markup = self._reply_markup(params)
        chat = self._resolve_chat(params)
        thread = self._thread_id(chat, params)
        reply_to = self._reply_target(chat, params)
        return chat, thread, reply_to, markup

    def _bot_message(
        self,
        params: dict[str, str],
        content: dict[str, Any],
        destination: tuple[dict[str, Any], int, dict[str, Any] | None, dict[str, Any] | None],
    ) -> dict[str, Any]:
        chat, thread, reply_to, markup = destination
        message: dict[str, Any] = {
            "message_id": 0,
            "from": copy.deepcopy(self.bot_user),
            "chat": copy.deepcopy(chat),
            "date": int(time.time()),
        }
        if thread:
            message["message_thread_id"] = thread
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        if "text" in content and to_bool(params.get("disable_web_page_preview", "")):
            content = {**content, "link_preview_options": {"is_disabled": True}}
        elif "text" in content and params.get("link_preview_options"):
            options = json_arg(params["link_preview_options"])
            if not isinstance(options, dict):
                raise bad("Object expected as link preview options")
            if options:
                content = {**content, "link_preview_options": options}
        message.update(content)
        if markup is not None:
            message["reply_markup"] = markup
        if to_bool(params.get("protect_content", "")):
            message["has_protected_content"] = True
        if thread and chat.get("is_forum"):
            message["is_topic_message"] = True
        message["message_id"] = self._new_message_id(chat["id"])
        self._messages[(chat["id"], message["message_id"])] = _Stored(message, from_bot=True)
        return copy.deepcopy(message)

    def _text_content(self, params: dict[str, str]) -> tuple[str, list]:
        raw = params.get("text", "")
        if not raw:
            raise bad("Message text is empty")
        return format_text(
            raw, params.get("parse_mode", ""), params.get("entities", ""), self._users
        )

    @staticmethod
    def _check_length(text: str) -> None:
        if not text:
            raise bad("Text must be non-empty")
        if len(text) > MAX_TEXT:
            raise bad("Message is too long")

    def m_get_me(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        me = dict(self.bot_user)
        me.update(
            {
                "can_join_groups": True,
                "can_read_all_group_messages": False,
                "supports_inline_queries": False,
                "can_connect_to_business": False,
                "has_main_web_app": False,
            }
        )
        return {"ok": True, "result": me}

    def m_send_message(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        text, ents = self._text_content(params)
        destination = self._destination(params)
        self._check_length(text)
        content: dict[str, Any] = {"text": text}
        if ents:
            content["entities"] = ents
        return {"ok": True, "result": self._bot_message(params, content, destination)}

    def _target(self, params: dict[str, str], kind: str) -> tuple[dict, _Stored]:
        if not params.get("chat_id") and not params.get("message_id"):
            if not params.get("inline_message_id"):
                raise bad("Message identifier is not specified")
            raise bad("message not found")  # inline messages are not modelled
        chat = self._resolve_chat(params)
        message_id = to_int(params.get("message_id", ""))
        stored = self._messages.get((chat["id"], message_id)) if message_id > 0 else None
        if stored is None or stored.deleted:
            raise bad(f"{kind} not found")
        return chat, stored

    def m_edit_message_text(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        record = {
            "t": time.monotonic(),
            "chat_id": to_int(params.get("chat_id", "")),
            "message_id": to_int(params.get("message_id", "")),
            "text": params.get("text", ""),
            "parse_mode": params.get("parse_mode") or None,
            "ok": False,
            "error": None,
        }
        self._edits.append(record)
        try:
            text, ents = self._text_content(params)
            markup = self._reply_markup(params)
            chat, stored = self._target(params, "message to edit")
            record["chat_id"] = chat["id"]
            message = stored.message
            if not stored.from_bot:
                raise bad("Message can't be edited")
            if "text" not in message:
                raise bad("There is no text in the message to edit")
            self._check_length(text)
            if (
                message.get("text") == text
                and message.get("entities", []) == ents
                and message.get("reply_markup") == markup
            ):
                raise ApiError(400, NOT_MODIFIED)
            message["text"] = text
            if ents:
                message["entities"] = ents
            else:
                message.pop("entities", None)
            if markup is None:
                message.pop("reply_markup", None)
            else:
                message["reply_markup"] = markup
            message["edit_date"] = int(time.time())
        except ApiError as err:
            record["error"] = err.description
            raise
        record["ok"] = True
        return {"ok": True, "result": copy.deepcopy(message)}

    def m_edit_message_reply_markup(
        self, params: dict[str, str], uploads: dict[str, Upload]
    ) -> dict:
        markup = self._reply_markup(params)
        _, stored = self._target(params, "message to edit")
        message = stored.message
        if not stored.from_bot:
            raise bad("Message can't be edited")
        if message.get("reply_markup") == markup:
            raise ApiError(400, NOT_MODIFIED)
        if markup is None:
            message.pop("reply_markup", None)
        else:
            message["reply_markup"] = markup
        message["edit_date"] = int(time.time())
        return {"ok": True, "result": copy.deepcopy(message)}

    def m_delete_message(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        if not params.get("chat_id"):
            raise bad("Chat identifier is not specified")
        if to_int(params.get("message_id", "")) <= 0:
            raise bad("Message identifier is not specified")
        _, stored = self._target(params, "message to delete")
        stored.deleted = True
        return {"ok": True, "result": True}

    def m_answer_callback_query(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        query_id = params.get("callback_query_id", "")
        info = self._callbacks.get(query_id)
        if info is None or info["answered"]:
            raise ApiError(400, QUERY_TOO_OLD)
        info["answered"] = True
        info["answer"] = {
            "t": time.monotonic(),
            "text": params.get("text", ""),
            "show_alert": to_bool(params.get("show_alert", "")),
            "url": params.get("url", ""),
        }
        return {"ok": True, "result": True}

    def m_send_chat_action(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        if params.get("action", "").lower() not in CHAT_ACTIONS:
            raise bad("Wrong parameter action in request")
        chat = self._resolve_chat(params)
        self._thread_id(chat, params)
        return {"ok": True, "result": True}

    def m_set_my_commands(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        commands = _parse_commands(params.get("commands", ""))
        self._commands[_commands_key(params)] = commands
        return {"ok": True, "result": True}

    def m_get_my_commands(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        return {"ok": True, "result": copy.deepcopy(self._commands.get(_commands_key(params), []))}

    def m_delete_my_commands(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        self._commands.pop(_commands_key(params), None)
        return {"ok": True, "result": True}

    def m_delete_webhook(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        drop = to_bool(params.get("drop_pending_updates", ""))
        was_set = bool(self._webhook_url)
        self._webhook_url = ""
        if drop:
            self._queue.clear()
        if not was_set and not drop:
            return {"ok": True, "result": True, "description": "Webhook is already deleted"}
        return {"ok": True, "result": True, "description": "Webhook was deleted"}

    def m_set_webhook(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        url = params.get("url", "")
        if to_bool(params.get("drop_pending_updates", "")):
            self._queue.clear()
        self._webhook_url = url
        if url:
            if self.loop is not None:
                self.loop.call_soon(self._wake, "webhook")
            return {"ok": True, "result": True, "description": "Webhook was set"}
        return {"ok": True, "result": True, "description": "Webhook was deleted"}

    def m_get_webhook_info(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        info: dict[str, Any] = {
            "url": self._webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": len(self._queue),
        }
        return {"ok": True, "result": info}

    def m_get_file(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        file_id = params.get("file_id", "")
        if not file_id:
            raise bad("file_id not specified")
        stored = self._files.get(file_id)
        if stored is None:
            raise bad("invalid file_id")
        if len(stored.data) > MAX_DOWNLOAD:
            raise bad("file is too big")
        result = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(stored.data),
            "file_path": stored.file_path,
        }
        return {"ok": True, "result": result}

    def _input_file(
        self, field_name: str, params: dict[str, str], uploads: dict[str, Upload]
    ) -> Upload | _File | None:
        value = params.get(field_name, "")
        if value.startswith("attach://"):
            return uploads.get(value[len("attach://") :])
        if value:
            stored = self._files.get(value)
            if stored is None:
                raise bad("wrong file identifier/HTTP URL specified")
            return stored
        return uploads.get(field_name)

    def m_send_document(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        source = self._input_file("document", params, uploads)
        if source is None:
            raise bad("There is no document in the request")
        content: dict[str, Any] = {}
        self._add_caption(
            content,
            params.get("caption", ""),
            params.get("parse_mode", ""),
            params.get("caption_entities", ""),
        )
        destination = self._destination(params)
        if isinstance(source, Upload):
            document = self._store_document(source.data, source.file_name, source.content_type)
        else:
            document = {
                "file_id": source.file_id,
                "file_unique_id": source.file_unique_id,
                "file_size": len(source.data),
            }
        message_content = {"document": document, **content}
        return {"ok": True, "result": self._bot_message(params, message_content, destination)}

    def m_send_photo(self, params: dict[str, str], uploads: dict[str, Upload]) -> dict:
        source = self._input_file("photo", params, uploads)
        if source is None:
            raise bad("There is no photo in the request")
        content: dict[str, Any] = {}
        self._add_caption(
            content,
            params.get("caption", ""),
            params.get("parse_mode", ""),
            params.get("caption_entities", ""),
        )
        destination = self._destination(params)
        sizes = self._store_photo(source.data)
        message_content = {"photo": sizes, **content}
        return {"ok": True, "result": self._bot_message(params, message_content, destination)}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _commands_key(params: dict[str, str]) -> tuple[str, str]:
    return _scope_key(json_arg(params.get("scope", ""))), params.get("language_code", "")


def _scope_key(scope: Any) -> str:
    if not isinstance(scope, dict) or scope.get("type") in (None, "default"):
        return "default"
    return json.dumps(scope, sort_keys=True)


def _allowed_updates(raw: str) -> set[str] | None:
    """None: keep the previous setting; an empty set: the default set."""
    if not raw:
        return None
    value = json_arg(raw)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return {v.lower() for v in value}


def _inline_button(button: Any) -> dict[str, Any]:
    def fail(message: str) -> ApiError:
        return bad(f"Can't parse inline keyboard button: {message}")

    if not isinstance(button, dict):
        raise fail("InlineKeyboardButton must be an Object")
    text = button.get("text")
    if not isinstance(text, str):
        raise fail('Field "text" must be of type String')
    out: dict[str, Any] = {"text": text}
    for key in ("icon_custom_emoji_id", "style"):
        if key in button:
            out[key] = button[key]
    if button.get("url"):
        out["url"] = button["url"]
        return out
    data = button.get("callback_data")
    if data:
        if not isinstance(data, str):
            raise fail('Field "callback_data" must be of type String')
        if len(data.encode()) > 64:
            raise bad("BUTTON_DATA_INVALID")
        out["callback_data"] = data
        return out
    for key in (
        "callback_game",
        "pay",
        "switch_inline_query",
        "switch_inline_query_chosen_chat",
        "switch_inline_query_current_chat",
        "login_url",
        "web_app",
        "copy_text",
    ):
        if key in button:
            out[key] = copy.deepcopy(button[key])
            return out
    raise fail("Text buttons are unallowed in the inline keyboard")


def _parse_commands(raw: str) -> list[dict[str, str]]:
    if not raw:
        return []
    value = json_arg(raw)
    if value is None:
        raise bad("Can't parse commands JSON object")
    if not isinstance(value, list):
        raise bad("Expected an Array of BotCommand")
    commands = []
    for item in value:
        if not isinstance(item, dict):
            raise bad("Can't parse BotCommand: expected an Object")
        command, description = item.get("command"), item.get("description")
        if not isinstance(command, str):
            raise bad('Can\'t parse BotCommand: Field "command" must be of type String')
        if not isinstance(description, str):
            raise bad('Can\'t parse BotCommand: Field "description" must be of type String')
        command = command.strip().removeprefix("/")
        description = description.strip()
        if not command:
            raise bad("Command must be non-empty")
        if len(command) > 32:
            raise bad("Command length must not exceed 32")
        if not description:
            raise bad("Command description must be non-empty")
        if len(description) > 256:
            raise bad("Command description length must not exceed 256")
        if not re.fullmatch(r"[a-z0-9_]+", command):
            raise bad("BOT_COMMAND_INVALID")
        commands.append({"command": command, "description": description})
    return commands


_HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {
    "getme": FakeTelegram.m_get_me,  # getUpdates is handled apart: it is asynchronous
    "deletewebhook": FakeTelegram.m_delete_webhook,
    "setwebhook": FakeTelegram.m_set_webhook,
    "getwebhookinfo": FakeTelegram.m_get_webhook_info,
    "sendmessage": FakeTelegram.m_send_message,
    "editmessagetext": FakeTelegram.m_edit_message_text,
    "editmessagereplymarkup": FakeTelegram.m_edit_message_reply_markup,
    "deletemessage": FakeTelegram.m_delete_message,
    "answercallbackquery": FakeTelegram.m_answer_callback_query,
    "sendchataction": FakeTelegram.m_send_chat_action,
    "setmycommands": FakeTelegram.m_set_my_commands,
    "getmycommands": FakeTelegram.m_get_my_commands,
    "deletemycommands": FakeTelegram.m_delete_my_commands,
    "getfile": FakeTelegram.m_get_file,
    "senddocument": FakeTelegram.m_send_document,
    "sendphoto": FakeTelegram.m_send_photo,
}

_CANONICAL = {
    name.lower(): name
    for name in (
        "getMe", "getUpdates", "deleteWebhook", "setWebhook", "getWebhookInfo", "sendMessage",
        "editMessageText", "editMessageReplyMarkup", "deleteMessage", "answerCallbackQuery",
        "sendChatAction", "setMyCommands", "getMyCommands", "deleteMyCommands", "getFile",
        "sendDocument", "sendPhoto",
    )
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8081)
    parser.add_argument("--token", action="append", default=None)
    args = parser.parse_args()
    fake = FakeTelegram(args.token, port=args.port).start()
    print(f"fake Telegram Bot API on {fake.api_base} (token {fake.token})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
