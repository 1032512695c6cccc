"""Which tunnels work on this machine (docs/remote.md "One click"): what the Remote view offers as
buttons and `svc remote offers` lists. Each offer says why when it cannot run here, in words that
say how to fix it; nothing here starts anything."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from typing import Any

TAILSCALE_STATUS_TIMEOUT_S = 3.0


def _offer(
    provider: str, label: str, ready: bool, reason: str = "", needs: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "provider": provider,
        "label": label,
        "available": ready,
        "reason": "" if ready else reason,
        "needs": list(needs),  # the fields a person fills in before the one click
    }


def _tailscale_state() -> str:
    """'' when logged in and running, else what is wrong. `tailscale status --json` answers
    BackendState "Running" only on a node that is up and logged in."""
    exe = shutil.which("tailscale")
    if exe is None:
        return "tailscale is not installed (https://tailscale.com/download)"
    try:
        done = subprocess.run(
            [exe, "status", "--json"],
            capture_output=True,
            text=True,
            timeout=TAILSCALE_STATUS_TIMEOUT_S,
            check=False,
        )
        state = json.loads(done.stdout or "{}").get("BackendState", "")
    except (OSError, subprocess.TimeoutExpired, ValueError, AttributeError):
        return "tailscale is installed but `tailscale status --json` did not answer"
    if state != "Running":
        return f"tailscale is not logged in ({state or 'no state'}): run `tailscale up`"
    return ""


def _ngrok_sdk() -> bool:
    return importlib.util.find_spec("ngrok") is not None


def offers_list() -> list[dict[str, Any]]:
    """Every provider the Remote view knows, in the order a person would try them."""
    tailscale = _tailscale_state()
    return [
        _offer(
            "cloudflared",
            "Cloudflare quick tunnel (no account)",
            shutil.which("cloudflared") is not None,
            "cloudflared is not installed (https://developers.cloudflare.com/cloudflare-one/"
            "connections/connect-networks/downloads/)",
        ),
        _offer(
            "localtunnel",
            "localtunnel (no account)",
            shutil.which("npx") is not None,
            "npx is not installed: it comes with Node.js (https://nodejs.org/en/download)",
        ),
        _offer("tailscale", "Tailscale Funnel", not tailscale, tailscale),
        _offer(
            "ngrok",
            "ngrok (your authtoken)",
            _ngrok_sdk(),
            "the ngrok Python SDK is not installed (pip install ngrok)",
            ("token",) if not os.environ.get("NGROK_AUTHTOKEN", "").strip() else (),
        ),
        _offer("ssh", "SSH to a host you name", True, needs=("host",)),
    ]
