"""The fake Bot API's methods as the server answers them (run with the server's lock held):
messages sent, edited and deleted, callback answers, commands, webhooks, files."""

from __future__ import annotations

import copy
import time
from typing import Any

from harness.fakes.telegram_entities import ApiError, bad
from harness.fakes.telegram_protocol import (
    CHAT_ACTIONS,
    MAX_TEXT,
    NOT_MODIFIED,
    QUERY_TOO_OLD,
    Upload,
    _commands_key,
    _inline_button,
    _parse_commands,
    _Stored,
    json_arg,
    to_bool,
    to_int,
)
from harness.fakes.telegram_text import format_text


class BotMethods:
    """Part of FakeTelegram (telegram_api.py)."""

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
