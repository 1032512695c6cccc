"""The bridge in process for the official SDKs: the fake provider and the profiles for a test
module, each SDK's async client pointed at the bridge's ASGI app through an ASGITransport (no
daphne, no socket on svc's side), and the conversations of harness/fakes/bridge_clients.py driven
through those async clients (the sync drivers there serve the live-daemon tests). Used by
tests/bridge_app/test_sdk_matrix.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import types

from bridge_app import services
from bridge_app.views import application
from core import config
from harness.fakes import bridge_clients as drive
from harness.fakes import bridge_setup
from harness.fakes.bridge_clients import SYSTEM, Answer
from harness.fakes.bridge_setup import ALIAS, DIALECTS, PROFILE
from harness.fakes.fake_provider import FakeProvider
from harness.own_connection import served_on_own_connection
from harness.runtime import scoped
from svcproject.parts import Parts

PAIRS = [(c, p) for c in DIALECTS for p in DIALECTS]
IDS = [f"{c}->{p}" for c, p in PAIRS]
KEY_HEADER = {
    "openai-chat": "authorization",
    "openai-responses": "authorization",
    "anthropic": "x-api-key",
    "gemini": "x-goog-api-key",
}
# What a client on this host addresses: the bridge's gate wants it loopback. It comes from a
# loopback connection of the test's own (harness.own_connection): the gate asks who opened it.
SVC = "http://127.0.0.1:8000"
CLIENT_KEY = "client-key-never-forwarded"


# --- the fake provider, the profiles, and the SDKs pointed at the ASGI app ---------------------


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    provider = FakeProvider().start()
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def profiles(fake: FakeProvider) -> Iterator[None]:
    """settings.json names the fake under every profile; the worker's own file comes back."""
    path: Path = config.settings_path()
    before = path.read_text() if path.exists() else None
    config.write_settings(bridge_setup.bridge_settings(fake))
    yield
    if before is None:
        path.unlink(missing_ok=True)
    else:
        config.write_settings(json.loads(before or "{}"))


class NoSyncCalls(httpx2.BaseTransport):
    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        raise AssertionError("these tests drive google-genai's async client (.aio) only")


class Bridge:
    """The bridge's ASGI app as a client on this host sees it, and the fake provider behind it."""

    def __init__(self, fake: FakeProvider, parts: Parts) -> None:
        self.fake, self.parts = fake, parts
        self.app = served_on_own_connection(scoped(application, parts))
        self.logged: list[dict[str, Any]] = []  # the request log's rows
        self._http: list[Any] = []
        self._gemini: list[genai.Client] = []
        # google-genai builds a sync client next to the async one (and an SSL context for each,
        # ~80 ms) unless given both: the sync one is this, which nothing here uses.
        self._no_sync = httpx2.Client(transport=NoSyncCalls())

    def _transport_client(self) -> httpx2.AsyncClient:
        # The SDKs (openai, anthropic, google-genai) send with httpx2; anthropic takes nothing else.
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=self.app), base_url=SVC)
        self._http.append(http)
        return http

    def base_url(self, client: str, profile: str, scope: str = "tests") -> str:
        prefix = f"{SVC}/svc/local-api/{profile}/{scope}/{client}"
        return f"{prefix}/v1" if client.startswith("openai") else prefix

    def sdk(self, client: str, profile: str) -> Any:
        """The official async client for `client`, pointed at svc; a dummy key svc ignores."""
        url = self.base_url(client, profile)
        if client.startswith("openai"):
            return self.openai(url, max_retries=0)
        if client == "anthropic":
            return anthropic.AsyncAnthropic(
                base_url=url,
                api_key=CLIENT_KEY,
                max_retries=0,
                http_client=self._transport_client(),
            )
        return self.gemini(url)

    def openai(self, url: str, **kwargs: Any) -> openai.AsyncOpenAI:
        api_key = kwargs.pop("api_key", CLIENT_KEY)
        return openai.AsyncOpenAI(
            base_url=url, api_key=api_key, http_client=self._transport_client(), **kwargs
        )

    def gemini(self, url: str) -> Any:
        options = types.HttpOptions(
            base_url=url, httpx_async_client=self._transport_client(), httpx_client=self._no_sync
        )
        client = genai.Client(api_key=CLIENT_KEY, http_options=options)
        self._gemini.append(client)  # keeps the sync shell alive while its .aio is in use
        return client.aio

    async def post(self, url: str, **kwargs: Any) -> httpx.Response:
        """A plain HTTP request (what curl or an unofficial client sends)."""
        transport = httpx.ASGITransport(app=self.app)
        async with httpx.AsyncClient(transport=transport) as http:
            return await http.post(url, **kwargs)

    async def aclose(self) -> None:
        for client in self._gemini:
            await client.aio.aclose()
            client.close()
        for http in self._http:
            await http.aclose()
        self._no_sync.close()


@pytest.fixture
async def bridge(
    fake: FakeProvider, profiles: None, parts: Parts, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Bridge]:
    b = Bridge(fake, parts)
    monkeypatch.setattr(
        services, "bridge_requests_record", lambda *, rows, **_: b.logged.extend(rows)
    )
    yield b
    await b.aclose()
    # What Runtime.stop does for the two parts the bridge used.
    await parts.requestlog.flush()
    await parts.upstream.aclose()


# --- the drivers: harness/fakes/bridge_clients.py's conversations, through the async clients ------


async def chat(
    client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None
) -> Answer:
    kwargs = {
        "model": model,
        "messages": drive._chat_messages(prompt, tools_round),
        "tools": drive.CHAT_TOOLS,
    }
    if not stream:
        r = await client.chat.completions.create(**kwargs)
        msg = r.choices[0].message
        calls = [
            (c.id, c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls or []
        ]
        return Answer(
            msg.content or "",
            calls,
            drive.CHAT_STOP[r.choices[0].finish_reason],
            r.model,
            (r.usage.prompt_tokens, r.usage.completion_tokens),
            (msg.model_extra or {}).get("reasoning_content") or "",
        )
    out, slots, models = Answer(), {}, set()
    chunks = await client.chat.completions.create(
        **kwargs, stream=True, stream_options={"include_usage": True}
    )
    async for chunk in chunks:
        models.add(chunk.model)
        if chunk.usage:
            out.usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        for choice in chunk.choices:
            out.text += choice.delta.content or ""
            out.reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
            for tc in choice.delta.tool_calls or []:
                slot = slots.setdefault(tc.index, ["", "", ""])
                slot[0] = tc.id or slot[0]
                slot[1] = (tc.function.name or slot[1]) if tc.function else slot[1]
                slot[2] += (tc.function.arguments or "") if tc.function else ""
            if choice.finish_reason:
                out.stop = drive.CHAT_STOP[choice.finish_reason]
    out.calls = [(i, n, json.loads(a)) for i, n, a in slots.values()]
    out.model = ",".join(sorted(models))
    return out


async def responses(
    client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None
) -> Answer:
    kwargs = {
        "model": model,
        "instructions": SYSTEM,
        "input": drive._responses_input(prompt, tools_round),
        "tools": drive.RESPONSES_TOOLS,
    }
    if stream:
        async with client.responses.stream(**kwargs) as st:  # the strict helper: event order
            # response.incomplete (max tokens) is final too; get_final_response only knows completed
            finals = [
                e.response
                async for e in st
                if e.type in ("response.completed", "response.incomplete")
            ]
            r = finals[-1]
    else:
        r = await client.responses.create(**kwargs)
    calls = [
        (i.call_id, i.name, json.loads(i.arguments)) for i in r.output if i.type == "function_call"
    ]
    stop = "max" if r.status == "incomplete" else "tool" if calls else "end"
    reasoning = "".join(s.text for i in r.output if i.type == "reasoning" for s in i.summary)
    usage = (r.usage.input_tokens, r.usage.output_tokens)
    return Answer(r.output_text, calls, stop, r.model, usage, reasoning)


async def messages(
    client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None
) -> Answer:
    kwargs = {
        "model": model,
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": drive._anthropic_messages(prompt, tools_round),
        "tools": drive.ANTHROPIC_TOOLS,
    }
    if stream:
        async with client.messages.stream(**kwargs) as st:
            m = await st.get_final_message()
    else:
        m = await client.messages.create(**kwargs)
    text = "".join(b.text for b in m.content if b.type == "text")
    calls = [(b.id, b.name, b.input) for b in m.content if b.type == "tool_use"]
    return Answer(
        text,
        calls,
        drive.ANTHROPIC_STOP[m.stop_reason],
        m.model,
        (m.usage.input_tokens, m.usage.output_tokens),
        "".join(b.thinking for b in m.content if b.type == "thinking"),
    )


async def gemini(
    client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None
) -> Answer:
    generation = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=drive.GEMINI_TOOLS,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents = drive._gemini_contents(prompt, tools_round)
    call = {"model": model, "contents": contents, "config": generation}
    if stream:
        chunks = [r async for r in await client.models.generate_content_stream(**call)]
    else:
        chunks = [await client.models.generate_content(**call)]
    out = Answer()
    for r in chunks:
        for part in (
            r.candidates[0].content.parts or [] if r.candidates and r.candidates[0].content else []
        ):
            if part.text and part.thought:
                out.reasoning += part.text
            elif part.text:
                out.text += part.text
            if part.function_call:
                fc = part.function_call
                out.calls.append((fc.id, fc.name, dict(fc.args or {})))
        if r.candidates and r.candidates[0].finish_reason:
            reason = r.candidates[0].finish_reason.value
            out.stop = {"STOP": "tool" if out.calls else "end", "MAX_TOKENS": "max"}.get(
                reason, reason
            )
        if r.usage_metadata:
            out.usage = (
                r.usage_metadata.prompt_token_count or 0,
                r.usage_metadata.candidates_token_count or 0,
            )
        out.model = r.model_version or out.model
    return out


DRIVERS = {
    "openai-chat": chat,
    "openai-responses": responses,
    "anthropic": messages,
    "gemini": gemini,
}


async def ask(
    bridge: Bridge, client: str, provider: str, prompt: str, stream: bool, tools_round=None
) -> Answer:
    return await DRIVERS[client](
        bridge.sdk(client, PROFILE[provider]), ALIAS, prompt, stream, tools_round
    )
