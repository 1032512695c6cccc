"""The fake Bot API's limits and fixed answers, how it reads a method's parameters (every one
arrives as a string), and the records it keeps of files and messages."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

from harness.fakes.telegram_entities import ApiError, bad

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


_CANONICAL = {
    name.lower(): name
    for name in (
        "getMe",
        "getUpdates",
        "deleteWebhook",
        "setWebhook",
        "getWebhookInfo",
        "sendMessage",
        "editMessageText",
        "editMessageReplyMarkup",
        "deleteMessage",
        "answerCallbackQuery",
        "sendChatAction",
        "setMyCommands",
        "getMyCommands",
        "deleteMyCommands",
        "getFile",
        "sendDocument",
        "sendPhoto",
    )
}
