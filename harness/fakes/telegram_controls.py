"""What a test does with the fake Bot API: users who write, send files and tap buttons, and
what the bot did (calls, messages sent and edited, answers), thread-safe."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Iterable
from typing import Any

from harness.fakes.telegram_protocol import _Failure, _loop_running, _scope_key
from harness.fakes.telegram_text import format_text


class Controls:
    """Part of FakeTelegram (telegram_api.py)."""

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
        fail_next("editMessageText", error_code=429, retry_after=2). `method` "file" is a file
        download (`/file/bot{token}/{path}`): fail_next("file", error_code=404,
        description="Not Found")."""
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

    def clear_failures(self, method: str | None = None) -> None:
        """The failures `fail_next` queued end now (for `method`, or for every method): the
        server answers as usual again."""
        with self._lock:
            if method is None:
                self._failures.clear()
            else:
                self._failures.pop(method.lower(), None)

    # --- test controls: what the bot did ---------------------------------------------------

    @property
    def log(self) -> list[dict[str, Any]]:
        """Every request: {"t": time.monotonic() at arrival, "method", "params", "status",
        "token"}. Params are the strings the server received; uploaded files appear as
        {"file_name", "mime_type", "size"}. "status" is None while a request is unanswered and
        stays None when the connection went away first (a cancelled long poll). A getUpdates
        answered 200 also has "update_ids" (the updates it handed out); a file download is
        method "file" with {"file_path"} as params."""
        with self._lock:
            return copy.deepcopy(self._log)

    def downloads(self) -> list[dict[str, Any]]:
        """Every file download request (`/file/bot{token}/{path}`), answered or not."""
        return self.calls("file")

    def handed_out(self, update_id: int) -> int:
        """How many getUpdates answers carried this update (more than one: redelivered)."""
        return sum(update_id in c.get("update_ids", []) for c in self.calls("getUpdates"))

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
