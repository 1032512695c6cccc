"""`rotate_tokens` (contract §2): new tokens, and everything granted under the old ones ends."""

from __future__ import annotations

from core import browser, config, signals


def tokens_rotate() -> config.Auth:
    """New owner and MCP tokens and a new dashboard host; the old tokens stop working on the
    next request, every browser login ends, and `tokens_rotated` tells the apps (paired remote
    devices end, every agent's svc entry gets the new MCP token)."""
    auth = config.rotate_tokens()
    browser.end_all_sessions()
    signals.tokens_rotated.send(sender=tokens_rotate, auth=auth)
    return auth
