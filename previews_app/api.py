"""/api/previews: list, create from a port or a file, get, delete. Thin over services/selectors."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import public_urls
from core.runtime import current
from previews_app import selectors, services
from previews_app.models import Preview


class PreviewIn(serializers.Serializer):
    port = serializers.IntegerField(required=False, min_value=1, max_value=65535)
    file = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False, allow_blank=True, default="")
    cwd = serializers.CharField(required=False, allow_blank=True, default="")
    title = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    session_id = serializers.CharField(required=False, allow_blank=True, default="")


def preview_json(preview: Preview, request: Request) -> dict[str, Any]:
    base = request.build_absolute_uri("/").rstrip("/")
    outside = public_urls.share_base(current().public_urls)
    return {**preview.to_dict(), **selectors.preview_urls(preview, base, outside)}


class PreviewListView(APIView):
    def get(self, request: Request) -> Response:
        return Response([preview_json(p, request) for p in selectors.preview_list()])

    @extend_schema(request=PreviewIn)
    def post(self, request: Request) -> Response:
        data = PreviewIn(data=request.data)
        data.is_valid(raise_exception=True)
        given = data.validated_data
        preview = services.preview_publish(
            port=given.get("port"),
            file=given.get("file"),
            workspace=given["workspace"] or given["cwd"],
            title=given["title"],
            session_id=given["session_id"] or None,
        )
        code = status.HTTP_201_CREATED if preview.created_now else status.HTTP_200_OK
        return Response(preview_json(preview, request), status=code)


class PreviewDetailView(APIView):
    def get(self, request: Request, slug: str) -> Response:
        preview = selectors.preview_get(slug)
        if preview is None:
            raise NotFound(f"no preview {slug}")
        return Response(preview_json(preview, request))

    def delete(self, request: Request, slug: str) -> Response:
        services.preview_delete(slug=slug)
        return Response(status=status.HTTP_204_NO_CONTENT)
