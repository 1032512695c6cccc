"""Writes for the bridge app: the profile mirror."""

from __future__ import annotations

import logging

from django.db import connection, transaction
from django.utils import timezone

from bridge_app import usage
from bridge_app.models import BridgeRequest, Conversation, Profile
from core import config


def _key_source(profile: config.Profile) -> str:
    if profile.api_key_env:
        return f"env:{profile.api_key_env}"
    return "settings.json" if profile.api_key else "none"


@transaction.atomic
def profiles_sync(settings: config.Settings) -> None:
    for profile in settings.profiles.values():
        Profile.objects.update_or_create(
            id=profile.id,
            defaults={
                "provider": profile.provider,
                "base_url": profile.base_url,
                "model_ids": list(profile.models),
                "model_aliases": profile.model_aliases,
                "capabilities": profile.capabilities,
                "key_source": _key_source(profile),
            },
        )
    Profile.objects.exclude(id__in=list(settings.profiles)).delete()


def bridge_requests_record(*, rows: list[dict], keep: int = 10_000) -> None:
    """Append request-log rows (never bodies or keys), written in batches off the hot path;
    only about the newest `keep` rows are kept (pruned when the log passes `keep` by a tenth),
    so the log cannot grow without bound and most writes delete nothing."""

    if not rows:
        return
    try:  # usage attribution and prices (§16) must never cost the log its rows
        usage.attribute(rows)
        usage.price(rows)
    except Exception:
        logging.getLogger(__name__).exception("could not attribute or price bridge usage")
    table, now = BridgeRequest._meta.db_table, timezone.now()
    adapt = connection.ops.adapt_datetimefield_value  # what the ORM would store
    values = [
        (
            adapt(row.get("created_at", now)),
            row["route"],
            row["profile_id"],
            row.get("scope", ""),
            row["client_dialect"],
            row.get("provider", ""),
            row.get("model", ""),
            bool(row.get("stream", False)),
            int(row.get("status", 0)),
            float(row.get("duration_ms", 0.0)),
            row.get("upstream_model", ""),
            int(row.get("input_tokens", 0)),
            int(row.get("output_tokens", 0)),
            int(row.get("cached_input_tokens", 0)),
            int(row.get("reasoning_tokens", 0)),
            row.get("cost_usd"),
            row.get("session_id", ""),
            row.get("turn_id", ""),
        )
        for row in rows
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} (created_at, route, profile_id, scope, client_dialect, "  # noqa: S608
            "provider, model, stream, status, duration_ms, upstream_model, input_tokens, "
            "output_tokens, cached_input_tokens, reasoning_tokens, cost_usd, session_id, "
            "turn_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s)",
            values,
        )
        cursor.execute(f"SELECT MIN(id), MAX(id) FROM {table}")  # noqa: S608
        oldest, newest = cursor.fetchone()
        if newest - oldest >= keep + keep // 10:
            cursor.execute(f"DELETE FROM {table} WHERE id <= %s", [newest - keep])  # noqa: S608


def conversation_record(*, key: str, agent: str, profile_id: str, session_id: str) -> None:
    """Remember which session answers a named agent-as-API conversation (survives restarts)."""
    Conversation.objects.update_or_create(
        key=key, agent=agent, profile_id=profile_id, defaults={"session_id": session_id}
    )


def conversation_session(*, key: str, agent: str, profile_id: str) -> str | None:
    row = Conversation.objects.filter(key=key, agent=agent, profile_id=profile_id).first()
    return str(row.session_id) if row is not None and row.session_id else None


def conversation_forget(*, key: str, agent: str, profile_id: str) -> None:
    Conversation.objects.filter(key=key, agent=agent, profile_id=profile_id).delete()
