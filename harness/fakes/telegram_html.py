"""The fake Bot API's `parse_mode: HTML`: the tags and character references the Bot API server
accepts, parsed into entities, with its own "can't parse entities" errors."""

from __future__ import annotations

from harness.fakes.telegram_entities import Ent, _byte_offset, _cant_parse, _is_space, _link_entity


def _html_entity(src: str, i: int) -> tuple[str | None, int]:
    """Decode an HTML entity at src[i] == '&' the way the server does (only &lt; &gt; &amp; &quot;
    and numeric references; anything else stays literal)."""
    j = i + 1
    code = 0
    if src[j : j + 1] == "#":
        j += 1
        if src[j : j + 1] == "x":
            j += 1
            while j < len(src) and src[j] in "0123456789abcdefABCDEF":
                code = code * 16 + int(src[j], 16)
                j += 1
        else:
            while j < len(src) and src[j].isdigit() and src[j].isascii():
                code = code * 10 + int(src[j])
                j += 1
        if code == 0 or code >= 0x10FFFF or j - i >= 10:
            return None, i
        char = chr(code)
    else:
        while j < len(src) and src[j].isascii() and src[j].isalpha():
            j += 1
        char = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}.get(src[i + 1 : j], "")
        if not char:
            return None, i
    if src[j : j + 1] == ";":
        j += 1
    return char, j


def parse_html(src: str, users: dict[int, dict] | None = None) -> tuple[str, list[Ent]]:
    users = users or {}
    out: list[str] = []
    ents: list[Ent] = []
    stack: list[tuple[str, str, int]] = []  # tag, argument, start
    supported = {
        "a",
        "b",
        "strong",
        "i",
        "em",
        "s",
        "strike",
        "del",
        "u",
        "ins",
        "tg-spoiler",
        "tg-emoji",
        "tg-time",
        "span",
        "pre",
        "code",
        "blockquote",
    }
    n = len(src)
    i = 0

    def at(k: int) -> str:
        return src[k] if k < n else ""

    while i < n:
        ch = src[i]
        if ch == "&":
            decoded, j = _html_entity(src, i)
            if decoded is not None:
                out.append(decoded)
                i = j
                continue
        if ch != "<":
            out.append(ch)
            i += 1
            continue
        begin = i
        i += 1
        if at(i) != "/":
            while at(i) and not _is_space(at(i)) and at(i) != ">":
                i += 1
            if not at(i):
                raise _cant_parse(f"Unclosed start tag at byte offset {_byte_offset(src, begin)}")
            tag = src[begin + 1 : i].lower()
            if tag not in supported:
                raise _cant_parse(
                    f'Unsupported start tag "{tag}" at byte offset {_byte_offset(src, begin)}'
                )
            argument = ""
            while at(i) != ">":
                while at(i) and _is_space(at(i)):
                    i += 1
                if at(i) == ">":
                    break
                name_start = i
                while at(i) and not _is_space(at(i)) and at(i) not in "=>/\"'":
                    i += 1
                name = src[name_start:i]
                if not name:
                    raise _cant_parse(
                        f'Empty attribute name in the tag "{tag}" at byte offset '
                        f"{_byte_offset(src, begin)}"
                    )
                while at(i) and _is_space(at(i)):
                    i += 1
                if at(i) != "=":
                    if not at(i):
                        raise _cant_parse(
                            f'Unclosed start tag "{tag}" at byte offset {_byte_offset(src, begin)}'
                        )
                    if tag == "blockquote" and name == "expandable":
                        argument = "1"
                    continue
                i += 1
                while at(i) and _is_space(at(i)):
                    i += 1
                if not at(i):
                    raise _cant_parse(
                        f'Unclosed start tag "{tag}" at byte offset {_byte_offset(src, begin)}'
                    )
                if at(i) not in "'\"":
                    token_start = i
                    while at(i) and ((at(i).isascii() and at(i).isalnum()) or at(i) in ".-"):
                        i += 1
                    value = src[token_start:i].lower()
                    if not _is_space(at(i)) and at(i) != ">":
                        raise _cant_parse(
                            "Unexpected end of name token at byte offset "
                            f"{_byte_offset(src, token_start)}"
                        )
                else:
                    quote = at(i)
                    i += 1
                    parts: list[str] = []
                    while at(i) and at(i) != quote:
                        if at(i) == "&":
                            decoded, j = _html_entity(src, i)
                            if decoded is not None:
                                parts.append(decoded)
                                i = j
                                continue
                        parts.append(at(i))
                        i += 1
                    if at(i) == quote:
                        i += 1
                    value = "".join(parts)
                if not at(i):
                    raise _cant_parse(
                        f"Unclosed start tag at byte offset {_byte_offset(src, begin)}"
                    )
                if tag == "a" and name == "href":
                    argument = value
                elif tag == "code" and name == "class" and value.startswith("language-"):
                    argument = value[9:]
                elif tag == "span" and name == "class" and value.startswith("tg-"):
                    argument = value[3:]
                elif tag == "tg-emoji" and name == "emoji-id":
                    argument = value
                elif tag == "blockquote" and name == "expandable":
                    argument = "1"
            if tag == "span" and argument != "spoiler":
                raise _cant_parse(
                    'Tag "span" must have class "tg-spoiler" at byte offset '
                    f"{_byte_offset(src, begin)}"
                )
            stack.append((tag, argument, len(out)))
            i += 1  # the '>'
            continue
        # an end tag
        if not stack:
            raise _cant_parse(f"Unexpected end tag at byte offset {_byte_offset(src, begin)}")
        while at(i) and not _is_space(at(i)) and at(i) != ">":
            i += 1
        end_tag = src[begin + 2 : i].lower()
        while at(i) and _is_space(at(i)):
            i += 1
        if at(i) != ">":
            raise _cant_parse(f"Unclosed end tag at byte offset {_byte_offset(src, begin)}")
        i += 1
        tag, argument, start = stack.pop()
        if end_tag and end_tag != tag:
            raise _cant_parse(
                f"Unmatched end tag at byte offset {_byte_offset(src, begin)}, "
                f'expected "</{tag}>", found "</{end_tag}>"'
            )
        end = len(out)
        if end <= start:
            continue
        simple = {
            "b": "bold",
            "strong": "bold",
            "i": "italic",
            "em": "italic",
            "u": "underline",
            "ins": "underline",
            "s": "strikethrough",
            "strike": "strikethrough",
            "del": "strikethrough",
            "tg-spoiler": "spoiler",
            "span": "spoiler",
        }
        if tag in simple:
            ents.append(Ent(simple[tag], start, end))
        elif tag == "tg-emoji":
            if not argument.isdigit() or int(argument) == 0:
                raise _cant_parse("Invalid custom emoji identifier specified")
            ents.append(Ent("custom_emoji", start, end, {"custom_emoji_id": argument}))
        elif tag == "a":
            link = _link_entity(start, end, argument or "".join(out[start:end]), users)
            if link:
                ents.append(link)
        elif tag == "pre":
            last = ents[-1] if ents else None
            if (
                last
                and last.type == "code"
                and (last.start, last.end) == (start, end)
                and last.extra.get("language")
            ):
                last.type = "pre"
            else:
                ents.append(Ent("pre", start, end))
        elif tag == "code":
            last = ents[-1] if ents else None
            if last and last.type == "pre" and (last.start, last.end) == (start, end) and argument:
                last.extra["language"] = argument
            else:
                ents.append(Ent("code", start, end, {"language": argument} if argument else {}))
        elif tag == "blockquote":
            ents.append(Ent("expandable_blockquote" if argument else "blockquote", start, end))
        # tg-time: the date entity is not modelled; its text stays
    if stack:
        raise _cant_parse(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in out):
        raise _cant_parse(
            "Text contains invalid Unicode characters after decoding HTML entities, check for "
            "unmatched surrogate code units"
        )
    for ent in ents:
        if ent.type == "code":
            ent.extra.pop("language", None)
    return "".join(out), ents
