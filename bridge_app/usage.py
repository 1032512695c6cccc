"""Usage (contract §16): the tokens each bridge request used, as the provider reported them, read
from the provider's own answer (whole or streamed, translated or passed through), priced by the
profile's `prices`, attributed to the hosted session its scope names, and summed for /api/usage.

Token meaning, whatever the dialect: `input` includes cached input (Anthropic's cache reads and
writes are added to its `input_tokens`), `output` includes reasoning."""

from __future__ import annotations

import contextlib
import re
import uuid
from typing import Any

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate

from bridge_app import bodies, ir
from bridge_app.dialects import anthropic, gemini, openai_chat, openai_responses
from bridge_app.models import BridgeRequest
from core import config, untrusted_json
from sessions_app.models import Session
from subagents_app.models import Subagent

# `{agent}.{session id}` (contract §0); `s-{session id}` is what svc handed out before, still
# recognised so rows and agents of that time keep their attribution.
SESSION_SCOPE = re.compile(r"^(?:s-|[a-z0-9][a-z0-9_-]{0,63}\.)([0-9a-fA-F-]{32,36})$")
GROUPS = ("session", "turn", "profile", "model", "day")


def scope_session(scope: str) -> str:
    """The session id a scope names, or ""."""
    m = SESSION_SCOPE.match(scope or "")
    try:
        return str(uuid.UUID(m.group(1))) if m else ""
    except ValueError:
        return ""


def _whole_usage(provider: str, data: dict[str, Any]) -> ir.Usage | None:
    if provider == "anthropic":
        return anthropic._usage_in(data["usage"]) if data.get("usage") else None
    if provider == "gemini":
        u = data.get("usageMetadata") or data.get("usage_metadata")
        return gemini._usage_in(u) if u else None
    if provider == "openai-chat":
        return openai_chat._usage_in(data["usage"]) if data.get("usage") else None
    return openai_responses._usage_in(data["usage"]) if data.get("usage") else None


class Meter:
    """The usage of one exchange, from the provider's whole body or its stream events. Stream
    usage is cumulative in every dialect (Anthropic's split over message_start/message_delta
    is merged), so the last report wins."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.usage: ir.Usage | None = None
        self._buf = b""

    def whole(self, data: Any) -> None:
        if isinstance(data, dict):
            self.usage = _whole_usage(self.provider, data) or self.usage

    def whole_bytes(self, raw: bytes) -> None:
        with contextlib.suppress(ValueError):
            self.whole(untrusted_json.loads(raw, max_bytes=bodies.MAX_ANSWER))

    def event(self, event: str, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        kind = obj.get("type") or event
        if self.provider == "anthropic":
            if kind == "message_start":
                u = (obj.get("message") or {}).get("usage")
                self.usage = anthropic._usage_in(u) if u else self.usage
            elif kind == "message_delta" and obj.get("usage"):
                self.usage = anthropic._usage_in(obj["usage"], self.usage or ir.Usage())
        elif self.provider == "openai-responses":
            resp = obj.get("response")
            if isinstance(resp, dict) and resp.get("usage"):
                self.usage = openai_responses._usage_in(resp["usage"])
        else:  # chat chunks carry `usage`, Gemini chunks `usageMetadata`: a whole body's shape
            self.whole(obj)

    def scan(self, chunk: bytes) -> None:
        """Relayed bytes (passthrough): only frames that mention usage are parsed."""
        self._buf = (self._buf + chunk).replace(b"\r\n", b"\n")
        *frames, self._buf = self._buf.split(b"\n\n")
        for frame in frames:
            if b"sage" not in frame:  # usage, usageMetadata, usage_metadata
                continue
            event, data = "", []
            for line in frame.decode("utf-8", "replace").split("\n"):
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif line.startswith("event:"):
                    event = line[6:].strip()
            try:
                self.event(
                    event, untrusted_json.loads("\n".join(data), max_bytes=bodies.MAX_ANSWER)
                )
            except ValueError:
                continue

    def fields(self) -> dict[str, int]:
        if self._buf.strip():  # a last frame the stream ended without a blank line after
            self.scan(b"\n\n")
        u = self.usage or ir.Usage()
        return {
            "input_tokens": max(int(u.input_total or 0), 0),
            "output_tokens": max(int(u.output_total or 0), 0),
            "cached_input_tokens": max(int(u.cache_read or 0), 0),
            "reasoning_tokens": max(int(u.reasoning or 0), 0),
        }


def cost(prices: dict[str, dict[str, float]], model: str, row: dict[str, Any]) -> float | None:
    """USD for one request: cached input at `cached_input` (or `input` when that is not
    given), the rest of input at `input`, output at `output`; None when the model is unpriced."""
    price = prices.get(model)
    if not price:
        return None
    inp = row.get("input_tokens", 0)
    cached = min(row.get("cached_input_tokens", 0), inp)
    usd = (inp - cached) * price.get("input", 0.0)
    usd += cached * price.get("cached_input", price.get("input", 0.0))
    usd += row.get("output_tokens", 0) * price.get("output", 0.0)
    return usd / 1_000_000


def attribute(rows: list[dict[str, Any]]) -> None:
    """Each row's session (from its scope, when that names a session svc knows) and that
    session's subagent turn, set in place: one query each per batch."""

    wanted = {sid for row in rows if (sid := scope_session(row.get("scope", "")))}
    if not wanted:
        return
    known = {str(s) for s in Session.objects.filter(id__in=wanted).values_list("id", flat=True)}
    turns = {
        str(session): str(turn)
        for session, turn in Subagent.objects.filter(session_id__in=known).values_list(
            "session_id", "turn_id"
        )
    }
    for row in rows:
        sid = scope_session(row.get("scope", ""))
        if sid in known:
            row["session_id"], row["turn_id"] = sid, turns.get(sid, "")


def price(rows: list[dict[str, Any]]) -> None:
    """Each row's cost from its profile's current `prices` (keyed by the upstream model)."""
    profiles = config.recent_settings().profiles
    for row in rows:
        profile = profiles.get(row.get("profile_id", ""))
        if profile is not None and profile.prices:
            model = row.get("upstream_model") or row.get("model", "")
            row["cost_usd"] = cost(profile.prices, model, row)


# --- reading it back ---------------------------------------------------------------------------

KEYS = {
    "session": "session_id",
    "turn": "turn_id",
    "profile": "profile_id",
    "model": "model",
}


def summary(group_by: str, since: Any = None) -> list[dict[str, Any]]:
    """Rows {<key>, requests, errors, input_tokens, output_tokens, cached_input_tokens,
    reasoning_tokens, cost_usd} (session rows also `title` and `agent`) in key order. Unknown
    `group_by` is a ValueError.

    `requests` counts the answered ones, `errors` those that failed (an error status, or no
    answer at all): a refused request is no use of a model. Per profile, the requests that named
    a profile settings.json does not have (a typo, a removed profile) are one row with
    `profile_id` "" and `unknown_profile` true, never a row per name a client made up."""

    if group_by not in GROUPS:
        raise ValueError(f"group_by must be one of {', '.join(GROUPS)}; got {group_by!r}")
    rows = BridgeRequest.objects.exclude(route="local-agent")
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if group_by == "day":
        key = "day"
        rows = rows.annotate(day=TruncDate("created_at"))
    else:
        key = KEYS[group_by]
        if group_by in ("session", "turn"):
            rows = rows.exclude(**{key: ""})
    out = []
    for r in (
        rows.values(key)
        .annotate(
            requests=Count("id", filter=Q(status__gte=200, status__lt=400)),
            errors=Count("id", filter=Q(status__lt=200) | Q(status__gte=400)),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cached_input_tokens=Sum("cached_input_tokens"),
            reasoning_tokens=Sum("reasoning_tokens"),
            cost_usd=Sum("cost_usd"),
        )
        .order_by(key)
    ):
        r[key] = str(r[key]) if r[key] is not None else ""
        for field in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"):
            r[field] = r[field] or 0
        r["cost_usd"] = round(r["cost_usd"], 6) if r["cost_usd"] is not None else 0.0
        out.append(r)
    if group_by == "session":
        _name_sessions(out)
    if group_by == "profile":
        out = _fold_unknown_profiles(out)
    return out


def _fold_unknown_profiles(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    known = config.recent_settings().profiles
    kept = [r for r in rows if r["profile_id"] in known]
    unknown = [r for r in rows if r["profile_id"] not in known]
    if unknown:
        folded: dict[str, Any] = {"profile_id": "", "unknown_profile": True}
        for field in unknown[0]:
            if field != "profile_id":
                folded[field] = sum(r[field] for r in unknown)
        folded["cost_usd"] = round(folded["cost_usd"], 6)
        kept.append(folded)
    return kept


def _name_sessions(rows: list[dict[str, Any]]) -> None:
    """Each session row's `title` and `agent`, so a table can name the session without asking
    for every session; empty for a session deleted since its requests were logged."""
    named = {
        str(pk): (title, agent)
        for pk, title, agent in Session.objects.filter(
            id__in=[r["session_id"] for r in rows]
        ).values_list("id", "title", "agent")
    }
    for r in rows:
        r["title"], r["agent"] = named.get(r["session_id"], ("", ""))
