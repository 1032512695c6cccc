"""One codec per dialect (requests, responses, errors, models: `<dialect>.py`) and its streaming
half (`<dialect>_stream.py`: StreamDecoder, StreamEncoder). Adding a dialect is two files here."""

from __future__ import annotations

from types import ModuleType

from bridge_app.dialects import (
    anthropic,
    anthropic_stream,
    gemini,
    gemini_stream,
    openai_chat,
    openai_chat_stream,
    openai_responses,
    openai_responses_stream,
)

DIALECTS: dict[str, ModuleType] = {
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
}
STREAMS: dict[str, ModuleType] = {
    "openai-chat": openai_chat_stream,
    "openai-responses": openai_responses_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
}


def get(name: str) -> ModuleType:
    return DIALECTS[name]


def stream(name: str) -> ModuleType:
    return STREAMS[name]
