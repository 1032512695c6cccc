"""One JSON error shape for /api/: {"error": {"status", "code", "message", "fields"?}}."""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def _message(detail: Any) -> str:
    if isinstance(detail, dict):
        parts = [f"{k}: {_message(v)}" for k, v in detail.items()]
        return "; ".join(parts)
    if isinstance(detail, list):
        return "; ".join(_message(d) for d in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict) -> Response | None:
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
