"""What the bridge's ASGI app reads of the daemon's parts, which reach it in the ASGI scope
(svcproject.parts checks `Parts` against this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from bridge_app.conversations import Conversations
from bridge_app.requestlog import RequestLog
from bridge_app.response_store import ResponseStore
from bridge_app.upstream import UpstreamClient
from core.asgi_helpers import parts_in


class BridgeParts(Protocol):
    @property
    def upstream(self) -> UpstreamClient: ...
    @property
    def responses(self) -> ResponseStore: ...
    @property
    def requestlog(self) -> RequestLog: ...
    @property
    def conversations(self) -> Conversations: ...


def of(scope: Mapping[str, Any]) -> BridgeParts:
    return cast(BridgeParts, parts_in(scope))
