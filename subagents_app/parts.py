"""What subagents_app's views read of the daemon's parts, which reach them in the ASGI scope
(svcproject.parts checks `Parts` against this)."""

from __future__ import annotations

from typing import Any, Protocol, cast

from core.asgi_helpers import parts_in, request_scope
from sessions_app.host.registry import ProcessHost
from subagents_app.subagent_runs import SubagentRuns


class SubagentParts(Protocol):
    @property
    def host(self) -> ProcessHost: ...
    @property
    def subagents(self) -> SubagentRuns: ...


def of_request(request: Any) -> SubagentParts:
    return cast(SubagentParts, parts_in(request_scope(request)))
