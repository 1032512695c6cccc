"""Usage (contract §16): every bridge request records the tokens the provider reported —
translated or passed through, streamed or not, in all 16 dialect pairs — attributed to the hosted
session its scope names and to that session's subagent turn, priced from the profile's `prices`,
and summed by /api/usage (and `manage.py usage`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from bridge_app import usage
from bridge_app.models import BridgeRequest
from bridge_app.services import bridge_requests_record as write_rows  # before the fixture's patch
from core import config
from core.settings_schema import parse_settings
from harness.fakes import bridge_setup
from harness.fakes.bridge_fake_plan import extract, plan
from harness.fakes.bridge_inprocess import DRIVERS, IDS, PAIRS, Bridge, ask, chat
from harness.fakes.bridge_setup import ALIAS, DIALECTS, PROFILE
from harness.fakes.fake_provider import FakeProvider

PRICE = {"input": 3.0, "output": 15.0, "cached_input": 0.3}  # USD per million tokens


@pytest.fixture(scope="module")
def profiles(fake: FakeProvider) -> Iterator[None]:
    """The harness's profiles, each with prices for the fake's model."""
    path: Path = config.settings_path()
    before = path.read_text() if path.exists() else None
    settings = bridge_setup.bridge_settings(fake)
    for profile in settings["profiles"].values():
        profile["prices"] = {"fake-model": PRICE}
    config.write_settings(settings)
    yield
    if before is None:
        path.unlink(missing_ok=True)
    else:
        config.write_settings(json.loads(before or "{}"))


async def logged(bridge: Bridge, runtime: Any) -> dict[str, Any]:
    await runtime.requestlog.flush()
    rows = [r for r in bridge.logged if r.get("input_tokens") is not None]
    assert rows, bridge.logged
    return rows[-1]


def reported(bridge: Bridge, provider: str, marker: str) -> tuple[int, int]:
    """What the fake provider reported for the request carrying `marker`."""
    return plan(extract(provider, bridge.fake.last(marker).body), "fake-model").usage


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("client", "provider"), PAIRS, ids=IDS)
async def test_each_request_records_the_usage_the_provider_reported(
    bridge: Bridge, parts: Any, client: str, provider: str, stream: bool
) -> None:
    marker = f"usage-{client}-{provider}-{stream}"
    await ask(bridge, client, provider, marker, stream)
    row = await logged(bridge, parts)
    assert (row["input_tokens"], row["output_tokens"]) == reported(bridge, provider, marker)
    assert row["cached_input_tokens"] == row["reasoning_tokens"] == 0
    assert row["upstream_model"] == "fake-model" and row["duration_ms"] > 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("dialect", DIALECTS)
async def test_bytes_relayed_untouched_are_metered_too(
    bridge: Bridge, parts: Any, dialect: str, stream: bool
) -> None:
    """Same dialect and the upstream id itself: the provider's bytes go out as they came."""
    marker = f"raw-{dialect}-{stream}"
    await DRIVERS[dialect](bridge.sdk(dialect, PROFILE[dialect]), "fake-model", marker, stream)
    row = await logged(bridge, parts)
    assert (row["input_tokens"], row["output_tokens"]) == reported(bridge, dialect, marker)


@pytest.mark.parametrize("model", ["fake-model", ALIAS], ids=["relayed", "rewritten"])
async def test_a_chat_stream_that_did_not_ask_for_usage_is_metered_and_gets_none(
    bridge: Bridge, parts: Any, model: str
) -> None:
    """OpenAI Chat streams report usage only when `stream_options.include_usage` asks (most
    agents never do): svc asks the provider itself, meters it, and keeps the usage-only chunk
    from a client that did not ask for it."""
    marker = f"unasked-usage-{model}"
    client = bridge.sdk("openai-chat", PROFILE["openai-chat"])
    stream = await client.chat.completions.create(
        model=model, stream=True, messages=[{"role": "user", "content": marker}]
    )
    chunks = [chunk async for chunk in stream]
    sent = bridge.fake.last(marker).body
    assert sent["stream_options"] == {"include_usage": True}  # svc asked the provider
    assert chunks and all(c.choices for c in chunks)  # … and kept its answer to itself
    assert all(c.usage is None for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks)
    row = await logged(bridge, parts)
    assert (row["input_tokens"], row["output_tokens"]) == reported(bridge, "openai-chat", marker)
    assert row["input_tokens"] > 0


async def test_a_chat_stream_that_asked_for_usage_still_gets_it(bridge: Bridge, parts: Any) -> None:
    marker = "asked-usage"
    client = bridge.sdk("openai-chat", PROFILE["openai-chat"])
    stream = await client.chat.completions.create(
        model="fake-model",
        stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": marker}],
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[-1].usage is not None and not chunks[-1].choices
    inp, out = reported(bridge, "openai-chat", marker)
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (inp, out)


def test_the_meter_reads_cached_and_reasoning_tokens_in_every_dialect() -> None:
    m = usage.Meter("openai-chat")
    m.whole(
        {
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": 60},
                "completion_tokens_details": {"reasoning_tokens": 30},
            }
        }
    )
    assert m.fields() == {
        "input_tokens": 100,
        "output_tokens": 40,
        "cached_input_tokens": 60,
        "reasoning_tokens": 30,
    }
    a = usage.Meter("anthropic")  # stream: input at message_start, output at message_delta
    a.scan(
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
        b'{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}\n\n'
    )
    a.scan(b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":7}}')
    assert a.fields() == {
        "input_tokens": 100,
        "output_tokens": 7,
        "cached_input_tokens": 90,
        "reasoning_tokens": 0,
    }
    g = usage.Meter("gemini")
    meta = {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 3}
    g.event("", {"usageMetadata": {**meta, "cachedContentTokenCount": 4}})
    assert g.fields() == {
        "input_tokens": 5,
        "output_tokens": 5,
        "cached_input_tokens": 4,
        "reasoning_tokens": 3,
    }
    r = usage.Meter("openai-responses")
    r.event(
        "response.completed",
        {
            "type": "response.completed",
            "response": {
                "usage": {
                    "input_tokens": 8,
                    "output_tokens": 6,
                    "input_tokens_details": {"cached_tokens": 2},
                    "output_tokens_details": {"reasoning_tokens": 1},
                }
            },
        },
    )
    assert r.fields() == {
        "input_tokens": 8,
        "output_tokens": 6,
        "cached_input_tokens": 2,
        "reasoning_tokens": 1,
    }


def test_cost_prices_cached_input_apart_and_unpriced_models_stay_null() -> None:
    row = {"input_tokens": 1_000_000, "cached_input_tokens": 400_000, "output_tokens": 100_000}
    assert usage.cost({"m": PRICE}, "m", row) == pytest.approx(0.6 * 3 + 0.4 * 0.3 + 0.1 * 15)
    assert usage.cost({"m": {"input": 2.0}}, "m", row) == pytest.approx(2.0)  # cached at input
    assert usage.cost({"m": PRICE}, "other", row) is None


def test_prices_are_parsed_leniently() -> None:
    prices = {"m": {"input": 3, "output": "lots", "cached_input": 0.3, "junk": 1}, "bad": 7}
    raw = {"profiles": {"p": {"provider": "anthropic", "base_url": "http://x", "prices": prices}}}
    profile = parse_settings(Path("settings.json"), raw).profiles["p"]
    assert profile.prices == {"m": {"input": 3.0, "cached_input": 0.3}}


@pytest.mark.django_db(transaction=True)
async def test_a_session_scope_attributes_usage_to_the_session_and_its_turn(
    bridge: Bridge, parts: Any
) -> None:
    from sessions_app.models import Session
    from subagents_app.models import Subagent, SubagentTurn

    def make() -> tuple[str, str, str]:
        parent = Session.objects.create(agent="claude", workspace="/w")
        child = Session.objects.create(agent="codex", workspace="/w")
        turn = SubagentTurn.objects.create(mode="parallel", cwd="/w", parent_session=parent)
        Subagent.objects.create(turn=turn, name="a", agent="codex", session=child)
        return str(parent.id), str(child.id), str(turn.id)

    parent, child, turn = await sync_to_async(make)()
    # The parent's scope as svc hands it out now (contract §0), the child's as it did before.
    mine, legacy = f"claude.{parent}", f"s-{child}"
    for scope, stream in ((mine, False), (legacy, True), ("tests", False)):
        url = bridge.base_url("openai-chat", PROFILE["anthropic"], scope)
        await chat(bridge.openai(url, max_retries=0), ALIAS, f"attr-{scope}", stream)
    await parts.requestlog.flush()
    await sync_to_async(write_rows)(rows=bridge.logged)

    def read() -> dict[str, Any]:
        rows = BridgeRequest.objects.filter(scope__in=[mine, legacy, "tests"])
        return {r.scope: r for r in rows}

    rows = await sync_to_async(read)()
    assert (rows[mine].session_id, rows[mine].turn_id) == (parent, "")
    assert (rows[legacy].session_id, rows[legacy].turn_id) == (child, turn)
    assert (rows["tests"].session_id, rows["tests"].turn_id) == ("", "")
    for r in rows.values():
        inp, out = reported(bridge, "anthropic", f"attr-{r.scope}")
        assert (r.input_tokens, r.output_tokens) == (inp, out)
        assert r.cost_usd == pytest.approx((inp * 3.0 + out * 15.0) / 1e6)

    def grouped(query: str) -> Any:
        api = Client(headers={"Authorization": f"Bearer {config.current_auth().owner_token}"})
        return api.get(f"/api/usage?{query}")

    by_turn = (await sync_to_async(grouped)("group_by=turn")).json()
    assert [(r["turn_id"], r["requests"]) for r in by_turn] == [(turn, 1)]
    by_session = (await sync_to_async(grouped)("group_by=session")).json()
    assert {r["session_id"] for r in by_session} == {parent, child}
    assert {r["session_id"]: (r["title"], r["agent"]) for r in by_session} == {
        parent: ("", "claude"),
        child: ("", "codex"),
    }
    by_profile = (await sync_to_async(grouped)("group_by=profile")).json()
    claude = next(r for r in by_profile if r["profile_id"] == PROFILE["anthropic"])
    assert claude["requests"] == 3
    assert claude["input_tokens"] == sum(r.input_tokens for r in rows.values())
    assert claude["output_tokens"] == sum(r.output_tokens for r in rows.values())
    assert claude["cost_usd"] == pytest.approx(sum(r.cost_usd for r in rows.values()), abs=1e-6)
    assert set(claude) == {
        "profile_id",
        "requests",
        "errors",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "reasoning_tokens",
        "cost_usd",
    }
    day = (await sync_to_async(grouped)("group_by=day")).json()
    assert sum(r["requests"] for r in day) == 3 and all(len(r["day"]) == 10 for r in day)
    assert (await sync_to_async(grouped)("group_by=model&since=2999-01-01")).json() == []
    bad = await sync_to_async(grouped)("group_by=week")
    assert bad.status_code == 400
    assert (
        "group_by must be one of session, turn, profile, model, day"
        in bad.json()["error"]["message"]
    )
    assert (await sync_to_async(grouped)("group_by=day&since=yesterday")).status_code == 400
