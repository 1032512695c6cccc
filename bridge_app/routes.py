"""Bridge URL parsing, nothing more: every base URL the official SDKs build from the documented
bases (and the doubled `v1` segments they build from the usual mistakes) maps to one `Route`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

from bridge_app import dialects

SCOPE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
VERSIONS = ("v1", "v1beta", "v1alpha")
GEMINI_METHODS = {
    "generateContent": "generate",
    "streamGenerateContent": "generate",
    "countTokens": "count_tokens",
}


@dataclass(frozen=True, slots=True)
class Route:
    family: str  # local-api | legacy | local-agent
    profile: str
    scope: str  # for local-agent: the agent's name
    dialect: str
    operation: str  # generate | models | model | count_tokens | response | unknown
    model: str = ""  # gemini path model, the id of GET models/{id}, or of responses/{id}

    @property
    def agent(self) -> str:
        return self.scope if self.family == "local-agent" else ""

    stream: bool = False  # gemini streamGenerateContent
    sse: bool = True  # gemini: alt=sse; without it the stream is a JSON array


def _strip(parts: list[str], allowed: tuple[str, ...], most: int) -> list[str]:
    n = 0
    while parts and parts[0] in allowed and n < most:
        parts, n = parts[1:], n + 1
    return parts


def _operation(dialect: str, rest: list[str]) -> tuple[str, str]:
    """A dialect's own paths (its codec's PATHS), then stored responses and model lists."""
    rest = _strip(rest, ("v1",), 2)
    operation = dialects.get(dialect).PATHS.get("/".join(rest))
    if operation:
        return operation, ""
    if dialect == "openai-responses" and len(rest) == 2 and rest[0] == "responses":
        return "response", rest[1]
    return _models(rest)


def _models(rest: list[str]) -> tuple[str, str]:
    if rest == ["models"]:
        return "models", ""
    if len(rest) >= 2 and rest[0] == "models":
        return "model", "/".join(rest[1:])
    return "unknown", ""


def _gemini(rest: list[str], query: dict[str, list[str]]) -> tuple[str, str, bool, bool]:
    rest = _strip(rest, VERSIONS, 2)
    if len(rest) >= 2 and rest[0] == "models" and ":" in rest[-1]:
        model, method = "/".join(rest[1:]).rsplit(":", 1)
        op = GEMINI_METHODS.get(method, "unknown")
        stream = method == "streamGenerateContent"
        return op, model, stream, not stream or query.get("alt", [""])[0] == "sse"
    op, model = _models(rest)
    return op, model, False, True


def parse(path: str, query_string: bytes = b"") -> Route | None:
    """None when the path is not a bridge route at all (or the scope is malformed)."""
    parts = [unquote(p) for p in path.strip("/").split("/")]
    if len(parts) < 2 or parts[0] != "svc":
        return None
    if parts[1] == "local-api" and len(parts) >= 5:
        family, profile, scope, dialect, rest = "local-api", parts[2], parts[3], parts[4], parts[5:]
    elif parts[1] == "bridge" and len(parts) >= 4:
        family, profile, scope, dialect, rest = "legacy", parts[2], "legacy", parts[3], parts[4:]
    elif parts[1] == "local-agent" and len(parts) >= 4:
        return _agent_route(parts[2], parts[3], parts[4:])
    else:
        return None
    if not SCOPE.match(scope) or dialect not in dialects.NAMES:
        return None
    if dialect == "gemini":
        op, model, stream, sse = _gemini(rest, parse_qs(query_string.decode("latin-1")))
        return Route(family, profile, scope, dialect, op, model, stream, sse)
    op, model = _operation(dialect, rest)
    return Route(family, profile, scope, dialect, op, model)


def _agent_route(agent: str, profile: str, rest: list[str]) -> Route | None:
    """`/svc/local-agent/{agent}/{profile}/v1/…`: the path after `v1/` names the dialect (a
    codec's generate path) or the model list, whose shape the view picks from the client."""
    if not SCOPE.match(agent):
        return None
    rest = _strip(rest, ("v1",), 2)
    joined = "/".join(rest)
    for name in dialects.NAMES:
        if dialects.get(name).PATHS.get(joined) == "generate":
            return Route("local-agent", profile, agent, name, "generate")
    operation, model = _models(rest)
    return Route("local-agent", profile, agent, "openai-chat", operation, model)
