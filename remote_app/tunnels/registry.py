"""Provider name → how to build it from a tunnel's options (contract §13)."""

from __future__ import annotations

from typing import Any

from remote_app.tunnels import process
from remote_app.tunnels.base import Provider, TunnelError
from remote_app.tunnels.ngrok_tunnel import NgrokTunnel

PROVIDERS = ("ssh", "ngrok", "cloudflared", "tailscale", "localtunnel", "command")


def build(name: str, raw: dict[str, Any]) -> Provider:
    provider = raw.get("provider")
    if provider == "ssh":
        from remote_app.tunnels.ssh import SSHTunnel  # asyncssh (~0.2 s): for ssh tunnels only

        return SSHTunnel(name, raw)
    if provider == "ngrok":
        return NgrokTunnel(name, raw)
    if provider in ("cloudflared", "tailscale", "localtunnel", "command"):
        return process.build(name, raw)
    choices = ", ".join(PROVIDERS)
    raise TunnelError(f"tunnels.{name}.provider: must be one of {choices}, got {provider!r}")
