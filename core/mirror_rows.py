"""Mirroring a settings.json section into a table of named rows (channels, tunnels): the apps
that own such tables share this."""

from __future__ import annotations

from typing import Any


def declared_entry(section: dict, name: str) -> dict:
    entry = section.get(name)
    return entry if isinstance(entry, dict) else {}


def mirror_rows(model: Any, wanted: dict[str, dict], stale: Any) -> None:
    """Write only rows that changed: every save pushes a live list to every subscriber."""
    existing = {row.name: row for row in model.objects.all()}
    for name, fields in wanted.items():
        row = existing.get(name)
        if row is None:
            model.objects.create(name=name, **fields)
        elif any(getattr(row, key) != value for key, value in fields.items()):
            for key, value in fields.items():
                setattr(row, key, value)
            row.save()
    for row in stale.exclude(name__in=list(wanted)):
        row.delete()
