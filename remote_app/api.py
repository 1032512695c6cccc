"""/api/ views for pairings and tunnels (contract §13): parse, call one service, shape."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import public_urls as public
from core.devices import NAME_MAX
from core.errors import DomainError, Forbidden, NotFound
from remote_app import device_names, lan, pairing, parts, selectors, tunnel_setup
from remote_app.routes import MAIN_PORT_ONLY
from remote_app.tunnels import offers


class ApproveIn(serializers.Serializer):
    code = serializers.CharField(max_length=32)


class PairingListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(pairing.devices_list())


def _from_remote(request: Request) -> bool:
    return getattr(request._request, "svc_auth_via", "") == "remote"


def _main_port_only(request: Request) -> None:
    """Tunnels decide who may reach svc: made, removed and offered on svc's own machine only
    (the remote listener's gate refuses these writes first; this holds for reads too)."""
    if _from_remote(request):
        raise DomainError(MAIN_PORT_ONLY, status=403, code="main_port_only")


class PairingPendingView(APIView):
    def get(self, request: Request) -> Response:
        # Each request's code too, on svc's own machine only: the person compares it with the
        # one on the phone, then clicks Approve (docs/remote.md "One click").
        return Response(pairing.pending_list(with_code=not _from_remote(request)))


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


class PairingInviteView(APIView):
    """POST: an invite link for one browser (contract §13; docs/remote.md "Invites"): whoever
    opens it within INVITE_SECONDS is paired without a code. Made on the machine only."""

    def post(self, request: Request) -> Response:
        if getattr(request._request, "svc_auth_via", "") == "remote":
            raise Forbidden("invite phones from svc's own machine (dashboard, svc pair --invite)")
        invite = pairing.invite_issue()
        handed = parts.of_request(request)
        base = public.share_base(handed.public_urls)
        url = f"{base}/pair#invite={invite.secret}" if base else None
        on_lan = handed.lan.state()
        if url is None and on_lan["url"]:  # no tunnel: the phone on the same network
            url = f"{on_lan['url']}pair#invite={invite.secret}&cert={on_lan['fingerprint']}"
        hint = "no tunnel is online and the LAN listener is off: start one, then make the invite"
        return Response(
            {
                "url": url,
                "invite": invite.secret,
                "expires_in": invite.expires_in,
                "hint": None if url else hint,
            },
            status=status.HTTP_201_CREATED,
        )


class RenameIn(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_MAX, allow_blank=True, trim_whitespace=True)


class PairingDetailView(APIView):
    @extend_schema(request=RenameIn)
    def patch(self, request: Request, device_id: str) -> Response:
        """Rename a paired device (blank: its readable name again). Through the remote listener
        a device renames only itself (docs/remote.md "Device names")."""
        data = RenameIn(data=request.data)
        data.is_valid(raise_exception=True)
        scope = getattr(request._request, "scope", None) or {}
        by = str(scope.get("svc_device") or "") if _from_remote(request) else ""
        device = device_names.device_rename(
            device_id=device_id, name=data.validated_data["name"], by_device=by
        )
        return Response(device.to_dict())

    def delete(self, request: Request, device_id: str) -> Response:
        if not pairing.device_revoke(device_id):
            raise NotFound(f"no paired device {device_id!r}")
        parts.of_request(request).remote_sockets.end(device_id)  # its open WebSockets close now
        return Response(status=status.HTTP_204_NO_CONTENT)


class PairingDenyView(APIView):
    def post(self, request: Request, request_id: str) -> Response:
        if not pairing.pair_deny(request_id):
            raise NotFound(f"no pending pairing request {request_id!r}")
        return Response(status=status.HTTP_204_NO_CONTENT)


class TunnelIn(serializers.Serializer):
    provider = serializers.ChoiceField(choices=sorted(tunnel_setup.FIELDS))
    name = serializers.CharField(required=False, max_length=64)
    host = serializers.CharField(required=False, max_length=512)
    user = serializers.CharField(required=False, max_length=128)
    port = serializers.IntegerField(required=False, min_value=1, max_value=65535)
    remote_port = serializers.IntegerField(required=False, min_value=0, max_value=65535)
    public_url = serializers.CharField(required=False, max_length=2048)
    domain = serializers.CharField(required=False, max_length=255)
    authtoken_env = serializers.CharField(required=False, max_length=128)
    token = serializers.CharField(required=False, max_length=512, write_only=True)


def _row(request: Request, name: str) -> dict:
    rows = selectors.tunnel_list_dicts(parts.of_request(request))
    return next(r for r in rows if r["name"] == name)


class TunnelListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.tunnel_list_dicts(parts.of_request(request)))

    @extend_schema(request=TunnelIn)
    def post(self, request: Request) -> Response:
        """One click: write the tunnel into settings.json and start it."""
        _main_port_only(request)
        data = TunnelIn(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        name, made = tunnel_setup.tunnel_create(options.pop("provider"), options)
        async_to_sync(parts.of_request(request).tunnels.start)(name)
        return Response(
            _row(request, name), status=status.HTTP_201_CREATED if made else status.HTTP_200_OK
        )


class TunnelOffersView(APIView):
    def get(self, request: Request) -> Response:
        _main_port_only(request)
        return Response(offers.offers_list())


class TunnelDetailView(APIView):
    def delete(self, request: Request, name: str) -> Response:
        _main_port_only(request)
        tunnels = parts.of_request(request).tunnels
        try:
            async_to_sync(tunnels.stop)(name)
        except KeyError:
            raise NotFound(f"no tunnel {name!r} in settings.json") from None
        tunnel_setup.tunnel_remove(name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TunnelActionView(APIView):
    def post(self, request: Request, name: str, action: str) -> Response:
        tunnels = parts.of_request(request).tunnels
        try:
            async_to_sync(tunnels.start if action == "start" else tunnels.stop)(name)
        except KeyError:
            raise NotFound(f"no tunnel {name!r} in settings.json") from None
        return Response(_row(request, name))


class LanIn(serializers.Serializer):
    enabled = serializers.BooleanField()


class RemoteAccessView(APIView):
    """GET: where the remote listener is (address and port), its LAN socket, and the SSH command
    for a computer that can log in here (contract §13). Paired devices may read it: it names
    nothing they could not reach already."""

    def get(self, request: Request) -> Response:
        handed = parts.of_request(request)
        return Response(lan.access_state(handed.lan, handed.runtime.remote_port))


class RemoteLanView(APIView):
    """PUT {enabled}: the LAN socket on or off now, and in settings.json. Who may reach svc is
    decided on the machine: main port only (a paired device gets 403 `main_port_only`)."""

    @extend_schema(request=LanIn)
    def put(self, request: Request) -> Response:
        _main_port_only(request)
        data = LanIn(data=request.data)
        data.is_valid(raise_exception=True)
        settings = lan.lan_enable(data.validated_data["enabled"])
        handed = parts.of_request(request)
        async_to_sync(handed.lan.apply)(settings)
        return Response(lan.access_state(handed.lan, handed.runtime.remote_port))
