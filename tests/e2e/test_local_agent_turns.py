"""Agent-as-API conversations, cancel and failures (contract §6): the second turn reuses the agent
session and sends only the tail; one-shot requests leave no process; a new request cancels a
busy turn; a client that leaves cancels the turn; refusals and failures in the client's dialect."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from harness.daemon import ROOT, Daemon, migrated_home
from harness.fakes.bridge_setup import bridge_settings
from harness.fakes.fake_provider import FakeProvider
from tests.e2e.test_limits_before_body import head_only

FAKE_ACP = str(ROOT / "harness" / "fakes" / "acp_agent.py")


def settings(fake: FakeProvider, work: Path, **local_api: object) -> dict:
    return {
        **bridge_settings(fake),
        "workspaces": [str(work.resolve())],
        "agents": {
            "fake": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True},
            "mute": {"acp_command": ["sleep", "600"], "enabled": True},  # never answers ACP
            "hidden": {"acp_command": [sys.executable, FAKE_ACP], "enabled": True},
        },
        "local_agent_api": {"enabled": True, "agents": ["fake", "mute"], **local_api},
    }


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, FakeProvider]]:
    root = tmp_path_factory.mktemp("agent-turns")
    (root / "work").mkdir()
    fake = FakeProvider().start()
    home = migrated_home(root / "home", settings(fake, root / "work"))
    server = Daemon(home, env={"SVC_AGENT_START_TIMEOUT": "2"}).start()
    yield server, fake
    server.stop()
    fake.stop()


def client(daemon: Daemon, agent: str = "fake", profile: str = "chat", **headers: str):
    url = f"{daemon.url}/svc/local-agent/{agent}/{profile}/v1"
    return openai.OpenAI(base_url=url, api_key="x", max_retries=0, default_headers=headers)


def api_sessions(daemon: Daemon) -> list[dict]:
    listed = httpx.get(f"{daemon.url}/api/sessions", headers=daemon.owner_headers()).json()
    return [s for s in listed if s["kind"] == "api"]


def wait_until(check, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def say(c: openai.OpenAI, history: list[dict]) -> str:
    return c.chat.completions.create(model="fake", messages=history).choices[0].message.content


def test_a_named_conversation_keeps_its_session_and_sends_only_the_tail(svc) -> None:
    daemon, _ = svc
    c = client(daemon, **{"X-Svc-Conversation": "talk-1"})
    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "echo hi"}]
    history.append({"role": "assistant", "content": say(c, history)})
    history.append({"role": "user", "content": "prompts"})
    prompts = json.loads(say(c, history))
    assert len(prompts) == 2, prompts  # the same agent session saw both turns
    assert "be brief" in prompts[0] and prompts[0].rstrip().endswith("echo hi")
    assert prompts[1] == "prompts"  # the second turn carried only the tail


def test_previous_response_id_continues_the_agent_session(svc) -> None:
    daemon, _ = svc
    c = client(daemon)
    first = c.responses.create(model="fake", input="echo remember me")
    second = c.responses.create(model="fake", input="prompts", previous_response_id=first.id)
    assert json.loads(second.output_text) == ["echo remember me", "prompts"]
    with pytest.raises(openai.NotFoundError):
        c.responses.create(model="fake", input="prompts", previous_response_id="resp_nope")


def test_a_one_shot_request_leaves_no_process_behind(svc) -> None:
    daemon, _ = svc
    before = {s["id"] for s in api_sessions(daemon)}
    assert say(client(daemon), [{"role": "user", "content": "echo once"}]) == "once"
    new = [s for s in api_sessions(daemon) if s["id"] not in before]
    assert len(new) == 1

    def ended() -> bool:
        row = httpx.get(f"{daemon.url}/api/sessions/{new[0]['id']}", headers=daemon.owner_headers())
        return row.json()["status"] == "exited"

    wait_until(ended, "the one-shot agent process was never stopped")
    assert not Path(f"/proc/{new[0]['pid']}").exists() or _zombie(new[0]["pid"])


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


async def test_a_new_request_on_a_busy_conversation_cancels_the_running_turn(svc) -> None:
    daemon, _ = svc
    c = openai.AsyncOpenAI(
        base_url=f"{daemon.url}/svc/local-agent/fake/chat/v1",
        api_key="x",
        max_retries=0,
        default_headers={"X-Svc-Conversation": "busy-1"},
    )
    slow = asyncio.ensure_future(
        c.chat.completions.create(model="fake", messages=[{"role": "user", "content": "sleep 20"}])
    )
    await asyncio.sleep(1)
    quick = await c.chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "echo next"}]
    )
    assert quick.choices[0].message.content == "next"
    interrupted = await asyncio.wait_for(slow, 10)
    assert interrupted.choices[0].message.content.count(".") < 20 / 0.05  # it stopped early
    await c.close()


async def test_a_client_that_leaves_cancels_the_agents_turn_and_its_model_call(svc) -> None:
    daemon, fake = svc
    url = f"{daemon.url}/svc/local-agent/fake/chat/v1/chat/completions"
    body = {
        "model": "fake",
        "stream": True,
        "messages": [{"role": "user", "content": "ask go on [slow] [gone]"}],
    }
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("POST", url, json=body) as resp,
    ):
        async for line in resp.aiter_lines():
            if '"content"' in line:
                break  # the agent is streaming its model's answer: leave now
    # The agent's own model request through the bridge is cancelled with its turn.
    assert fake.wait_closed("[gone]", timeout=20).closed_at is not None


@pytest.mark.parametrize(
    ("agent", "profile", "status"),
    [("hidden", "chat", 403), ("nobody", "chat", 404), ("fake", "nope", 404)],
)
def test_refusals_come_in_the_clients_dialect(svc, agent: str, profile: str, status: int) -> None:
    daemon, _ = svc
    url = f"{daemon.url}/svc/local-agent/{agent}/{profile}"
    c = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as err:
        c.messages.create(model=agent, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == status
    assert err.value.body["type"] == "error"  # Anthropic's own error shape


def test_bad_bodies_are_refused_like_the_bridge(svc) -> None:
    daemon, _ = svc
    url = f"{daemon.url}/svc/local-agent/fake/chat/v1/chat/completions"
    assert httpx.post(url, content=b"{}", headers={"Content-Type": "text/plain"}).status_code == 415
    bad = httpx.post(url, content=b"{nope", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json()["error"]["message"]
    status, _, answer = head_only(
        daemon,
        [
            "POST /svc/local-agent/fake/chat/v1/chat/completions HTTP/1.1",
            f"Host: 127.0.0.1:{daemon.port}",
            "Content-Type: application/json",
            f"Content-Length: {64 * 1024 * 1024 + 1}",
        ],
    )
    assert status == 413 and "larger than" in json.loads(answer)["error"]["message"]


def test_an_agent_that_crashes_mid_turn_is_a_502_with_its_own_words(svc) -> None:
    daemon, _ = svc
    with pytest.raises(openai.APIStatusError) as err:
        say(client(daemon), [{"role": "user", "content": "crash"}])
    assert err.value.status_code == 502
    assert "crashing on purpose" in err.value.message


def test_an_agent_that_never_answers_initialize_is_a_504(svc) -> None:
    daemon, _ = svc
    c = client(daemon, agent="mute")
    with pytest.raises(openai.APIStatusError) as err:
        c.chat.completions.create(model="mute", messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 504


def test_a_disabled_service_is_503(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    (tmp_path / "work").mkdir()
    off = settings(fake, tmp_path / "work")
    off["local_agent_api"]["enabled"] = False
    daemon = Daemon(migrated_home(tmp_path / "home", off)).start()
    try:
        with pytest.raises(openai.APIStatusError) as err:
            say(client(daemon), [{"role": "user", "content": "echo hi"}])
        assert err.value.status_code == 503
    finally:
        daemon.stop()
        fake.stop()


def test_an_idle_agent_stops_and_its_conversation_resumes_the_agents_own_session(
    tmp_path: Path,
) -> None:
    fake = FakeProvider().start()
    (tmp_path / "work").mkdir()
    quick = settings(fake, tmp_path / "work", idle_seconds=1, conversation_ttl_seconds=600)
    daemon = Daemon(migrated_home(tmp_path / "home", quick)).start()
    try:
        c = client(daemon, **{"X-Svc-Conversation": "nap"})
        first = [{"role": "user", "content": "echo before the nap"}]
        assert say(c, first) == "before the nap"
        session = next(s for s in api_sessions(daemon) if s["status"] == "running")

        def stopped() -> bool:
            url = f"{daemon.url}/api/sessions/{session['id']}"
            return httpx.get(url, headers=daemon.owner_headers()).json()["status"] == "exited"

        wait_until(stopped, "the idle agent process was never stopped")
        history = [*first, {"role": "assistant", "content": "before the nap"}]
        prompts = json.loads(say(c, [*history, {"role": "user", "content": "prompts"}]))
        # The same svc session, resumed: the agent loaded its own session back, so it got only
        # the new tail (a new process knows only what it was sent since).
        assert prompts == ["prompts"]
        again = httpx.get(
            f"{daemon.url}/api/sessions/{session['id']}", headers=daemon.owner_headers()
        )
        assert again.json()["status"] == "running"
    finally:
        daemon.stop()
        fake.stop()
