"""Tunnels as supervised services (contract §12, §13), and the set of them the runtime keeps in
step with settings.json and with the owner's start/stop."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core import config
from remote_app.tunnels import registry
from remote_app.tunnels.base import TunnelError

if TYPE_CHECKING:
    from core.runtime import Reach, Runtime
    from core.supervisor import Supervisor


def declared(settings: Any) -> dict[str, dict[str, Any]]:
    section = settings.raw.get("tunnels") or {}
    return {name: entry for name, entry in section.items() if isinstance(entry, dict)}


class TunnelService:
    list_name = "tunnels"

    def __init__(self, reach: Reach, name: str) -> None:
        self.reach, self.name = reach, name

    def settings_key(self, settings: Any) -> Hashable:
        entry = declared(settings).get(self.name, {})
        return json.dumps(entry, sort_keys=True), settings.remote_port

    async def run(self, online: Callable[[str], None]) -> None:
        entry = declared(config.current_settings()).get(self.name)
        if entry is None:
            raise TunnelError(f"tunnels.{self.name}: no longer in settings.json")
        provider = registry.build(self.name, entry)
        port = self.reach.remote_port
        if not port:
            raise TunnelError("svc's remote listener is not bound (see the daemon's log)")

        def up(url: str) -> None:
            self.reach.urls[self.name] = url
            self.reach.started[self.name] = datetime.now(UTC).isoformat()
            online(f"{url} → 127.0.0.1:{port}")

        try:
            await provider.run(port, up)
        finally:
            self.reach.urls.pop(self.name, None)
            self.reach.started.pop(self.name, None)


class Tunnels:
    """Which tunnels run: every declared, enabled one, except those the owner stopped (held
    until started again or until svc restarts)."""

    def __init__(self, supervisor: Supervisor, reach: Reach) -> None:
        self.supervisor, self.reach = supervisor, reach
        self.held: set[str] = set()

    def wanted(self, settings: Any) -> set[str]:
        return {
            name
            for name, entry in declared(settings).items()
            if entry.get("enabled", True) is not False and name not in self.held
        }

    async def apply(self, settings: Any) -> None:
        supervisor = self.supervisor
        running = supervisor.names("tunnels")
        wanted = self.wanted(settings)
        for name in sorted(running - wanted):
            await supervisor.remove(name)
        for name in sorted(wanted - running):
            await supervisor.add(TunnelService(self.reach, name), settings)

    async def start(self, name: str) -> None:
        settings = config.current_settings()
        if name not in declared(settings):
            raise KeyError(name)
        self.held.discard(name)
        if name not in self.supervisor.names("tunnels"):
            await self.supervisor.add(TunnelService(self.reach, name), settings)

    async def stop(self, name: str) -> None:
        if name not in declared(config.current_settings()):
            raise KeyError(name)
        self.held.add(name)
        await self.supervisor.remove(name)
        await self.supervisor.publish("tunnels")


def tunnel_rows(runtime: Runtime | None, settings: Any) -> list[dict[str, Any]]:
    """`/ws/tunnels` and `/api/tunnels` (contract §13): one row per declared tunnel."""
    states = {s["name"]: s for s in runtime.supervisor.statuses("tunnels")} if runtime else {}
    rows = []
    for name, entry in sorted(declared(settings).items()):
        state = states.get(name, {})
        rows.append(
            {
                "name": name,
                "provider": str(entry.get("provider", "")),
                "status": state.get("status", "stopped"),
                "public_url": (runtime.public_urls.get(name) if runtime else None) or None,
                "detail": state.get("detail", ""),
                "started_at": runtime.reach.started.get(name) if runtime else None,
                "enabled": entry.get("enabled", True) is not False,
                "retry_in_s": state.get("retry_in_s"),
            }
        )
    return rows
