"""/api/profiles: the profile mirror, keys never included."""

from __future__ import annotations

from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

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
