"""/api/profiles: the profile mirror, keys never included; /api/usage: bridge usage (§16)."""

from __future__ import annotations

from django.utils import dateparse, timezone
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from bridge_app import usage
from bridge_app.models import Profile


class ProfileListView(APIView):
    def get(self, request: Request) -> Response:
        return Response([p.to_dict() for p in Profile.objects.all()])


class ProfileDetailView(APIView):
    def get(self, request: Request, profile_id: str) -> Response:
        profile = Profile.objects.filter(pk=profile_id).first()
        if profile is None:
            raise NotFound(f"no profile {profile_id!r}")
        return Response(profile.to_dict())


def _since(raw: str | None) -> object:
    """An ISO date or datetime (naive: local time), or None."""
    if not raw:
        return None
    try:
        when = dateparse.parse_datetime(raw)
        if when is None and (day := dateparse.parse_date(raw)) is not None:
            when = timezone.datetime(day.year, day.month, day.day)
    except ValueError:
        when = None
    if when is None:
        raise ParseError(f"since must be an ISO date or datetime; got {raw!r}")
    return timezone.make_aware(when) if timezone.is_naive(when) else when


class UsageView(APIView):
    """GET /api/usage?group_by=session|turn|profile|model|day[&since=ISO]."""

    def get(self, request: Request) -> Response:
        group_by = request.query_params.get("group_by", "profile")
        since = _since(request.query_params.get("since"))
        try:
            return Response(usage.summary(group_by, since))
        except ValueError as exc:
            raise ParseError(str(exc)) from exc
