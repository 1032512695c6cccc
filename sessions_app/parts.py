"""What sessions_app's edges (its views and WebSocket consumers) read of the daemon's parts,
which reach them in the ASGI scope (svcproject.parts checks `Parts` against this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from core.asgi_helpers import parts_in, request_scope
from core.runtime import Runtime
from sessions_app.handover import FailureWindow
from sessions_app.host.registry import ProcessHost
from sessions_app.remote_sockets import Fleet


class SessionParts(Protocol):
    @property
    def runtime(self) -> Runtime: ...
    @property
    def host(self) -> ProcessHost: ...
    @property
    def handover_failures(self) -> FailureWindow: ...
    @property
    def fleet_sockets(self) -> Fleet | None: ...  # another member's sessions (contract §18)


def of(scope: Mapping[str, Any]) -> SessionParts:
    return cast(SessionParts, parts_in(scope))


def of_request(request: Any) -> SessionParts:
    return of(request_scope(request))
