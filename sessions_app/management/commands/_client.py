"""How the command-line client reaches the running daemon: its port and owner token from
$SVC_HOME/auth.json, over /api/ and /ws like the dashboard."""

from __future__ import annotations

from typing import Any

import httpx
from django.core.management.base import CommandError

from svcproject import config


def base_url() -> str:
    return f"http://127.0.0.1:{config.current_auth().port}"


def headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {config.current_auth().owner_token}"}


def _error_message(response: httpx.Response) -> str:
    """/api/ errors are {"error": {"message": ...}}; anything else is shown as it came."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:300]


def api(method: str, path: str, **kwargs: Any) -> Any:
    try:
        response = httpx.request(
            method, f"{base_url()}/api/{path}", headers=headers(), timeout=30, **kwargs
        )
    except httpx.TransportError as exc:
        raise CommandError(f"svc is not running at {base_url()} ({exc})") from exc
    if response.status_code >= 400:
        detail = _error_message(response)
        raise CommandError(f"{method} /api/{path}: {response.status_code} {detail}")
    return response.json() if response.content else None
