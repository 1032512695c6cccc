"""What remote_app's edges (the remote gate, its views) read of the daemon's parts, which reach
them in the ASGI scope (svcproject.parts checks `Parts` against this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from core.asgi_helpers import parts_in, request_scope
from core.runtime import Runtime
from remote_app.gate import GateParts
from remote_app.lan import LanListener
from remote_app.tunnels.supervised import Tunnels


class RemoteParts(GateParts, Protocol):  # the gate's remote sockets, and:
    @property
    def runtime(self) -> Runtime: ...
    @property
    def public_urls(self) -> dict[str, str]: ...  # the online tunnels' (core.runtime.Reach)
    @property
    def tunnels(self) -> Tunnels: ...
    @property
    def lan(self) -> LanListener: ...  # the remote listener's LAN socket


def of(scope: Mapping[str, Any]) -> RemoteParts:
    return cast(RemoteParts, parts_in(scope))


def of_request(request: Any) -> RemoteParts:
    return of(request_scope(request))
