"""The fake Bot API's errors and message entities: an entity in code-point positions of the final
text, the server's sort order, UTF-16 offsets, and the links a `text_link` may carry."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any


class ApiError(Exception):
    """An error answer of the Bot API."""

    def __init__(
        self, code: int, description: str, parameters: dict[str, Any] | None = None
    ) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": False,
            "error_code": self.code,
            "description": self.description,
        }
        if self.parameters:
            out["parameters"] = self.parameters
        return out


def bad(message: str) -> ApiError:
    """A 400 the way the server words it: 'Bad Request: ' and the first letter lowered unless the
    message is an upper-case error code (BUTTON_DATA_INVALID)."""
    if len(message) >= 2 and (message[1] == "_" or message[1].isupper()):
        return ApiError(400, f"Bad Request: {message}")
    return ApiError(400, f"Bad Request: {message[:1].lower()}{message[1:]}")


def _cant_parse(message: str) -> ApiError:
    return ApiError(400, f"Bad Request: can't parse entities: {message}")


@dataclass
class Ent:
    """An entity in code-point positions [start, end) of the final text."""

    type: str
    start: int
    end: int
    extra: dict[str, Any] = field(default_factory=dict)


_PRIORITY = {
    "blockquote": 0,
    "expandable_blockquote": 0,
    "pre": 11,
    "code": 20,
    "text_link": 49,
    "text_mention": 49,
    "bold": 90,
    "italic": 91,
    "underline": 92,
    "strikethrough": 93,
    "spoiler": 94,
    "custom_emoji": 99,
}


def _sorted(ents: list[Ent]) -> list[Ent]:
    return sorted(ents, key=lambda e: (e.start, -(e.end - e.start), _PRIORITY.get(e.type, 50)))


def _utf16_positions(text: str) -> list[int]:
    """pos[i] = UTF-16 offset of code point i; pos[len] = UTF-16 length."""
    pos = [0] * (len(text) + 1)
    acc = 0
    for i, ch in enumerate(text):
        pos[i] = acc
        acc += 2 if ord(ch) > 0xFFFF else 1
    pos[len(text)] = acc
    return pos


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _byte_offset(src: str, index: int) -> int:
    return len(src[:index].encode("utf-8", "surrogatepass"))


def _checked_link(url: str) -> str:
    """Roughly what the server accepts as a text_link URL, normalised as it echoes it back."""
    url = url.strip()
    if not url:
        return ""
    if url.startswith("tg://"):
        return url
    if "://" not in url:
        url = "http://" + url
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https", "ftp", "tonsite") or not rest:
        return ""
    host, sep, path = rest.partition("/")
    if not host or " " in host:
        return ""
    return f"{scheme.lower()}://{host}/{path}" if sep or not path else url


def _user_link_id(url: str) -> int | None:
    m = re.fullmatch(r"tg://user\?id=(\d+)", url.strip())
    return int(m.group(1)) if m else None


def _link_entity(start: int, end: int, url: str, users: dict[int, dict]) -> Ent | None:
    user_id = _user_link_id(url)
    if user_id is not None:
        user = users.get(user_id, {"id": user_id, "is_bot": False, "first_name": ""})
        return Ent("text_mention", start, end, {"user": copy.deepcopy(user)})
    checked = _checked_link(url)
    return Ent("text_link", start, end, {"url": checked}) if checked else None


def _is_space(ch: str) -> bool:
    return ch in " \t\r\n\f\v"
