"""What a failed prompt says: the agent's own words, not the JSON-RPC boilerplate."""

from __future__ import annotations

GENERIC_ERRORS = {"Internal error", "Internal Error"}


def failure_text(exc: BaseException) -> str:
    """A failed prompt in the agent's own words: agents answer JSON-RPC's generic "Internal
    error" and put what went wrong in the error's `data` (`details`, `message` or a string)."""
    message = str(exc) or type(exc).__name__
    data = getattr(exc, "data", None)
    detail: object = data if isinstance(data, str) else ""
    if isinstance(data, dict):
        detail = data.get("details") or data.get("message") or data.get("error") or ""
        if isinstance(detail, dict):
            detail = detail.get("message", "")
    detail = str(detail).strip()
    if not detail or detail in message:
        return message
    return detail if message in GENERIC_ERRORS else f"{message}: {detail}"
