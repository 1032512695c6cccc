"""Reads for the `/ws/pairings` list (an extension of contract §7, docs/remote.md): pending
pairing requests, then paired devices, each row with its `kind`."""

from __future__ import annotations

from typing import Any

from core import config
from remote_app import pairing
from remote_app.tunnels.supervised import tunnel_rows


def pairing_list_dicts() -> list[dict[str, Any]]:
    pending = [{"kind": "request", **row} for row in pairing.pending_list()]
    return pending + [{"kind": "device", **row} for row in pairing.devices_list()]


def tunnel_list_dicts(parts: Any) -> list[dict[str, Any]]:
    """Declared tunnels with their service's status and public URL (contract §13), given the
    daemon's parts (None: every tunnel stopped)."""

    return tunnel_rows(parts.runtime if parts is not None else None, config.current_settings())
