"""A loopback connection this test process opened and keeps open, for in-process ASGI requests
to the bridge: its gate asks the kernel which local user opened the caller's end of the
connection (core.local_peer), so an in-process request names a real connection of the test's
own user — the owner's — as daphne would, instead of made-up addresses nobody holds."""

from __future__ import annotations

import socket
from typing import Any

Address = tuple[str, int]
_held: tuple[socket.socket, socket.socket, socket.socket] | None = None


def own_connection() -> tuple[Address, Address]:
    """(the client's end, the server's end) of a loopback connection held for the process."""
    global _held
    if _held is None:
        listener = socket.create_server(("127.0.0.1", 0))
        client = socket.create_connection(listener.getsockname())
        accepted, _ = listener.accept()
        _held = (listener, client, accepted)
    listener, client, _ = _held
    return client.getsockname()[:2], listener.getsockname()[:2]


def served_on_own_connection(app: Any) -> Any:
    """`app` with each scope's `client` and `server` those of `own_connection()`."""

    async def presented(scope: dict[str, Any], receive: Any, send: Any) -> None:
        client, server = own_connection()
        await app({**scope, "client": client, "server": server}, receive, send)

    return presented
