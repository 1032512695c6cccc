"""One JSON error shape for /api/: {"error": {"status", "code", "message", "fields"?}}.

Domain errors (core.errors) and settings errors are mapped here, once, so API views call
services without wrapping them.
"""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.config import SettingsError
from core.errors import DomainError


def _message(detail: Any) -> str:
    if isinstance(detail, dict):
        parts = [f"{k}: {_message(v)}" for k, v in detail.items()]
        return "; ".join(parts)
    if isinstance(detail, list):
        return "; ".join(_message(d) for d in detail)
    return str(detail)


def _domain(status: int, code: str, message: str) -> Response:
    return Response({"error": {"status": status, "code": code, "message": message}}, status=status)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DomainError):
        return _domain(exc.status, exc.code, exc.message)
    if isinstance(exc, SettingsError):
        return _domain(400, "invalid", str(exc))
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    detail = (
        response.data.get("detail", response.data)
        if isinstance(response.data, dict)
        else response.data
    )
    code = getattr(exc, "default_code", "error")
    body: dict[str, Any] = {
        "status": response.status_code,
        "code": code,
        "message": _message(detail),
    }
    if isinstance(response.data, dict) and "detail" not in response.data:
        body["fields"] = response.data
    response.data = {"error": body}
    return response
