"""`translate.prepare`, where the request goes: each provider's URL, and upstream headers built
from the profile alone (the client's key never leaves svc)."""

from __future__ import annotations

import pytest

from bridge_app import dialects, ir
from core import config
from tests.bridge_app.prepare.harness import PROFILES, chat, chat_body, messages, prepare, responses

# --- where, and with which headers ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "stream", "url", "auth"),
    [
        (
            "chat",
            False,
            "https://chat.example/v1/chat/completions",
            {"authorization": "Bearer key-chat"},
        ),
        (
            "responses",
            True,
            "https://resp.example/v1/responses",
            {"authorization": "Bearer key-resp"},
        ),
        (
            "claude",
            False,
            "https://claude.example/v1/messages",
            {"x-api-key": "key-claude", "anthropic-version": "2023-06-01"},
        ),
        (
            "gemini",
            False,
            "https://gemini.example/v1beta/models/up-model:generateContent",
            {"x-goog-api-key": "key-gemini"},
        ),
        (
            "gemini-v1",
            True,
            "https://gemini.example/v1/models/up-model:streamGenerateContent?alt=sse",
            {"x-goog-api-key": "key-gemini"},
        ),
    ],
)
def test_each_provider_gets_its_url_and_only_the_profiles_key(
    profile: str, stream: bool, url: str, auth: dict[str, str]
) -> None:
    out = prepare(chat(profile), chat_body(stream=stream))
    assert out.url == url
    # Built from scratch: exactly these, nothing the client sent (its key above all).
    accept = "text/event-stream" if stream else "application/json"
    assert out.headers == {"content-type": "application/json", "accept": accept, **auth}


def test_anthropic_without_a_key_still_sends_its_version_and_no_empty_key() -> None:
    config.update_settings(
        {"profiles": {**PROFILES, "keyless": {"provider": "anthropic", "base_url": "http://x"}}}
    )
    out = prepare(chat("keyless"), chat_body(model="any"))
    assert out.headers == {
        "content-type": "application/json",
        "accept": "application/json",
        "anthropic-version": "2023-06-01",
    }


def test_a_profile_without_any_key_sends_no_auth_header() -> None:
    out = prepare(chat("open"), chat_body(model="m"))
    assert out.headers == {"content-type": "application/json", "accept": "application/json"}


def test_the_key_can_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_TEST_PREPARE_KEY", "from-env")
    out = prepare(chat("fromenv"), chat_body(model="m"))
    assert out.headers["x-goog-api-key"] == "from-env"
    monkeypatch.delenv("SVC_TEST_PREPARE_KEY")
    # Unset: svc refuses (401) naming the variable, instead of calling the provider keyless.
    with pytest.raises(ir.BridgeError) as err:
        prepare(chat("fromenv"), chat_body(model="m"))
    assert err.value.status == 401
    assert "$SVC_TEST_PREPARE_KEY is not set in svc's environment" in err.value.message


def test_the_profiles_own_headers_are_added() -> None:
    out = prepare(
        messages("extra"),
        {"model": "client-model", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert out.headers["x-team"] == "blue" and out.headers["x-api-key"] == "k"


def test_codecs_are_the_clients_and_the_providers() -> None:
    out = prepare(responses("gemini"), {"model": "client-model", "input": "hi"})
    assert out.client is dialects.get("openai-responses")
    assert out.provider is dialects.get("gemini")
