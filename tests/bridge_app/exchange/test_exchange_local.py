"""The bridge's answers that need no model call, in-process: model lists in each client's shape,
token counts (by the provider when it speaks the client's dialect, else estimated), and the
Responses turns svc remembers for `previous_response_id`."""

from __future__ import annotations

import pytest

from bridge_app import exchange, ir, routes
from harness.fakes.fake_provider import FakeProvider
from tests.bridge_app.exchange.harness import (
    ALIAS,
    body_for,
    call,
    frames,
    read,
    route,
    sent,
    whole,
)

# --- what needs no model call ------------------------------------------------------------------


def test_model_lists_name_aliases_first_in_the_clients_shape() -> None:
    listed = exchange.models(route("anthropic", tail="v1/models"))
    assert [m["id"] for m in whole(listed)["data"]] == [ALIAS, "fake-model"]
    assert whole(listed)["has_more"] is False
    gemini = whole(exchange.models(route("gemini", "chat", tail="v1beta/models")))
    assert [m["name"] for m in gemini["models"]] == [f"models/{ALIAS}", "models/fake-model"]
    one = whole(exchange.models(route("openai-chat", "claude", tail=f"v1/models/{ALIAS}")))
    assert one == {"id": ALIAS, "object": "model", "created": 0, "owned_by": "svc"}


@pytest.mark.parametrize(
    ("client", "tail"),
    [("openai-chat", "v1/models/gpt-unknown"), ("gemini", "v1beta/models/gpt-unknown")],
)
def test_a_model_the_profile_does_not_serve_is_404(client: str, tail: str) -> None:
    with pytest.raises(ir.BridgeError) as err:
        exchange.models(route(client, tail=tail))
    assert err.value.status == 404 and "gpt-unknown" in err.value.message


def test_models_of_an_unknown_profile_are_404() -> None:
    with pytest.raises(ir.BridgeError) as err:
        exchange.models(route("openai-chat", "nope", tail="v1/models"))
    assert err.value.status == 404


async def test_tokens_are_counted_by_a_provider_of_the_same_dialect(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    body = body_for("anthropic", "xt-1")
    reply = await exchange.count_tokens(
        bridge_parts, route("anthropic", tail="v1/messages/count_tokens"), body
    )
    assert whole(reply) == {"input_tokens": 42}  # the fake's count, not an estimate
    rec = fake.last("xt-1")
    assert rec.path == "/v1/messages/count_tokens" and rec.body["model"] == "fake-model"
    gemini = route("gemini", tail=f"v1beta/models/{ALIAS}:countTokens")
    assert whole(await exchange.count_tokens(bridge_parts, gemini, body_for("gemini", "xt-2"))) == {
        "totalTokens": 42
    }
    assert fake.last("xt-2").path.endswith("/models/fake-model:countTokens")


@pytest.mark.parametrize(
    ("client", "profile", "tail"),
    [
        ("openai-responses", "claude", "v1/responses/input_tokens"),  # another dialect: estimated
        ("anthropic", "claude-down", "v1/messages/count_tokens"),  # its endpoint fails: estimated
    ],
)
async def test_tokens_are_estimated_when_the_provider_cannot_count(
    client: str, profile: str, tail: str, bridge_parts: exchange.Parts
) -> None:
    text = "x" * 400
    reply = await exchange.count_tokens(
        bridge_parts, route(client, profile, tail=tail), body_for(client, text)
    )
    count = whole(reply)["input_tokens"]
    assert count == 100  # about four characters a token


# --- Responses turns svc remembers -------------------------------------------------------------


def stored_route(response_id: str) -> routes.Route:
    return route("openai-responses", "claude", tail=f"v1/responses/{response_id}")


async def test_a_translated_responses_turn_is_remembered_recalled_and_deleted(
    fake: FakeProvider,
    bridge_parts: exchange.Parts,
) -> None:
    first = whole(await call(bridge_parts, "openai-responses", "xm-1 first", "claude"))
    assert first["id"].startswith("resp_") and first["model"] == ALIAS
    assert whole(exchange.stored_response(bridge_parts, stored_route(first["id"]), "GET")) == first
    second = await call(
        bridge_parts, "openai-responses", "xm-1 second", "claude", previous_response_id=first["id"]
    )
    assert second.status == 200
    history = fake.last("xm-1 second").body["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[0]["content"][0]["text"] == "xm-1 first"
    gone = exchange.stored_response(bridge_parts, stored_route(first["id"]), "DELETE")
    assert whole(gone) == {"id": first["id"], "object": "response.deleted", "deleted": True}
    with pytest.raises(ir.BridgeError) as err:
        exchange.stored_response(bridge_parts, stored_route(first["id"]), "GET")
    assert err.value.status == 404


async def test_a_streamed_responses_turn_is_remembered_as_the_client_saw_it(
    bridge_parts: exchange.Parts,
) -> None:
    raw = await read(await call(bridge_parts, "openai-responses", "xm-2", "gemini", stream=True))
    final = frames(raw)[-1][1]
    assert final["type"] == "response.completed"
    stored = whole(
        exchange.stored_response(bridge_parts, stored_route(final["response"]["id"]), "GET")
    )
    assert stored == final["response"]


async def test_store_false_and_passthrough_turns_are_not_remembered(
    bridge_parts: exchange.Parts,
) -> None:
    unstored = whole(await call(bridge_parts, "openai-responses", "xm-3", "claude", store=False))
    passed = whole(await call(bridge_parts, "openai-responses", "xm-4", "responses"))
    for response_id in (unstored["id"], passed["id"]):
        with pytest.raises(ir.BridgeError) as err:
            exchange.stored_response(bridge_parts, stored_route(response_id), "GET")
        assert err.value.status == 404


async def test_an_unknown_previous_response_is_404_before_any_call(
    fake: FakeProvider, bridge_parts: exchange.Parts
) -> None:
    with pytest.raises(ir.BridgeError) as err:
        await call(
            bridge_parts, "openai-responses", "xm-5", "claude", previous_response_id="resp_nope"
        )
    assert err.value.status == 404 and "resp_nope" in err.value.message
    assert not sent(fake, "xm-5")


def test_stored_responses_answer_get_and_delete_only(bridge_parts: exchange.Parts) -> None:
    with pytest.raises(ir.BridgeError) as err:
        exchange.stored_response(bridge_parts, stored_route("resp_x"), "POST")
    assert err.value.status == 405
