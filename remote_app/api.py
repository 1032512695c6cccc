"""/api/ views for pairings and tunnels (contract §13): parse, call one service, shape."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from remote_app import pairing
from svcproject.errors import Forbidden, NotFound


def _runtime():  # type: ignore[no-untyped-def]
    from svcproject.runtime import current

    return current()


class ApproveIn(serializers.Serializer):
    code = serializers.CharField(max_length=32)


class PairingListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(pairing.devices_list())


class PairingPendingView(APIView):
    def get(self, request: Request) -> Response:
        return Response(pairing.pending_list())


class PairingApproveView(APIView):
    @extend_schema(request=ApproveIn)
    def post(self, request: Request) -> Response:
        if getattr(request._request, "svc_auth_via", "") == "remote":
            # Approving is for the machine itself (contract §13): a paired phone cannot pair more.
            raise Forbidden("approve pairings on svc's own machine (dashboard, manage.py pair)")
        data = ApproveIn(data=request.data)
        data.is_valid(raise_exception=True)
        approved = pairing.pair_approve(data.validated_data["code"], "api")
        return Response({"approved": True, **approved.to_dict()})


class PairingDetailView(APIView):
    def delete(self, request: Request, device_id: str) -> Response:
        if not pairing.device_revoke(device_id):
            raise NotFound(f"no paired device {device_id!r}")
        _runtime().remote_sockets.end(device_id)  # its open WebSockets close now
        return Response(status=status.HTTP_204_NO_CONTENT)


class PairingDenyView(APIView):
    def post(self, request: Request, request_id: str) -> Response:
        if not pairing.pair_deny(request_id):
            raise NotFound(f"no pending pairing request {request_id!r}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class TunnelListView(APIView):
    def get(self, request: Request) -> Response:
        from sessions_app import selectors

        return Response(selectors.tunnel_list_dicts())


class TunnelActionView(APIView):
    def post(self, request: Request, name: str, action: str) -> Response:
        from sessions_app import selectors

        tunnels = _runtime().tunnels
        try:
            async_to_sync(tunnels.start if action == "start" else tunnels.stop)(name)
        except KeyError:
            raise NotFound(f"no tunnel {name!r} in settings.json") from None
        row = next(r for r in selectors.tunnel_list_dicts() if r["name"] == name)
        return Response(row)
