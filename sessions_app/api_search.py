"""GET /api/search?q=… (contract §10 Search): every session's chat history, best hits first."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import DomainError
from sessions_app import search


class SearchHitOut(serializers.Serializer):
    session_id = serializers.UUIDField()
    title = serializers.CharField(help_text="the session's title (may be empty)")
    agent = serializers.CharField()
    seq = serializers.IntegerField()
    kind = serializers.CharField()
    snippet = serializers.CharField(help_text="HTML-escaped text, each hit in <mark>")
    created_at = serializers.DateTimeField()


class SearchView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                OpenApiTypes.STR,
                required=True,
                description='Words (all must occur), "a phrase", `or`, `-word` to exclude.',
            ),
            OpenApiParameter(
                "limit", OpenApiTypes.INT, description=f"At most this many (1..{search.MAX_LIMIT})."
            ),
        ],
        responses=SearchHitOut(many=True),
        description="Hits as {session_id, title, agent, seq, kind, snippet, created_at}; "
        "`snippet` is HTML-escaped text with each hit in <mark>.",
    )
    def get(self, request: Request) -> Response:
        q = request.query_params.get("q", "").strip()
        if not q:
            raise DomainError("q is required: GET /api/search?q=<words to find>", code="q_missing")
        raw_limit = request.query_params.get("limit", "50")
        try:
            limit = int(raw_limit)
        except ValueError:
            raise DomainError(
                f"limit must be a whole number from 1 to {search.MAX_LIMIT}, not {raw_limit!r}"
            ) from None
        return Response(search.search(q, limit=limit))
