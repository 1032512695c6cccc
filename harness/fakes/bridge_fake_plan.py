"""The fake provider's reading of a request (written from the vendors' documented shapes, not
from bridge_app): what it carried (`Seen`), and what the fake will answer (`Plan`)."""

from __future__ import annotations

import base64
import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

MODELS = ["fake-model", "fake-model-2"]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


@dataclass
class Seen:
    system: str = ""
    turns: int = 0
    images: int = 0
    results: list[tuple[str, str]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    last_text: str = ""
    after_tools: bool = False
    include_usage: bool = True


@dataclass
class Plan:
    model: str
    text: str
    calls: list[tuple[str, str, dict[str, Any]]]
    stop: str  # end | tool | max
    usage: tuple[int, int]
    include_usage: bool = True
    reasoning: str = ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text", "")) if "text" in content else ""
    return ""


IMAGE_TYPES = {"image_url", "input_image", "image"}
IMAGE_KEYS = {"inlineData", "inline_data", "fileData", "file_data"}


def _count_images(value: Any) -> int:
    if isinstance(value, list):
        return sum(_count_images(v) for v in value)
    if not isinstance(value, dict):
        return 0
    # JSON schemas say "type": ["string", "null"]: only a string type can name an image.
    kind = value.get("type")
    own = 1 if (isinstance(kind, str) and kind in IMAGE_TYPES) or IMAGE_KEYS & set(value) else 0
    return own + sum(_count_images(v) for v in value.values())


def _chat(body: dict[str, Any], seen: Seen) -> None:
    for msg in body.get("messages", []):
        role = msg.get("role")
        if role in ("system", "developer"):
            seen.system += _text(msg.get("content"))
        elif role == "tool":
            seen.results.append((msg.get("tool_call_id", ""), _text(msg.get("content"))))
        else:
            seen.turns += 1
            if role == "user" and _text(msg.get("content")):
                seen.last_text = _text(msg.get("content"))
    seen.after_tools = bool(body.get("messages")) and body["messages"][-1].get("role") == "tool"
    seen.tools = [t["function"]["name"] for t in body.get("tools", [])]
    seen.include_usage = bool((body.get("stream_options") or {}).get("include_usage"))


def _responses(body: dict[str, Any], seen: Seen) -> None:
    seen.system = _text(body.get("instructions") or "")
    inp = body.get("input")
    items = [{"role": "user", "content": inp}] if isinstance(inp, str) else inp or []
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call_output":
            seen.results.append((item.get("call_id", ""), _text(item.get("output"))))
        elif kind == "message" and item.get("role") in ("system", "developer"):
            seen.system += _text(item.get("content"))
        elif kind == "message":
            seen.turns += 1
            if item.get("role") == "user" and _text(item.get("content")):
                seen.last_text = _text(item.get("content"))
    seen.after_tools = bool(items) and items[-1].get("type") == "function_call_output"
    seen.tools = [t["name"] for t in body.get("tools", []) if t.get("type") == "function"]


def _anthropic(body: dict[str, Any], seen: Seen) -> None:
    seen.system = _text(body.get("system") or "")
    for msg in body.get("messages", []):
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        seen.results += [(b.get("tool_use_id", ""), _text(b.get("content"))) for b in results]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        seen.turns += 1 if len(results) < len(blocks) else 0
        if msg.get("role") == "user" and text:
            seen.last_text = text
        seen.after_tools = bool(results) and not text
    seen.tools = [t["name"] for t in body.get("tools", [])]


def _gemini(body: dict[str, Any], seen: Seen) -> None:
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    seen.system = _text(system.get("parts", []))
    for content in body.get("contents", []):
        parts = content.get("parts", [])
        responses = [p.get("functionResponse") or p.get("function_response") for p in parts]
        responses = [r for r in responses if r]
        for r in responses:
            resp = r.get("response") or {}
            seen.results.append(
                (
                    r.get("id") or r.get("name", ""),
                    str(resp.get("output", resp.get("error", json.dumps(resp)))),
                )
            )
        text = "".join(p.get("text", "") for p in parts if "text" in p)
        seen.turns += 1 if len(responses) < len(parts) else 0
        if content.get("role") == "user" and text:
            seen.last_text = text
        seen.after_tools = bool(responses) and not text
    for tool in body.get("tools", []):
        seen.tools += [
            d["name"]
            for d in tool.get("functionDeclarations") or tool.get("function_declarations") or []
        ]


def extract(dialect: str, body: dict[str, Any]) -> Seen:
    seen = Seen()
    {
        "openai-chat": _chat,
        "openai-responses": _responses,
        "anthropic": _anthropic,
        "gemini": _gemini,
    }[dialect](body, seen)
    seen.images = _count_images(body)
    return seen


def plan(seen: Seen, model: str) -> Plan:
    results = ";".join(f"{i}={c}" for i, c in seen.results)
    said = seen.last_text[:200]  # a 64 MiB prompt must not become a 64 MiB answer
    text = (
        f"fake {model} system=[{seen.system}] turns={seen.turns} images={seen.images} "
        f"results=[{results}] said=[{said}]"
    )
    calls: list[tuple[str, str, dict[str, Any]]] = []
    stop = "max" if "[max]" in seen.last_text else "end"
    if "[tools]" in seen.last_text and seen.tools and not seen.after_tools:
        text = "Let me check."
        calls = [
            (secrets.token_hex(6), name, {"city": "Paris", "n": i})
            for i, name in enumerate(seen.tools[:2])
        ]
        stop = "tool"
    call = re.search(r"\[call:([\w.-]+)\]", seen.last_text)
    named = [t for t in seen.tools if call and t.endswith(call.group(1))]
    if named and not seen.after_tools:  # one call of that tool; the next turn echoes its result
        text, calls, stop = "Let me check.", [(secrets.token_hex(6), named[0], {})], "tool"
    words = 1 + len(seen.system.split()) + len(seen.last_text[:10000].split()) + seen.turns
    reasoning = "Thinking it over." if "[think]" in seen.last_text else ""
    usage = (words, len(text.split()))
    return Plan(model, text, calls, stop, usage, seen.include_usage, reasoning)


def _split(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]
