"""The agent-as-API (contract §6) with the official SDKs and the test ACP agent: answers in each
dialect, the agent's own model traffic through the bridge, the workspace, permissions."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from harness.daemon import ROOT, Daemon, migrated_home
from harness.fakes.bridge_setup import bridge_settings
from harness.fakes.fake_provider import FakeProvider

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, FakeProvider, Path]]:
    root = tmp_path_factory.mktemp("local-agent")
    fake = FakeProvider().start()
    work, other = root / "work", root / "other"
    work.mkdir()
    other.mkdir()
    settings = {
        **bridge_settings(fake),
        "workspaces": [str(work.resolve()), str(other.resolve())],
        "agents": {
            "fake": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True},
            "hidden": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True},
        },
        "local_agent_api": {"enabled": True, "agents": ["fake"]},
    }
    server = Daemon(migrated_home(root / "home", settings)).start()
    yield server, fake, root
    server.stop()
    fake.stop()


def base(daemon: Daemon, agent: str = "fake", profile: str = "chat") -> str:
    return f"{daemon.url}/svc/local-agent/{agent}/{profile}/v1"


def oai(daemon: Daemon, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=base(daemon), api_key="unused", max_retries=0, default_headers=headers
    )


def claude(daemon: Daemon, **headers: str) -> anthropic.Anthropic:
    url = base(daemon).removesuffix("/v1")
    return anthropic.Anthropic(
        base_url=url, api_key="unused", max_retries=0, default_headers=headers
    )


def test_chat_completions_answer_with_the_agents_words(svc) -> None:
    daemon, _, _ = svc
    answer = oai(daemon).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "echo hello from the agent"}]
    )
    assert answer.choices[0].message.content == "hello from the agent"
    assert answer.model == "fake" and answer.choices[0].finish_reason == "stop"


def test_chat_completions_stream(svc) -> None:
    daemon, _, _ = svc
    chunks = oai(daemon).chat.completions.create(
        model="fake", stream=True, messages=[{"role": "user", "content": "echo one two three"}]
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"


@pytest.mark.parametrize("stream", [False, True])
def test_responses_answer_and_the_agents_model_call_goes_through_the_bridge(
    svc, stream: bool
) -> None:
    daemon, fake, _ = svc
    client = oai(daemon)
    if stream:
        with client.responses.stream(model="fake", input="ask summarise [r]") as events:
            for _ in events:
                pass
            text = events.get_final_response().output_text
    else:
        text = client.responses.create(model="fake", input="ask summarise [r]").output_text
    assert text  # the fake provider's answer, relayed by the agent
    seen = fake.last("summarise [r]")
    assert seen.headers["authorization"] == "Bearer profile-key-openai-chat"  # the profile's key
    assert "/svc" not in seen.path


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages(svc, stream: bool) -> None:
    daemon, _, _ = svc
    client = claude(daemon)
    messages = [{"role": "user", "content": "think about tides"}]
    if stream:
        with client.messages.stream(model="fake", max_tokens=100, messages=messages) as events:
            final = events.get_final_message()
    else:
        final = client.messages.create(model="fake", max_tokens=100, messages=messages)
    kinds = [block.type for block in final.content]
    assert "thinking" in kinds and "text" in kinds  # thoughts arrive as the reasoning channel
    text = "".join(b.text for b in final.content if b.type == "text")
    assert text == "about tides"


def test_the_agent_works_in_the_x_svc_cwd_workspace(svc) -> None:
    daemon, _, root = svc
    first = oai(daemon).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "pwd"}]
    )
    assert first.choices[0].message.content == str((root / "work").resolve())  # the default
    other = oai(daemon, **{"X-Svc-Cwd": str(root / "other")}).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "pwd"}]
    )
    assert other.choices[0].message.content == str((root / "other").resolve())
    with pytest.raises(openai.BadRequestError, match="not a registered workspace"):
        oai(daemon, **{"X-Svc-Cwd": "/"}).chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "pwd"}]
        )


def test_permission_is_refused_by_default_and_the_caller_sees_why(svc, tmp_path: Path) -> None:
    daemon, _, root = svc
    target = root / "work" / "perm.txt"
    refused = claude(daemon).messages.create(
        model="fake", max_tokens=50, messages=[{"role": "user", "content": f"write {target}"}]
    )
    reasoning = "".join(b.thinking for b in refused.content if b.type == "thinking")
    assert "refused" in reasoning and "X-Svc-Permission-Mode" in reasoning
    assert not target.exists()
    allowed = claude(daemon, **{"X-Svc-Permission-Mode": "allow"}).messages.create(
        model="fake", max_tokens=50, messages=[{"role": "user", "content": f"write {target}"}]
    )
    assert "write: allow" in "".join(b.text for b in allowed.content if b.type == "text")
    assert target.exists()


def test_models_lists_the_agents_offered(svc) -> None:
    daemon, _, _ = svc
    assert [m.id for m in oai(daemon).models.list()] == ["fake"]
    assert [m.id for m in claude(daemon).models.list()] == ["fake"]


def test_each_request_is_an_api_session(svc) -> None:
    import httpx

    daemon, _, _ = svc
    sessions = httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json()
    api = [s for s in sessions if s["kind"] == "api"]
    assert api and all(s["agent"] == "fake" for s in api)
    assert json.dumps(api)  # readable like any session
