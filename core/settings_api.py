"""/api/settings: the settings file as the dashboard edits it (secrets redacted)."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import config, parts
from core import settings_store as services
from core.asgi_helpers import request_scope


class SettingsView(APIView):
    """GET the settings (secrets redacted); PUT replaces the file; PATCH replaces top-level keys.
    Unknown keys are kept either way."""

    def get(self, request: Request) -> Response:
        return Response(services.settings_redacted())

    def put(self, request: Request) -> Response:
        services.settings_replace(raw=request.data)
        return Response(services.settings_redacted())

    def patch(self, request: Request) -> Response:
        services.settings_update(changes=request.data)
        return Response(services.settings_redacted())


class SettingsProblemView(APIView):
    """GET: why settings.json on disk is not in force (`problem` null when it is)."""

    def get(self, request: Request) -> Response:
        return Response({"problem": config.settings_problem() or None})


class StatusView(APIView):
    """GET /api/status: the daemon's own state beside the lists — whether settings.json is in
    force (`settings_error` null) or why not ({message, path, key, line, column}); while it is
    not, writes of settings answer 409 `settings_invalid`. The dashboard's banner and
    `bin/svc status` show it."""

    def get(self, request: Request) -> Response:
        status: dict[str, Any] = {"running": True, "settings_error": config.settings_error()}
        runtime = parts.of(request_scope(request)).runtime
        status.update({name: read() for name, read in runtime.status_parts.items()})
        return Response(status)
