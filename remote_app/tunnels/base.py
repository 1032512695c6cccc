"""What every tunnel provider is: given the remote listener's port, make it reachable, say the
public URL once it is, and return or raise when the tunnel ends (the supervisor restarts it).
Cancellation is how it is stopped: a provider leaves no process or connection behind."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

Up = Callable[[str], None]  # called with the public URL once the tunnel forwards


class TunnelError(Exception):
    """A tunnel that cannot run; the message is the `detail` a person reads, saying how to fix."""


class Provider(Protocol):
    async def run(self, port: int, up: Up) -> None: ...


class Options:
    """A tunnel's options from settings.json, read with the option named in every error."""

    def __init__(self, name: str, raw: dict[str, Any], known: set[str]) -> None:
        self.name, self.raw = name, raw
        unknown = sorted(set(raw) - known - {"provider", "enabled"})
        if unknown:
            raise TunnelError(f"tunnels.{name}.{unknown[0]}: unknown option")

    def key(self, option: str) -> str:
        return f"tunnels.{self.name}.{option}"

    def text(self, option: str, default: str | None = None) -> str:
        value = self.raw.get(option, default)
        if value is None:
            raise TunnelError(f"{self.key(option)}: required")
        if not isinstance(value, str) or (not value and default is None):
            raise TunnelError(f"{self.key(option)}: must be a non-empty string")
        return value

    def port(self, option: str, default: int) -> int:
        value = self.raw.get(option, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 65536:
            raise TunnelError(f"{self.key(option)}: must be a port number (0–65535)")
        return value

    def seconds(self, option: str, default: float) -> float:
        value = self.raw.get(option, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise TunnelError(f"{self.key(option)}: must be a positive number of seconds")
        return float(value)

    def argv(self, option: str) -> list[str]:
        value = self.raw.get(option)
        if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
            raise TunnelError(f"{self.key(option)}: must be a non-empty list of strings")
        return value

    def pattern(self, option: str, default: str | None = None) -> re.Pattern[str]:
        source = self.text(option, default)
        try:
            return re.compile(source)
        except re.error as exc:
            raise TunnelError(
                f"{self.key(option)}: not a valid regular expression ({exc})"
            ) from exc
