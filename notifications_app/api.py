"""/api/ views for notifications and Web Push subscriptions (contract §15): parse, call one
service, shape."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import DomainError, NotFound
from notifications_app import push_address, selectors, webpush
from notifications_app.models import PushSubscription

ENDPOINT_MAX = 2048


def _b64url(value: str, size: int, name: str) -> str:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size or not value.replace("-", "").replace("_", "").rstrip("=").isalnum():
        raise DomainError(f"keys.{name} must be {size} bytes in base64url, as the browser gives it")
    return value.rstrip("=")


def _endpoint(value: str) -> str:
    """A push service's https URL on public addresses (or a host the owner listed in
    notifications.push_private_hosts): svc will POST there whenever anything is notified,
    pairing requests from anyone included (push_address.py)."""
    try:
        return push_address.check_endpoint(value)
    except push_address.AddressRefused as exc:
        raise DomainError(str(exc)) from None


class KeysIn(serializers.Serializer):
    p256dh = serializers.CharField(max_length=100)
    auth = serializers.CharField(max_length=40)


class SubscriptionIn(serializers.Serializer):
    endpoint = serializers.CharField(max_length=ENDPOINT_MAX)
    keys = KeysIn()


class EndpointIn(serializers.Serializer):
    endpoint = serializers.CharField(max_length=ENDPOINT_MAX)


class NotificationListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.notification_list_dicts())


class PushKeyView(APIView):
    def get(self, request: Request) -> Response:
        return Response({"public_key": webpush.public_key()})


class PushSubscriptionView(APIView):
    @extend_schema(request=SubscriptionIn)
    def post(self, request: Request) -> Response:
        data = SubscriptionIn(data=request.data)
        data.is_valid(raise_exception=True)
        given: dict[str, Any] = data.validated_data
        endpoint = _endpoint(given["endpoint"])
        keys = {
            "p256dh": _b64url(given["keys"]["p256dh"], 65, "p256dh"),
            "auth": _b64url(given["keys"]["auth"], 16, "auth"),
        }
        if not base64.urlsafe_b64decode(keys["p256dh"] + "=").startswith(b"\x04"):
            raise DomainError("keys.p256dh must be an uncompressed P-256 point")
        agent = request.headers.get("User-Agent", "")[:300]
        subscription, _ = PushSubscription.objects.update_or_create(
            endpoint=endpoint, defaults={**keys, "user_agent": agent}
        )
        return Response(subscription.to_dict(), status=status.HTTP_201_CREATED)

    @extend_schema(request=EndpointIn)
    def delete(self, request: Request) -> Response:
        data = EndpointIn(data=request.data)
        data.is_valid(raise_exception=True)
        deleted, _ = PushSubscription.objects.filter(
            endpoint=data.validated_data["endpoint"]
        ).delete()
        if not deleted:
            raise NotFound("no push subscription with that endpoint")
        return Response(status=status.HTTP_204_NO_CONTENT)
