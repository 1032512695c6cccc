"""The two tokens (contract §2): which one a string is, compared in constant time."""

from __future__ import annotations

import hmac
from typing import Literal

from core import config

TokenKind = Literal["owner", "mcp"]


def token_kind(token: str | None) -> TokenKind | None:
    """Which token this is. Both comparisons always run, so timing says nothing."""
    if not token:
        return None
    auth = config.current_auth()
    given = token.encode()
    is_owner = hmac.compare_digest(given, auth.owner_token.encode())
    is_mcp = hmac.compare_digest(given, auth.mcp_token.encode())
    if is_owner:
        return "owner"
    if is_mcp:
        return "mcp"
    return None
