"""The fake Bot API's message text as the server builds it: explicit entities or a parse mode,
control characters cleaned, the text trimmed, automatic entities (commands, URLs, mentions)
added, and the entities as JSON with UTF-16 offsets."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from harness.fakes.telegram_entities import Ent, _checked_link, _sorted, _utf16_positions, bad
from harness.fakes.telegram_html import parse_html
from harness.fakes.telegram_markdown import parse_markdown, parse_markdown_v2

MAX_RAW_TEXT_BYTES = 1 << 15  # the Bot API server refuses longer raw text ("text is too long")

_EXPLICIT_TYPES = {
    "bold",
    "italic",
    "underline",
    "strikethrough",
    "spoiler",
    "code",
    "pre",
    "text_link",
    "text_mention",
    "custom_emoji",
    "blockquote",
    "expandable_blockquote",
}
_AUTO_TYPES = {
    "mention",
    "hashtag",
    "cashtag",
    "bot_command",
    "url",
    "email",
    "phone_number",
    "bank_card_number",
}


def entities_from_json(text: str, raw: str, users: dict[int, dict]) -> list[Ent]:
    """MessageEntity objects given instead of a parse_mode (offsets in UTF-16 code units)."""
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(value, list):
        return []
    pos = _utf16_positions(text)
    index_of = {u: k for k, u in enumerate(pos)}
    out: list[Ent] = []
    for item in value:
        if not isinstance(item, dict):
            raise bad("Can't parse MessageEntity: expected an Object")
        kind = item.get("type")
        offset, length = item.get("offset"), item.get("length")
        if not isinstance(offset, int) or not isinstance(length, int):
            raise bad('Can\'t parse MessageEntity: Field "offset" must be a valid Number')
        if kind in _AUTO_TYPES:
            continue
        if kind not in _EXPLICIT_TYPES:
            raise bad("Can't parse MessageEntity: Unsupported type specified")
        end_u16 = min(offset + length, pos[-1])
        if offset < 0 or length <= 0 or offset >= pos[-1]:
            continue
        start = index_of.get(offset)
        end = index_of.get(end_u16)
        if start is None or end is None:
            continue
        extra: dict[str, Any] = {}
        if kind == "text_link":
            url = _checked_link(str(item.get("url", "")))
            if not url:
                raise bad('Can\'t parse MessageEntity: Field "url" must be of type String')
            extra["url"] = url
        elif kind == "pre" and item.get("language"):
            extra["language"] = str(item["language"])
        elif kind == "custom_emoji":
            extra["custom_emoji_id"] = str(item.get("custom_emoji_id", ""))
        elif kind == "text_mention":
            user = item.get("user") or {}
            uid = user.get("id") if isinstance(user, dict) else None
            if not isinstance(uid, int):
                raise bad('Can\'t parse MessageEntity: Field "user" must be of type Object')
            extra["user"] = copy.deepcopy(
                users.get(uid, {"id": uid, "is_bot": False, "first_name": ""})
            )
        out.append(Ent(kind, start, end, extra))
    return out


def _clean(text: str, ents: list[Ent]) -> tuple[str, list[Ent]]:
    """Replace control characters with spaces, drop '\\r' and a few invisible marks, then trim
    leading/trailing spaces and newlines (leading ones only before the first entity) - what the
    server does to every message text and caption."""
    kept: list[str] = []
    new_index = [0] * (len(text) + 1)
    for k, ch in enumerate(text):
        new_index[k] = len(kept)
        code = ord(ch)
        if ch == "\r" or 0x2028 <= code <= 0x202E or code in (0x0333, 0x033F, 0x030A):
            continue
        kept.append(" " if (code < 32 and ch != "\n") else ch)
    new_index[len(text)] = len(kept)
    moved = [
        Ent(e.type, new_index[e.start], new_index[e.end], e.extra)
        for e in ents
        if new_index[e.end] > new_index[e.start]
    ]
    last = len(kept)
    while last > 0 and kept[last - 1] in (" ", "\n"):
        last -= 1
    if last == 0:
        return "", []
    trimmed: list[Ent] = []
    for e in moved:
        if e.start >= last:
            continue
        trimmed.append(Ent(e.type, e.start, min(e.end, last), e.extra))
    first_entity = min((e.start for e in trimmed), default=last)
    first = 0
    while first < first_entity and kept[first] in (" ", "\n"):
        first += 1
    result = "".join(kept[first:last])
    shifted = [Ent(e.type, e.start - first, e.end - first, e.extra) for e in trimmed]
    return result, shifted


_AUTO_PATTERNS = [
    (
        "bot_command",
        re.compile(r"(?<![\w/<>])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?(?![\w/<>])"),
    ),
    ("url", re.compile(r"\b(?:https?|ftp)://[^\s<>\"']+", re.IGNORECASE)),
    ("mention", re.compile(r"(?<!\w)@[A-Za-z0-9_]{2,32}(?!\w)")),
    ("hashtag", re.compile(r"(?<![\w#])#(?=\w*[^\W\d_])\w{1,256}(?![\w#])")),
]


def auto_entities(text: str, explicit: list[Ent]) -> list[Ent]:
    """The entities the server finds by itself (bot commands, URLs, mentions, hashtags)."""
    taken = [
        (e.start, e.end)
        for e in explicit
        if e.type in ("code", "pre", "text_link", "text_mention", "custom_emoji")
    ]
    found: list[Ent] = []
    for kind, pattern in _AUTO_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if kind == "url":
                while end > start and text[end - 1] in ".,;:!?)]}":
                    end -= 1
            if any(start < b and a < end for a, b in taken):
                continue
            taken.append((start, end))
            found.append(Ent(kind, start, end))
    return found


def entities_json(text: str, ents: list[Ent]) -> list[dict[str, Any]]:
    pos = _utf16_positions(text)
    out = []
    for e in _sorted(ents):
        item: dict[str, Any] = {
            "offset": pos[e.start],
            "length": pos[e.end] - pos[e.start],
            "type": e.type,
        }
        item.update(copy.deepcopy(e.extra))
        out.append(item)
    return out


def format_text(
    raw: str,
    parse_mode: str,
    entities_raw: str,
    users: dict[int, dict],
) -> tuple[str, list[dict[str, Any]]]:
    """Parse and clean a text the way sendMessage/editMessageText/captions do; returns the final
    text and its entities as Bot API JSON. Length checks are left to the caller."""
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_RAW_TEXT_BYTES:
        raise bad("Text is too long")
    mode = parse_mode.lower()
    if raw and mode and mode != "none":
        parser = {"html": parse_html, "markdownv2": parse_markdown_v2, "markdown": parse_markdown}
        if mode not in parser:
            raise bad("Unsupported parse_mode")
        text, ents = parser[mode](raw, users)
    else:
        text = raw
        ents = entities_from_json(raw, entities_raw, users)
    text, ents = _clean(text, ents)
    ents = ents + auto_entities(text, ents)
    return text, entities_json(text, ents)
