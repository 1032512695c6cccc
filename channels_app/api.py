"""/api/channels (contract §14): the same rows as `/ws/channels`."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from channels_app import selectors
from core.runtime import current_or_none


class ChannelListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.channel_list_dicts(current_or_none()))
