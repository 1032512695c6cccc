"""`translate.prepare`: a route, the client's decoded body and a profile in settings.json in, the
outbound request out (docs/bridge.md, "Behaviour where the contract is silent"): which model goes
upstream, passthrough or translation, content dropped for what the model cannot take, and the
Responses turns svc remembers. Where the request goes and with which headers:
test_upstream_headers.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bridge_app import bodies, ir, translate
from tests.bridge_app.prepare.harness import (
    PNG,
    chat,
    chat_body,
    gemini,
    messages,
    prepare,
    responses,
    sent,
)

# --- model ids ---------------------------------------------------------------------------------


def test_an_alias_goes_upstream_as_its_model_and_the_client_keeps_its_own_id() -> None:
    out = prepare(chat("claude"), chat_body())
    assert (out.requested, out.upstream_model) == ("client-model", "up-model")
    assert sent(out)["model"] == "up-model"


def test_a_served_model_goes_upstream_as_it_is() -> None:
    out = prepare(chat("claude"), chat_body(model="up-model-2"))
    assert out.upstream_model == out.requested == "up-model-2"


def test_a_model_the_profile_does_not_serve_is_404_naming_it() -> None:
    with pytest.raises(ir.BridgeError) as err:
        prepare(chat("claude"), chat_body(model="gpt-unknown"))
    assert err.value.status == 404 and "gpt-unknown" in err.value.message
    assert "claude" in err.value.message


def test_a_profile_without_a_model_list_forwards_any_id() -> None:
    out = prepare(chat("open"), chat_body(model="whatever-1"))
    assert out.upstream_model == "whatever-1"
    assert out.url == "https://open.example/v1/chat/completions"  # the trailing / is gone


def test_an_unknown_profile_is_404_naming_it() -> None:
    with pytest.raises(ir.BridgeError) as err:
        prepare(chat("nope"), chat_body())
    assert err.value.status == 404 and "'nope'" in err.value.message


@pytest.mark.parametrize("model", [None, "", 7])
def test_a_missing_or_malformed_model_is_400(model: Any) -> None:
    with pytest.raises(ir.BridgeError) as err:
        prepare(messages(), {"model": model, "max_tokens": 5, "messages": []})
    assert err.value.status == 400 and "model" in err.value.message


def test_a_models_prefix_is_not_part_of_the_id() -> None:
    out = prepare(chat("claude"), chat_body(model="models/client-model"))
    assert (out.requested, out.upstream_model) == ("client-model", "up-model")


def test_gemini_clients_name_the_model_in_the_path() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    out = prepare(gemini("claude", "client-model"), body)
    assert (out.requested, out.upstream_model, out.stream) == ("client-model", "up-model", False)
    assert sent(out)["model"] == "up-model"
    with pytest.raises(ir.BridgeError) as err:
        prepare(gemini("claude", "not-served"), body)
    assert err.value.status == 404


# --- passthrough or translation ----------------------------------------------------------------


def test_same_dialect_and_same_model_forwards_the_clients_text_untouched() -> None:
    text = '{"model":"up-model",  "messages":[{"role":"user","content":"hi"}], "x_vendor": 1}'
    out = translate.prepare(chat(), json.loads(text), text)
    assert out.passthrough and out.payload is text  # not even re-encoded
    assert bytes(out.take_body()) == text.encode()
    assert out.history is None


def test_same_dialect_with_an_alias_only_rewrites_the_model() -> None:
    body = chat_body(x_vendor={"keep": True}, temperature=3.5)
    out = prepare(chat(), body)
    assert out.passthrough
    # Nothing but the model changed: a vendor field and an out-of-range value are not judged.
    assert sent(out) == {**body, "model": "up-model"}


def test_gemini_passthrough_forwards_the_text_since_the_model_is_in_the_url() -> None:
    text = '{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}'
    out = translate.prepare(gemini("gemini", "client-model"), json.loads(text), text)
    assert out.passthrough and out.payload is text
    assert out.url == "https://gemini.example/v1beta/models/up-model:generateContent"


def test_another_dialect_is_translated_into_the_providers_shape() -> None:
    body = chat_body("hello", max_tokens=50)
    body["messages"].insert(0, {"role": "system", "content": "be brief"})
    out = prepare(chat("claude"), body)
    assert not out.passthrough and isinstance(out.payload, ir.Request)
    assert sent(out) == {
        "model": "up-model",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        "system": "be brief",
    }


def test_the_body_is_handed_over_once() -> None:
    out = prepare(chat("claude"), chat_body())
    sent(out)
    assert out.payload is None


def test_a_large_body_is_encoded_piece_by_piece_with_an_exact_length() -> None:
    body = chat_body("x" * (bodies.LARGE + 10))
    out = prepare(chat("claude"), body)
    upstream = out.take_body()
    assert isinstance(upstream, bodies.JsonBody)
    whole = upstream.whole()
    assert upstream.length == len(whole) and json.loads(whole)["model"] == "up-model"


def test_gemini_stream_without_alt_sse_is_translated_even_to_gemini() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    out = prepare(gemini("gemini", "up-model", stream=True, sse=False), body)
    assert not out.passthrough and out.stream and not out.sse
    # svc still asks the provider for SSE: it writes the JSON array itself.
    assert out.url == "https://gemini.example/v1beta/models/up-model:streamGenerateContent?alt=sse"


@pytest.mark.parametrize(
    ("r", "body", "stream"),
    [
        (chat(), chat_body(stream=True), True),
        (chat(), chat_body(stream=False), False),
        (
            messages(),
            {
                "model": "up-model",
                "max_tokens": 5,
                "stream": True,
                "messages": [{"role": "user", "content": "hi"}],
            },
            True,
        ),
    ],
)
def test_stream_follows_the_clients_flag(r: Any, body: dict[str, Any], stream: bool) -> None:
    out = translate.prepare(r, body, json.dumps(body))
    assert out.stream is stream
    assert out.headers["accept"] == ("text/event-stream" if stream else "application/json")


def test_chat_clients_get_usage_in_a_stream_only_when_they_ask() -> None:
    assert not prepare(chat("claude"), chat_body(stream=True)).include_usage
    asked = chat_body(stream=True, stream_options={"include_usage": True})
    assert prepare(chat("claude"), asked).include_usage
    body = {
        "model": "client-model",
        "max_tokens": 5,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert prepare(messages("chat"), body).include_usage  # other dialects always carry usage
    # A chat provider is asked for usage either way: the translated stream needs it.
    translated = sent(prepare(messages("chat"), body))
    assert translated["stream_options"] == {"include_usage": True}


# --- what the model cannot take ----------------------------------------------------------------


def _with_image(text: str = "look") -> dict[str, Any]:
    content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": PNG}}]
    return {"model": "client-model", "messages": [{"role": "user", "content": content}]}


def test_images_are_dropped_with_a_warning_even_between_the_same_dialects() -> None:
    out = prepare(chat("noimg"), _with_image())
    assert not out.passthrough  # the IR is needed to drop anything
    assert out.warnings == ["images dropped: the model does not take image input"]
    assert sent(out)["messages"] == [{"role": "user", "content": "look"}]


def test_a_restricted_profile_warns_only_about_what_was_there() -> None:
    out = prepare(chat("noimg"), chat_body())
    assert out.warnings == [] and not out.passthrough


def test_tools_are_dropped_with_a_warning_and_their_choice() -> None:
    body = {
        "model": "client-model",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "f"},
    }
    out = prepare(messages("notools"), body)
    assert out.warnings == ["tools dropped: the model does not take tools"]
    assert isinstance(out.payload, ir.Request) and out.payload.tool_choice is None
    upstream = sent(out)
    assert "tools" not in upstream and "tool_choice" not in upstream


def test_a_capable_target_keeps_images() -> None:
    out = prepare(chat("claude"), _with_image())
    assert out.warnings == []
    content = sent(out)["messages"][0]["content"]
    assert content[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }


# --- Responses state (svc remembers turns it translated) -----------------------------------------


def test_a_translated_responses_turn_is_to_be_remembered_unless_store_is_false() -> None:
    out = prepare(responses("claude"), {"model": "client-model", "input": "hi"})
    assert out.history is not None
    assert [(m.role, m.parts) for m in out.history] == [("user", [ir.Text("hi")])]
    unstored = {"model": "client-model", "input": "hi", "store": False}
    assert prepare(responses("claude"), unstored).history is None


def test_a_passed_through_responses_turn_is_left_to_the_provider() -> None:
    body = {"model": "client-model", "input": "hi", "previous_response_id": "resp_theirs"}
    out = prepare(responses(), body, recall=lambda _: pytest.fail("svc must not recall"))
    assert out.passthrough and out.history is None
    assert sent(out)["previous_response_id"] == "resp_theirs"


def test_previous_response_id_puts_the_remembered_turns_first() -> None:
    earlier = [ir.Message("user", [ir.Text("first")]), ir.Message("assistant", [ir.Text("one")])]
    asked: list[str] = []

    def recall(response_id: str) -> list[ir.Message]:
        asked.append(response_id)
        return earlier

    body = {"model": "client-model", "input": "second", "previous_response_id": "resp_1"}
    out = prepare(responses("claude"), body, recall=recall)
    assert asked == ["resp_1"]
    assert [m["role"] for m in sent(out)["messages"]] == ["user", "assistant", "user"]
    assert out.history is not None and len(out.history) == 3


@pytest.mark.parametrize("recall", [None, lambda _: None])
def test_an_unknown_previous_response_id_is_404(recall: Any) -> None:
    body = {"model": "client-model", "input": "x", "previous_response_id": "resp_gone"}
    with pytest.raises(ir.BridgeError) as err:
        prepare(responses("gemini"), body, recall=recall)
    assert err.value.status == 404 and "resp_gone" in err.value.message
