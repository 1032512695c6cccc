"""What channels_app's views read of the daemon's parts, which reach them in the ASGI scope
(svcproject.parts checks `Parts` against this). Its services are handed theirs when built."""

from __future__ import annotations

from typing import Any, Protocol, cast

from channels_app.supervised import Channels
from core.asgi_helpers import parts_in, request_scope
from core.runtime import Runtime


class ChannelParts(Protocol):
    @property
    def runtime(self) -> Runtime: ...
    @property
    def channels(self) -> Channels: ...


def of_request(request: Any) -> ChannelParts:
    return cast(ChannelParts, parts_in(request_scope(request)))
