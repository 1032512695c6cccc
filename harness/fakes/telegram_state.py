"""The fake Bot API's state: chats, users, messages, the update queue and stored files (every
method here runs with the server's lock held)."""

from __future__ import annotations

import contextlib
import copy
import mimetypes
import time
from typing import Any

from harness.fakes.telegram_entities import bad
from harness.fakes.telegram_protocol import MAX_CAPTION, NOT_BY_DEFAULT, _File, _image_size, _Stored
from harness.fakes.telegram_text import format_text


class State:
    """Part of FakeTelegram (telegram_api.py)."""

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
