"""One JSON error shape for /api/: {"error": {"status", "code", "message", "fields"?}}.

Domain errors (core.errors), settings errors and a database that cannot be reached are mapped
here, once, so API views call services without wrapping them.
"""

import re
from typing import Any

from django.db import InterfaceError, OperationalError, connections
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
    if isinstance(exc, OperationalError | InterfaceError) and _unreachable(exc):
        # Contract §18 "Faults": the hosted sessions keep running; the person is told which
        # database is away (never its password) and that it is not svc that broke.
        return _domain(503, "database_unavailable", _database_unavailable(exc))
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


# What a lost server or connection says, per database: "database is locked" (SQLite, busy) and a
# query's own errors are OperationalErrors too, and stay 500s.
_GONE = re.compile(
    r"connection|could not connect|server closed|terminating|timeout expired|"
    r"the database system is (starting up|shutting down|in recovery)|unable to open",
    re.IGNORECASE,
)
_PASSWORDS = (
    (re.compile(r"(password\s*=\s*)\S+", re.IGNORECASE), r"\1[redacted]"),  # libpq keywords
    (re.compile(r"(://[^:/@\s]*:)[^@\s]*(@)"), r"\1[redacted]\2"),  # a URL's user:password@
)


def _unreachable(exc: Exception) -> bool:
    return isinstance(exc, InterfaceError) or bool(_GONE.search(str(exc)))


def database_unavailable(exc: Exception) -> dict[str, Any] | None:
    """The 503 body for a database that cannot be reached, for code outside DRF's views (a
    middleware); None when `exc` is another database error."""
    if not isinstance(exc, OperationalError | InterfaceError) or not _unreachable(exc):
        return None
    message = _database_unavailable(exc)
    return {"error": {"status": 503, "code": "database_unavailable", "message": message}}


def _database_unavailable(exc: Exception) -> str:
    db = connections["default"].settings_dict
    if "postgresql" in db["ENGINE"]:
        where = f"PostgreSQL at {db.get('HOST') or 'localhost'}:{db.get('PORT') or 5432}"
    else:
        where = f"{connections['default'].display_name} at {db.get('NAME')}"
    why = " ".join(str(exc).split())[:300] or type(exc).__name__
    for password, hidden in _PASSWORDS:
        why = password.sub(hidden, why)
    return (
        f"the database ({where}) is unreachable: {why} — running sessions keep running; "
        "svc catches up when it is back"
    )
