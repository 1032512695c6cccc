"""Reads for chat channels: the `/ws/channels` list and `GET /api/channels` (contract §14)."""

from __future__ import annotations

from typing import Any

from core import config


def channel_list_dicts(parts: Any) -> list[dict[str, Any]]:
    """`web` and each declared channel, with its service's status when one runs (given the
    daemon's parts; None: none runs)."""
    from channels_app.supervised import channel_rows

    return channel_rows(parts.channels if parts is not None else None, config.current_settings())
