"""Writes for the bridge app: the profile mirror."""

from __future__ import annotations

from django.db import transaction

from bridge_app.models import Profile
from svcproject import config


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
    only the newest `keep` rows are kept, so the log cannot grow without bound."""
    from bridge_app.models import BridgeRequest

    created = BridgeRequest.objects.bulk_create([BridgeRequest(**row) for row in rows])
    newest = max((r.pk for r in created if r.pk is not None), default=None)
    if newest is not None and newest > keep:
        BridgeRequest.objects.filter(pk__lte=newest - keep).delete()
