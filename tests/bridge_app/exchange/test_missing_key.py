"""A profile whose `api_key_env` names a variable unset in svc's environment: the bridge refuses
with a 401 in the client's own dialect that names the variable (it used to call the provider
without a key and relay whatever vague refusal came back), and never calls the provider. 401,
not 503: it is a credential problem, and clients retry a 5xx several times before showing it."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from google.genai import errors as genai_errors

from core import config
from tests.bridge_app.exchange.asgi_client import sdk
from tests.bridge_app.exchange.harness import ALIAS, profiles_for

pytestmark = pytest.mark.usefixtures("request_rows")  # the request log in memory (conftest)

VAR = "SVC_TEST_MISSING_PROFILE_KEY"
SAYS = f"${VAR} is not set in svc's environment"


@pytest.fixture(autouse=True)
def keyless_profiles(bridge_profiles: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each dialect's profile, its key named by an environment variable that is not set."""
    monkeypatch.delenv(VAR, raising=False)
    profiles = profiles_for(bridge_profiles)
    for name in ("chat", "responses", "claude", "gemini"):
        profiles[name].pop("api_key")
        profiles[name]["api_key_env"] = VAR
    config.write_settings({"profiles": profiles})


async def test_openai_chat_and_responses_clients_get_an_authentication_error(bridge) -> None:
    http_client, provider = bridge
    with pytest.raises(openai.AuthenticationError) as err:
        await sdk(http_client, "openai-chat", "chat").chat.completions.create(
            model=ALIAS, messages=[{"role": "user", "content": "hi"}]
        )
    assert err.value.status_code == 401 and SAYS in err.value.body["message"]
    with pytest.raises(openai.AuthenticationError) as err:
        await sdk(http_client, "openai-responses", "responses").responses.create(
            model=ALIAS, input="hi"
        )
    assert SAYS in err.value.body["message"] and "'responses'" in err.value.body["message"]
    assert provider.requests == []  # the provider was never called


async def test_anthropic_client_gets_an_authentication_error(bridge) -> None:
    http_client, provider = bridge
    with pytest.raises(anthropic.AuthenticationError) as err:
        await sdk(http_client, "anthropic", "claude").messages.create(
            model=ALIAS, max_tokens=5, messages=[{"role": "user", "content": "hi"}], stream=True
        )
    assert err.value.status_code == 401
    assert err.value.body["error"]["type"] == "authentication_error"
    assert SAYS in err.value.body["error"]["message"]
    assert provider.requests == []


async def test_gemini_client_gets_unauthenticated(bridge) -> None:
    http_client, provider = bridge
    with pytest.raises(genai_errors.ClientError) as err:
        await sdk(http_client, "gemini", "gemini").models.generate_content(
            model=ALIAS, contents="hi"
        )
    assert err.value.code == 401 and err.value.status == "UNAUTHENTICATED"
    assert SAYS in json.dumps(err.value.details)
    assert provider.requests == []


async def test_once_the_variable_is_set_the_request_goes_through(
    bridge,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    http_client, provider = bridge
    monkeypatch.setenv(VAR, "now-set")
    reply = await sdk(http_client, "openai-chat", "chat").chat.completions.create(
        model=ALIAS, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content
    assert provider.requests
