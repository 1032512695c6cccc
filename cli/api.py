"""The daemon's /api/ over plain http.client, for both command-line paths: the fast client and the
management commands (which turn ClientError into Django's CommandError)."""

from __future__ import annotations

import http.client
import json
from typing import Any

from cli.home import Daemon

TIMEOUT_S = 30.0


class ClientError(Exception):
    """A command cannot go on; the message is the one line the person reads."""


def not_running(daemon: Daemon) -> str:
    """One line: where svc was expected, and how to start it."""
    return (
        f"svc is not running at {daemon.url}: start it with `make run` "
        f"(or `python manage.py runserver 127.0.0.1:{daemon.port}`)"
    )


def error_message(body: bytes) -> str:
    """/api/ errors are {"error": {"message": ...}}; anything else is shown as it came."""
    try:
        return str(json.loads(body)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", errors="replace")[:300]


def call(daemon: Daemon, method: str, path: str, body: Any = None) -> Any:
    """`method /api/path` with the owner's token; the decoded JSON answer (None when empty)."""
    headers = {"Authorization": f"Bearer {daemon.owner_token}", "Accept": "application/json"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=TIMEOUT_S)
    try:
        connection.request(method, f"/api/{path}", body=payload, headers=headers)
        response = connection.getresponse()
        status, content = response.status, response.read()
    except (OSError, http.client.HTTPException) as exc:
        # Refused, reset or timed out: to the person, all of these mean no daemon answers there.
        raise ClientError(not_running(daemon)) from exc
    finally:
        connection.close()
    if status >= 400:
        raise ClientError(f"{method} /api/{path}: {status} {error_message(content)}")
    return json.loads(content) if content else None
