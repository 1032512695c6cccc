"""Gemini generateContent: model in the path, `data: ` SSE frames with whole response objects.

The SDK mixes camelCase and snake_case (`inlineData: {mime_type}`), so every field is read in
both spellings. Function calls may carry no id (pre-Gemini-3): ids are minted and tool results
are matched back by name.
"""

from __future__ import annotations

import re
from typing import Any

from bridge_app import ir
from bridge_app.dialects.common import dumps, items, merge_turns, number, obj, stop_list, text_of

NAME = "gemini"
PATHS: dict[str, str] = {}  # its operation is the `:method` of a model path (routes.py)
VERSIONED = re.compile(r"/v1(beta|alpha)?$")
FOREIGN_SIGNATURE = "skip_thought_signature_validator"
EFFORT_BUDGET = {"minimal": 512, "low": 1024, "medium": 4096, "high": 16384}

FINISH_OUT = {
    "end": "STOP",
    "stop_sequence": "STOP",
    "max_tokens": "MAX_TOKENS",
    "tool_use": "STOP",
    "filtered": "SAFETY",
    "pause": "STOP",
    "error": "OTHER",
}
FILTERED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def g(d: dict[str, Any], camel: str) -> Any:
    """A field in camelCase or snake_case: google-genai sends both."""
    if camel in d:
        return d[camel]
    return d.get(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), camel))


def finish_in(reason: str | None, has_calls: bool) -> ir.Stop:
    if reason in (None, "", "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "tool_use" if has_calls else "end"
    if reason == "MAX_TOKENS":
        return "max_tokens"
    return "filtered" if reason in FILTERED or reason.startswith("IMAGE") else "error"


def _lower_types(schema: Any) -> Any:
    """Schema from `types.Schema` arrives with OBJECT/STRING; JSON Schema wants lowercase."""
    if isinstance(schema, dict):
        return {
            k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


# --- requests --------------------------------------------------------------------------------


class _Ids:
    """Mints ids for id-less function calls and resolves function responses by name."""

    def __init__(self) -> None:
        self.pending: dict[str, list[str]] = {}

    def call(self, fc: dict[str, Any]) -> str:
        call_id = fc.get("id") or ir.new_id("call_")
        self.pending.setdefault(fc.get("name", ""), []).append(call_id)
        return call_id

    def response(self, fr: dict[str, Any]) -> str:
        queue = self.pending.get(fr.get("name", ""), [])
        if fr.get("id"):
            if fr["id"] in queue:
                queue.remove(fr["id"])
            return fr["id"]
        return queue.pop(0) if queue else ir.new_id("call_")


def _result_content(response: Any) -> list[ir.Text | ir.Image]:
    if isinstance(response, dict) and len(response) == 1:
        ((key, value),) = response.items()
        if key in ("output", "result", "content", "error") and isinstance(value, str):
            return [ir.Text(value)]
    return [ir.Text(dumps(response))]


def _part(part: dict[str, Any], ids: _Ids) -> ir.Part | None:
    if "text" in part:
        if part.get("thought"):
            return ir.Reasoning(part["text"], g(part, "thoughtSignature") or "", NAME)
        return ir.Text(part["text"])
    if (inline := g(part, "inlineData")) is not None:
        return ir.Image(
            media_type=g(inline, "mimeType") or "image/png", data=inline.get("data", "")
        )
    if (file := g(part, "fileData")) is not None:
        return ir.Image(media_type=g(file, "mimeType") or "", url=g(file, "fileUri") or "")
    if (fc := g(part, "functionCall")) is not None:
        meta = {"thought_signature": sig} if (sig := g(part, "thoughtSignature")) else {}
        return ir.ToolCall(ids.call(fc), fc.get("name", ""), dumps(fc.get("args") or {}), meta)
    if (fr := g(part, "functionResponse")) is not None:
        response = fr.get("response") or {}
        is_error = isinstance(response, dict) and set(response) == {"error"}
        return ir.ToolResult(
            ids.response(fr), _result_content(response), is_error, fr.get("name", "")
        )
    return None


def _tools(req: ir.Request, body: dict[str, Any]) -> None:
    for tool in items(body.get("tools"), "tools"):
        for decl in g(tool, "functionDeclarations") or []:
            schema = g(decl, "parametersJsonSchema") or _lower_types(decl.get("parameters"))
            req.tools.append(
                ir.Tool(
                    decl.get("name", ""),
                    decl.get("description", ""),
                    schema or {"type": "object", "properties": {}},
                )
            )
    config = g(g(body, "toolConfig") or {}, "functionCallingConfig") or {}
    mode = (config.get("mode") or "").upper()
    names = g(config, "allowedFunctionNames") or []
    if mode == "ANY" and len(names) == 1:
        req.tool_choice = {"name": names[0]}
    elif mode in ("AUTO", "NONE", "ANY", "VALIDATED"):
        req.tool_choice = {"ANY": "required", "VALIDATED": "auto"}.get(mode, mode.lower())


def _generation_config(req: ir.Request, cfg: dict[str, Any]) -> None:
    req.max_tokens = g(cfg, "maxOutputTokens")
    req.temperature = number(cfg.get("temperature"), "temperature")
    req.top_p = number(g(cfg, "topP"), "topP")
    req.top_k = g(cfg, "topK")
    req.stop = stop_list(g(cfg, "stopSequences"))
    req.seed = cfg.get("seed")
    if g(cfg, "responseMimeType") == "application/json":
        schema = g(cfg, "responseJsonSchema") or _lower_types(g(cfg, "responseSchema"))
        req.json_schema = {"name": "output", "schema": schema} if schema else {}
    thinking = g(cfg, "thinkingConfig") or {}
    if budget := g(thinking, "thinkingBudget"):
        req.reasoning_effort = "low" if budget <= 2048 else "medium" if budget <= 8192 else "high"
    elif level := g(thinking, "thinkingLevel"):
        req.reasoning_effort = str(level).lower()


def decode_request(body: dict[str, Any], model: str = "") -> ir.Request:
    req = ir.Request(model=model.removeprefix("models/"))
    system = g(body, "systemInstruction")
    if system:
        req.system.append(text_of(system.get("parts") if isinstance(system, dict) else system))
    ids = _Ids()
    for content in items(body.get("contents"), "contents"):
        content = obj(content, "each content")
        role = "assistant" if content.get("role") == "model" else "user"
        parts = [_part(obj(p, "each part"), ids) for p in items(content.get("parts"), "parts")]
        req.messages.append(ir.Message(role, [p for p in parts if p is not None]))
    if not req.messages:
        raise ir.bad_request("contents is not specified")
    _tools(req, body)
    _generation_config(req, obj(g(body, "generationConfig") or {}, "generationConfig"))
    return req


def _encode_part(part: ir.Part, names: dict[str, str]) -> list[dict[str, Any]]:
    if isinstance(part, ir.Text):
        return [{"text": part.text}]
    if isinstance(part, ir.Image):
        if part.url:
            return [{"fileData": {"mimeType": part.media_type or "image/png", "fileUri": part.url}}]
        return [{"inlineData": {"mimeType": part.media_type, "data": part.data}}]
    if isinstance(part, ir.ToolCall):
        out: dict[str, Any] = {
            "functionCall": {"id": part.id, "name": part.name, "args": ir.parse_args(part.args)}
        }
        if sig := part.meta.get("thought_signature"):
            out["thoughtSignature"] = sig
        return [out]
    if isinstance(part, ir.ToolResult):
        key = "error" if part.is_error else "output"
        name = part.name or names.get(part.call_id, "")
        fr = {
            "functionResponse": {"id": part.call_id, "name": name, "response": {key: part.text()}}
        }
        # Images a tool returned follow as plain parts of the same user turn.
        return [fr] + [
            p for img in part.content if isinstance(img, ir.Image) for p in _encode_part(img, names)
        ]
    return []  # reasoning text is not sent back to Gemini


def _generation_out(req: ir.Request) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        k: v
        for k, v in {
            "maxOutputTokens": req.max_tokens,
            "temperature": req.temperature,
            "topP": req.top_p,
            "topK": req.top_k,
            "seed": req.seed,
            "stopSequences": req.stop[:5] or None,
        }.items()
        if v is not None
    }
    if req.json_schema is not None:
        cfg["responseMimeType"] = "application/json"
        if req.json_schema.get("schema"):
            cfg["responseJsonSchema"] = req.json_schema["schema"]
    if budget := EFFORT_BUDGET.get(req.reasoning_effort or ""):
        cfg["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": True}
    return cfg


def _sign_foreign_calls(parts: list[dict[str, Any]]) -> None:
    """Gemini 3 rejects history whose first function call in a turn has no thought signature
    (calls made by another model never have one): Google documents this value as the bypass."""
    calls = [p for p in parts if "functionCall" in p]
    if calls and not any("thoughtSignature" in c for c in calls):
        calls[0]["thoughtSignature"] = FOREIGN_SIGNATURE


def encode_request(req: ir.Request) -> dict[str, Any]:
    names = req.tool_names()
    contents = []
    for msg in merge_turns(
        [ir.Message("user" if m.role == "system" else m.role, m.parts) for m in req.messages]
    ):
        parts = [p for part in msg.parts for p in _encode_part(part, names)]
        if msg.role == "assistant":
            _sign_foreign_calls(parts)
        if parts:
            contents.append(
                {"role": "model" if msg.role == "assistant" else "user", "parts": parts}
            )
    body: dict[str, Any] = {"contents": contents}
    if req.system:
        body["systemInstruction"] = {"parts": [{"text": s} for s in req.system if s]}
    if req.tools:
        decls = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.schema}
            for t in req.tools
        ]
        body["tools"] = [{"functionDeclarations": decls}]
        choice = req.tool_choice
        if isinstance(choice, dict):
            body["toolConfig"] = {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice["name"]]}
            }
        elif choice:
            mode = {"required": "ANY"}.get(choice, choice.upper())
            body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    if cfg := _generation_out(req):
        body["generationConfig"] = cfg
    return body


# --- responses -------------------------------------------------------------------------------


def _usage_in(u: dict[str, Any] | None) -> ir.Usage:
    u = u or {}
    thoughts = g(u, "thoughtsTokenCount") or 0
    return ir.Usage(
        input_total=(g(u, "promptTokenCount") or 0) + (g(u, "toolUsePromptTokenCount") or 0),
        cache_read=g(u, "cachedContentTokenCount") or 0,
        output_total=(g(u, "candidatesTokenCount") or 0) + thoughts,
        reasoning=thoughts,
    )


def _usage_out(u: ir.Usage) -> dict[str, Any]:
    out = {
        "promptTokenCount": u.input_total,
        "candidatesTokenCount": u.output_total - u.reasoning,
        "totalTokenCount": u.input_total + u.output_total,
    }
    if u.reasoning:
        out["thoughtsTokenCount"] = u.reasoning
    if u.cache_read:
        out["cachedContentTokenCount"] = u.cache_read
    return out


def decode_response(body: dict[str, Any]) -> ir.Response:
    candidates = body.get("candidates") or []
    resp = ir.Response(
        id=g(body, "responseId") or "",
        model=g(body, "modelVersion") or "",
        usage=_usage_in(g(body, "usageMetadata")),
    )
    if not candidates:
        resp.stop = "filtered" if g(g(body, "promptFeedback") or {}, "blockReason") else "end"
        return resp
    cand = candidates[0]
    ids = _Ids()
    parts = [_part(p, ids) for p in (cand.get("content") or {}).get("parts") or []]
    resp.parts = [p for p in parts if p is not None]
    has_calls = any(isinstance(p, ir.ToolCall) for p in resp.parts)
    resp.stop = finish_in(g(cand, "finishReason"), has_calls)
    return resp


def _out_parts(parts: list[ir.Part]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ir.Reasoning):
            if part.text:
                out.append({"text": part.text, "thought": True})
        else:
            out += _encode_part(part, {})
    return out


def encode_response(resp: ir.Response) -> dict[str, Any]:
    cand = {
        "content": {"role": "model", "parts": _out_parts(resp.parts)},
        "finishReason": FINISH_OUT[resp.stop],
        "index": 0,
    }
    return {
        "candidates": [cand],
        "usageMetadata": _usage_out(resp.usage),
        "modelVersion": resp.model,
        "responseId": resp.id or ir.new_id(""),
    }


# --- errors, models, transport -------------------------------------------------------------


def encode_error(status: int, message: str) -> dict[str, Any]:
    code = STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": code}}


def decode_error(body: Any) -> str:
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))
    return dumps(body)[:2000]


def encode_model(model_id: str) -> dict[str, Any]:
    return {
        "name": f"models/{model_id}",
        "baseModelId": model_id,
        "version": "svc",
        "displayName": model_id,
        "description": "served by svc",
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }


def encode_model_list(ids: list[str]) -> dict[str, Any]:
    return {"models": [encode_model(i) for i in ids]}


def upstream_url(base: str, model: str, stream: bool) -> str:
    prefix = base if VERSIONED.search(base) else f"{base}/v1beta"
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"{prefix}/models/{model}:{method}"


def auth_headers(key: str) -> dict[str, str]:
    return {"x-goog-api-key": key} if key else {}


def rewrite_model(data: dict[str, Any], model: str) -> None:
    if "modelVersion" in data:
        data["modelVersion"] = model


def encode_token_count(total: int) -> dict[str, Any]:
    return {"totalTokens": total}


def count_tokens_url(base: str, model: str) -> str:
    prefix = base if VERSIONED.search(base) else f"{base}/v1beta"
    return f"{prefix}/models/{model}:countTokens"
