"""The fake Bot API's `parse_mode: MarkdownV2` and legacy `Markdown`, parsed into entities with the
server's own escaping rules and "can't parse entities" errors."""

from __future__ import annotations

import re
from typing import Any

from harness.fakes.telegram_entities import (
    ApiError,
    Ent,
    _byte_offset,
    _cant_parse,
    _is_space,
    _link_entity,
)

_MD2_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "pre_code": "PreCode",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
    "blockquote": "BlockQuote",
}


def parse_markdown_v2(src: str, users: dict[int, dict] | None = None) -> tuple[str, list[Ent]]:
    users = users or {}
    out: list[str] = []
    ents: list[Ent] = []
    # each open entity: [kind, argument, start (in out), source index]
    stack: list[list[Any]] = []
    have_quote = False
    can_start_quote = True
    n = len(src)

    def at(k: int) -> str:
        return src[k] if 0 <= k < n else ""

    def reserved(ch: str) -> ApiError:
        return _cant_parse(
            f"Character '{ch}' is reserved and must be escaped with the preceding '\\'"
        )

    def unclosed(entry: list[Any]) -> ApiError:
        return _cant_parse(
            f"Can't find end of {_MD2_NAMES[entry[0]]} entity at byte offset "
            f"{_byte_offset(src, entry[3])}"
        )

    def read_url(k: int) -> tuple[str, int]:
        url: list[str] = []
        begin = k
        while k < n and src[k] != ")":
            if src[k] == "\\" and 0 < ord(at(k + 1) or "\x00") <= 126:
                url.append(src[k + 1])
                k += 2
                continue
            url.append(src[k])
            k += 1
        if at(k) != ")":
            raise _cant_parse(f"Can't find end of a URL at byte offset {_byte_offset(src, begin)}")
        return "".join(url), k

    i = 0
    while i < n:
        ch = src[i]
        if ch == "\\" and 0 < ord(at(i + 1) or "\x00") <= 126:
            i += 1
            out.append(src[i])
            if src[i] != "\r":
                can_start_quote = src[i] == "\n"
            i += 1
            continue
        in_code = bool(stack) and stack[-1][0] in ("code", "pre", "pre_code")
        reserved_chars = "`" if in_code else "_*[]()~`>#+-=|{}.!\n"
        if ch not in reserved_chars:
            out.append(ch)
            if ch != "\r":
                can_start_quote = False
            i += 1
            continue
        top = stack[-1][0] if stack else None
        if top is None:
            closes = False
        elif have_quote and ch == "\n" and (i + 1 == n or at(i + 1) != ">"):
            closes = True
        else:
            closes = {
                "bold": ch == "*",
                "italic": ch == "_" and at(i + 1) != "_",
                "code": ch == "`",
                "pre": ch == "`" and at(i + 1) == "`" and at(i + 2) == "`",
                "pre_code": ch == "`" and at(i + 1) == "`" and at(i + 2) == "`",
                "text_link": ch == "]",
                "underline": ch == "_" and at(i + 1) == "_",
                "strikethrough": ch == "~",
                "spoiler": ch == "|" and at(i + 1) == "|",
                "custom_emoji": ch == "]",
                "blockquote": False,
            }[top]
        if not closes:
            source_index = i
            argument = ""
            if ch == "_":
                kind = "underline" if at(i + 1) == "_" else "italic"
                i += 2 if kind == "underline" else 1
            elif ch == "*":
                kind = "bold"
                i += 1
            elif ch == "~":
                kind = "strikethrough"
                i += 1
            elif ch == "|":
                if at(i + 1) != "|":
                    raise reserved(ch)
                kind = "spoiler"
                i += 2
            elif ch == "[":
                kind = "text_link"
                i += 1
            elif ch == "`":
                if at(i + 1) == "`" and at(i + 2) == "`":
                    i += 3
                    kind = "pre"
                    lang_end = i
                    while lang_end < n and not _is_space(src[lang_end]) and src[lang_end] != "`":
                        lang_end += 1
                    if i != lang_end and lang_end < n and src[lang_end] != "`":
                        kind = "pre_code"
                        argument = src[i:lang_end]
                        i = lang_end
                    if at(i) in ("\n", "\r"):
                        if at(i + 1) in ("\n", "\r") and at(i) != at(i + 1):
                            i += 2
                        else:
                            i += 1
                else:
                    kind = "code"
                    i += 1
            elif ch == "!":
                if at(i + 1) != "[":
                    raise reserved(ch)
                kind = "custom_emoji"
                i += 2
            elif ch == "\n":
                out.append("\n")
                can_start_quote = True
                i += 1
                continue
            elif ch == ">":
                if not can_start_quote:
                    raise reserved(ch)
                i += 1
                if have_quote:
                    continue
                kind = "blockquote"
                have_quote = True
            else:
                raise reserved(ch)
            stack.append([kind, argument, len(out), source_index])
            continue
        # the end of the innermost entity
        entry = stack[-1]
        kind = entry[0]
        if ch == "\n" and kind != "blockquote":
            # only an expandable blockquote's closing "||" may stand right before the newline
            if kind != "spoiler" or entry[3] != i - 2:
                raise unclosed(entry)
            stack.pop()
            if not stack or stack[-1][0] != "blockquote":
                raise unclosed(stack[-1] if stack else entry)
            entry = stack[-1]
            kind = "expandable_blockquote"
        start = entry[2]
        skip = len(out) == start
        extra: dict[str, Any] = {}
        link: Ent | None = None
        if kind in ("bold", "italic", "code", "strikethrough"):
            i += 1
        elif kind in ("underline", "spoiler"):
            i += 2
        elif kind in ("pre", "pre_code"):
            i += 3
            if kind == "pre_code":
                extra["language"] = entry[1]
            kind = "pre"
        elif kind == "text_link":
            if at(i + 1) != "(":
                url = "".join(out[start:])
                i += 1
            else:
                url, close = read_url(i + 2)
                i = close + 1
            link = _link_entity(start, len(out), url, users)
            skip = skip or link is None
        elif kind == "custom_emoji":
            if at(i + 1) != "(":
                raise _cant_parse("The entity must contain a tg://emoji or tg://time URL")
            url, close = read_url(i + 2)
            i = close + 1
            m = re.fullmatch(r"tg://emoji\?id=(\d+)", url)
            if not m:
                raise _cant_parse("Invalid tg://emoji or tg://time URL specified")
            extra["custom_emoji_id"] = m.group(1)
        elif kind in ("blockquote", "expandable_blockquote"):
            have_quote = False
            out.append("\n")
            can_start_quote = True
            i += 1
            # the entity takes the newline that ends it
            ents.append(Ent(kind, start, len(out)))
            stack.pop()
            continue
        if not skip:
            ents.append(link or Ent(kind, start, len(out), extra))
        stack.pop()
    if have_quote and stack:
        kind = "blockquote"
        if stack[-1][0] == "spoiler" and stack[-1][3] == n - 2:
            stack.pop()
            kind = "expandable_blockquote"
        if stack and stack[-1][0] == "blockquote":
            entry = stack.pop()
            if len(out) > entry[2]:
                ents.append(Ent(kind, entry[2], len(out)))
    if stack:
        raise unclosed(stack[-1])
    return "".join(out), ents


def parse_markdown(src: str, users: dict[int, dict] | None = None) -> tuple[str, list[Ent]]:
    """The legacy 'Markdown' mode: *bold*, _italic_, `code`, ```pre```, [text](url)."""
    users = users or {}
    out: list[str] = []
    ents: list[Ent] = []
    n = len(src)
    i = 0

    def at(k: int) -> str:
        return src[k] if k < n else ""

    while i < n:
        ch = src[i]
        if ch == "\\" and at(i + 1) in ("_", "*", "`", "["):
            out.append(src[i + 1])
            i += 2
            continue
        if ch not in "_*`[":
            out.append(ch)
            i += 1
            continue
        begin = i
        end_char = "]" if ch == "[" else ch
        is_pre = False
        language = ""
        i += 1
        if ch == "`" and at(i) == "`" and at(i + 1) == "`":
            i += 2
            is_pre = True
            lang_end = i
            while lang_end < n and not _is_space(src[lang_end]) and src[lang_end] != "`":
                lang_end += 1
            if i != lang_end and lang_end < n and src[lang_end] != "`":
                language = src[i:lang_end]
                i = lang_end
            if at(i) in ("\n", "\r"):
                if at(i + 1) in ("\n", "\r") and at(i) != at(i + 1):
                    i += 2
                else:
                    i += 1
        start = len(out)
        while i < n and (
            src[i] != end_char or (is_pre and not (at(i + 1) == "`" and at(i + 2) == "`"))
        ):
            out.append(src[i])
            i += 1
        if i == n:
            raise _cant_parse(
                f"Can't find end of the entity starting at byte offset {_byte_offset(src, begin)}"
            )
        end = len(out)
        if end > start:
            if ch == "_":
                ents.append(Ent("italic", start, end))
            elif ch == "*":
                ents.append(Ent("bold", start, end))
            elif ch == "[":
                if at(i + 1) != "(":
                    url = src[begin + 1 : i]
                else:
                    i += 2
                    url_start = i
                    while i < n and src[i] != ")":
                        i += 1
                    url = src[url_start:i]
                link = _link_entity(start, end, url, users)
                if link:
                    ents.append(link)
            elif is_pre:
                ents.append(Ent("pre", start, end, {"language": language} if language else {}))
            else:
                ents.append(Ent("code", start, end))
        i += 3 if is_pre else 1
    return "".join(out), ents
