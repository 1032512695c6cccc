"""/api/machines (contract §18): the fleet's machines with their status, and one of them by id or
name. Who may read them: the owner on the main port and a paired device on the remote listener,
as for /api/sessions (the API's default permission)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleet_app import selectors


class MachineListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.machine_list_dicts())


class MachineDetailView(APIView):
    def get(self, request: Request, machine: str) -> Response:
        return Response(selectors.machine_get(machine))
