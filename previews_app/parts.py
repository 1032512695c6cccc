"""What previews_app's edges (the preview router and origins, its views) read of the daemon's
parts, which reach them in the ASGI scope (svcproject.parts checks `Parts` against this)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, cast

from core.asgi_helpers import parts_in, request_scope
from core.onetime import OneTimeGrants
from previews_app.proxy import PreviewClient
from previews_app.render_pool import RenderPool


class PreviewParts(Protocol):
    @property
    def previews(self) -> PreviewClient: ...
    @property
    def preview_grants(self) -> OneTimeGrants: ...
    @property
    def render(self) -> RenderPool: ...
    @property
    def public_urls(self) -> dict[str, str]: ...  # the online tunnels' (core.runtime.Reach)


def of(scope: Mapping[str, Any]) -> PreviewParts:
    return cast(PreviewParts, parts_in(scope))


def of_request(request: Any) -> PreviewParts:
    return of(request_scope(request))
