"""/api/previews: list, create from a port or a file, get, delete; /api/preview-files: a workspace's
Markdown files. Thin over services/selectors.

Creating and removing are the main port's only: a preview of a local port makes whatever listens
there reachable from every device that can open previews, so a paired phone may open previews but
not choose which ports are exposed (docs/security.md)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import public_urls
from core.errors import DomainError
from previews_app import md_files, parts, selectors, services
from previews_app.models import Preview

MAIN_PORT_ONLY = (
    "a preview exposes a port or a file of this machine: make or remove one on svc's own "
    "machine (its dashboard, or an agent's preview tool there)"
)


def _main_port_only(request: Request) -> None:
    if request._request.scope.get("svc_remote"):
        raise DomainError(MAIN_PORT_ONLY, status=403, code="main_port_only")


class PreviewIn(serializers.Serializer):
    port = serializers.IntegerField(required=False, min_value=1, max_value=65535)
    file = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False, allow_blank=True, default="")
    cwd = serializers.CharField(required=False, allow_blank=True, default="")
    title = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    session_id = serializers.CharField(required=False, allow_blank=True, default="")


def preview_json(preview: Preview, request: Request) -> dict[str, Any]:
    base = request.build_absolute_uri("/").rstrip("/")
    outside = public_urls.share_base(parts.of_request(request).public_urls)
    made = {**preview.to_dict(), **selectors.preview_urls(preview, base, outside)}
    if warning := getattr(preview, "warning", None):
        made["warning"] = warning
    return made


class PreviewListView(APIView):
    def get(self, request: Request) -> Response:
        return Response([preview_json(p, request) for p in selectors.preview_list()])

    @extend_schema(request=PreviewIn)
    def post(self, request: Request) -> Response:
        _main_port_only(request)
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
        _main_port_only(request)
        services.preview_delete(slug=slug)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PreviewFilesView(APIView):
    def get(self, request: Request) -> Response:
        """GET /api/preview-files?workspace=<absolute path>: `{workspace, files}`, the
        workspace's Markdown files relative to it (a registered workspace only)."""
        workspace = request.query_params.get("workspace", "")
        return Response({"workspace": workspace, "files": md_files.markdown_files(workspace)})
