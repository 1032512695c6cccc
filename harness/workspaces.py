"""Registering a workspace through the API, as a user does before previewing its files."""

from __future__ import annotations

from pathlib import Path

import httpx

from harness.daemon import Daemon


def register(daemon: Daemon, path: Path) -> dict:
    response = httpx.post(
        f"{daemon.url}/api/workspaces",
        json={"path": str(path)},
        headers=daemon.owner_headers(),
        timeout=30,
    )
    assert response.status_code in (200, 201), response.text
    return response.json()
