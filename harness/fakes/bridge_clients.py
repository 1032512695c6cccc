"""One conversation driven through each official SDK, reduced to a common `Answer` so the
16-pair tests can assert the same things for every client dialect.

Each driver sends: a system prompt, a multi-turn history, a base64 PNG in the last user turn,
and (for tool rounds) two tools; then, given the tool calls it got, the tool results."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from google.genai import types

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG).decode()
SYSTEM = "You are terse."
TOOL_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


@dataclass
class Answer:
    text: str = ""
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    stop: str = ""  # end | tool | max
    model: str = ""
    usage: tuple[int, int] = (0, 0)
    reasoning: str = ""


# --- OpenAI Chat -------------------------------------------------------------------------------


def _chat_messages(prompt: str, tools_round: Any = None) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
            ],
        },
    ]
    if tools_round:
        answer, results = tools_round
        calls = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in answer.calls
        ]
        msgs.append({"role": "assistant", "content": answer.text or None, "tool_calls": calls})
        msgs += [
            {"role": "tool", "tool_call_id": i, "content": results[i]} for i, _, _ in answer.calls
        ]
    return msgs


CHAT_TOOLS = [
    {"type": "function", "function": {"name": n, "description": n, "parameters": TOOL_SCHEMA}}
    for n in ("weather", "time")
]
CHAT_STOP = {"stop": "end", "tool_calls": "tool", "length": "max"}


def chat(client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None) -> Answer:
    kwargs = {"model": model, "messages": _chat_messages(prompt, tools_round), "tools": CHAT_TOOLS}
    if not stream:
        r = client.chat.completions.create(**kwargs)
        msg = r.choices[0].message
        calls = [
            (c.id, c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls or []
        ]
        return Answer(
            msg.content or "",
            calls,
            CHAT_STOP[r.choices[0].finish_reason],
            r.model,
            (r.usage.prompt_tokens, r.usage.completion_tokens),
            (msg.model_extra or {}).get("reasoning_content") or "",
        )
    out, calls, models = Answer(), {}, set()
    for chunk in client.chat.completions.create(
        **kwargs, stream=True, stream_options={"include_usage": True}
    ):
        models.add(chunk.model)
        if chunk.usage:
            out.usage = (chunk.usage.prompt_tokens, chunk.usage.completion_tokens)
        for choice in chunk.choices:
            out.text += choice.delta.content or ""
            out.reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, ["", "", ""])
                slot[0] = tc.id or slot[0]
                slot[1] = (tc.function.name or slot[1]) if tc.function else slot[1]
                slot[2] += (tc.function.arguments or "") if tc.function else ""
            if choice.finish_reason:
                out.stop = CHAT_STOP[choice.finish_reason]
    out.calls = [(i, n, json.loads(a)) for i, n, a in calls.values()]
    out.model = ",".join(sorted(models))
    return out


# --- OpenAI Responses --------------------------------------------------------------------------


RESPONSES_TOOLS = [
    {"type": "function", "name": n, "description": n, "parameters": TOOL_SCHEMA}
    for n in ("weather", "time")
]


def _responses_input(prompt: str, tools_round: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": prompt},
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{PNG_B64}",
                    "detail": "auto",
                },
            ],
        },
    ]
    if tools_round:
        answer, results = tools_round
        items += [
            {"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
            for i, n, a in answer.calls
        ]
        items += [
            {"type": "function_call_output", "call_id": i, "output": results[i]}
            for i, _, _ in answer.calls
        ]
    return items


def responses(
    client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None
) -> Answer:
    kwargs = {
        "model": model,
        "instructions": SYSTEM,
        "input": _responses_input(prompt, tools_round),
        "tools": RESPONSES_TOOLS,
    }
    if stream:
        with client.responses.stream(**kwargs) as st:  # the strict helper: enforces event order
            # response.incomplete (max tokens) is final too; get_final_response only knows completed
            finals = [
                e.response for e in st if e.type in ("response.completed", "response.incomplete")
            ]
            r = finals[-1]
    else:
        r = client.responses.create(**kwargs)
    calls = [
        (i.call_id, i.name, json.loads(i.arguments)) for i in r.output if i.type == "function_call"
    ]
    stop = "max" if r.status == "incomplete" else "tool" if calls else "end"
    reasoning = "".join(s.text for i in r.output if i.type == "reasoning" for s in i.summary)
    usage = (r.usage.input_tokens, r.usage.output_tokens)
    return Answer(r.output_text, calls, stop, r.model, usage, reasoning)


# --- Anthropic ---------------------------------------------------------------------------------


ANTHROPIC_TOOLS = [
    {"name": n, "description": n, "input_schema": TOOL_SCHEMA} for n in ("weather", "time")
]
ANTHROPIC_STOP = {"end_turn": "end", "tool_use": "tool", "max_tokens": "max"}


def _anthropic_messages(prompt: str, tools_round: Any) -> list[dict[str, Any]]:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
    }
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": prompt}, image]},
    ]
    if tools_round:
        answer, results = tools_round
        blocks = ([{"type": "text", "text": answer.text}] if answer.text else []) + [
            {"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in answer.calls
        ]
        msgs.append({"role": "assistant", "content": blocks})
        msgs.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": i, "content": results[i]}
                    for i, _, _ in answer.calls
                ],
            }
        )
    return msgs


def anthropic(
    client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None
) -> Answer:
    kwargs = {
        "model": model,
        "max_tokens": 256,
        "system": SYSTEM,
        "messages": _anthropic_messages(prompt, tools_round),
        "tools": ANTHROPIC_TOOLS,
    }
    if stream:
        with client.messages.stream(**kwargs) as st:
            m = st.get_final_message()
    else:
        m = client.messages.create(**kwargs)
    text = "".join(b.text for b in m.content if b.type == "text")
    calls = [(b.id, b.name, b.input) for b in m.content if b.type == "tool_use"]
    return Answer(
        text,
        calls,
        ANTHROPIC_STOP[m.stop_reason],
        m.model,
        (m.usage.input_tokens, m.usage.output_tokens),
        "".join(b.thinking for b in m.content if b.type == "thinking"),
    )


# --- Gemini ------------------------------------------------------------------------------------


def _gemini_contents(prompt: str, tools_round: Any) -> list[types.Content]:
    contents = [
        types.Content(role="user", parts=[types.Part(text="first")]),
        types.Content(role="model", parts=[types.Part(text="ok")]),
        types.Content(
            role="user",
            parts=[types.Part(text=prompt), types.Part.from_bytes(data=PNG, mime_type="image/png")],
        ),
    ]
    if tools_round:
        answer, results = tools_round
        calls = [
            types.Part(function_call=types.FunctionCall(id=i, name=n, args=a))
            for i, n, a in answer.calls
        ]
        contents.append(
            types.Content(
                role="model", parts=([types.Part(text=answer.text)] if answer.text else []) + calls
            )
        )
        responses_ = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=i, name=n, response={"output": results[i or n]}
                )
            )
            for i, n, _ in answer.calls
        ]
        contents.append(types.Content(role="user", parts=responses_))
    return contents


GEMINI_TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name=n, description=n, parameters_json_schema=TOOL_SCHEMA)
            for n in ("weather", "time")
        ]
    )
]


def gemini(client: Any, model: str, prompt: str, stream: bool, tools_round: Any = None) -> Answer:
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=GEMINI_TOOLS,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents = _gemini_contents(prompt, tools_round)
    chunks = (
        list(client.models.generate_content_stream(model=model, contents=contents, config=config))
        if stream
        else [client.models.generate_content(model=model, contents=contents, config=config)]
    )
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
    "anthropic": anthropic,
    "gemini": gemini,
}
