"""The one domain error: a refusal with an HTTP status and a message that says what to send instead.

Services raise it; each surface maps it once — DRF (`core.api_errors`), MCP tools
(`mcp_app.server`, as a tool error) and the bridge (`bridge_app`, in the client's dialect).
"""

from __future__ import annotations


class DomainError(Exception):
    """A request the domain refuses; `status` is the HTTP status that fits it best."""

    status: int = 400
    code: str = "invalid"

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class NotFound(DomainError):
    status, code = 404, "not_found"


class Forbidden(DomainError):
    status, code = 403, "forbidden"


class Conflict(DomainError):
    status, code = 409, "conflict"


class TooManyRequests(DomainError):
    status, code = 429, "too_many_requests"


class Unavailable(DomainError):
    status, code = 503, "unavailable"
