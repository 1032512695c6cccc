"""One module per dialect, all with the same functions (see openai_chat.py for the shape)."""

from __future__ import annotations

from types import ModuleType

from bridge_app.dialects import anthropic, gemini, openai_chat, openai_responses

DIALECTS: dict[str, ModuleType] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
}


def get(name: str) -> ModuleType:
    return DIALECTS[name]
