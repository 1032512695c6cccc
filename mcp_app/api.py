"""/api/integrations: what auto-install did for each agent (contract §9)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from mcp_app import integrations


class IntegrationsView(APIView):
    """GET the last auto-install report: per agent, the MCP entry and the skills — written,
    up to date, removed or skipped, and why. POST runs the sync again and returns its report."""

    def get(self, request: Request) -> Response:
        return Response(integrations.integrations_status())

    def post(self, request: Request) -> Response:
        return Response(integrations.integrations_sync())
