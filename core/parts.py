"""What core's own edges (the live lists' consumer, the login hand-over, GET /api/status) read
of the daemon's parts, which reach them in the ASGI scope (svcproject.parts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from core.asgi_helpers import parts_in
from core.runtime import Runtime


class CoreParts(Protocol):
    @property
    def runtime(self) -> Runtime: ...


def of(scope: Mapping[str, Any]) -> CoreParts:
    return cast(CoreParts, parts_in(scope))
