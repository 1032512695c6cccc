"""The bridge's wiring over real sockets: each official SDK (its sync client, configured as the
README says) through a live svc — daphne, the ASGI router, the admission layer — to the fake
provider, one request streamed and one not; and the legacy route. One daemon and one fake for
the module.

The 16 client x provider pairs, with tools, reasoning, sampling, images, token counts and stored
responses, run in process against the same fake: tests/bridge_app/test_sdk_matrix.py."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from harness.fakes.bridge_clients import DRIVERS, SYSTEM
from harness.fakes.bridge_setup import ALIAS, DIALECTS, PROFILE, sdk, start_bridge

# Each client with a provider of another dialect (so each provider dialect is behind one client).
PAIRS = [(c, DIALECTS[(i + 1) % 4]) for i, c in enumerate(DIALECTS)]
IDS = [f"{c}->{p}" for c, p in PAIRS]
KEY_HEADER = {
    "openai-chat": "authorization",
    "openai-responses": "authorization",
    "anthropic": "x-api-key",
    "gemini": "x-goog-api-key",
}


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    daemon, fake = start_bridge(tmp_path_factory.mktemp("bridge") / "home")
    yield daemon, fake
    daemon.stop()
    fake.stop()


def ask(bridge, client: str, provider: str, prompt: str, stream: bool, tools_round=None):
    daemon, _ = bridge
    return DRIVERS[client](
        sdk(daemon, client, PROFILE[provider]), ALIAS, prompt, stream, tools_round
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
def test_text_with_system_history_and_image(
    bridge, client: str, provider: str, stream: bool
) -> None:
    marker = f"text-{client}-{provider}-{stream}"
    answer = ask(bridge, client, provider, marker, stream)
    assert f"system=[{SYSTEM}]" in answer.text
    assert "turns=3 images=1" in answer.text  # the history and the PNG reached the provider
    assert f"said=[{marker}]" in answer.text
    assert answer.model == ALIAS  # the id the client asked for, not the upstream one
    assert answer.stop == "end"
    assert answer.usage[0] > 0 and answer.usage[1] > 0
    rec = bridge[1].last(marker)
    if provider == "gemini":  # the model travels in the URL
        assert "/models/fake-model:" in rec.path
    else:
        assert rec.body["model"] == "fake-model"
    key = rec.headers[KEY_HEADER[provider]]
    assert key.removeprefix("Bearer ") == f"profile-key-{provider}"
    assert "client-key-never-forwarded" not in repr(rec.headers)


def test_legacy_bridge_route_serves_the_same_api(bridge) -> None:
    """/svc/bridge/… reaches the bridge through svc's router as /svc/local-api/… does."""
    daemon, _ = bridge
    client = openai.OpenAI(base_url=f"{daemon.url}/svc/bridge/claude/openai-chat/v1", api_key="x")
    r = client.chat.completions.create(
        model=ALIAS, messages=[{"role": "user", "content": "legacy"}]
    )
    assert "said=[legacy]" in r.choices[0].message.content and r.model == ALIAS
