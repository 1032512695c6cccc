"""Permission decisions (contract §17): `GET /api/approvals` (the record) and
`GET`/`POST /api/sessions/{id}/permissions` (what waits, and answering it through the API).

Who may call: the owner on the main port; a paired device through the remote listener (a read,
and an answer — a paired device uses sessions, and already answers on `/ws/chat`; docs/remote.md).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import DomainError
from sessions_app import approvals, parts, selectors


def _session_id(given: str) -> str:
    found = selectors.session_id_resolve(given)
    if not found:
        raise NotFound(f"no session {given} (give its id or a unique prefix of 4+ characters)")
    return found


def _limit(raw: str | None) -> int:
    if raw is None or raw == "":
        return 200
    try:
        return int(raw)
    except ValueError:
        raise DomainError(f"limit must be a whole number, got {raw!r}") from None


class DecidedByOut(serializers.Serializer):
    surface = serializers.ChoiceField(choices=approvals.SURFACES)
    who = serializers.CharField()


class ApprovalOut(serializers.Serializer):
    id = serializers.UUIDField()
    session_id = serializers.UUIDField()
    agent = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField(help_text="the tool call's kind (edit, execute, …); may be empty")
    options = serializers.ListField(child=serializers.DictField())
    chosen = serializers.CharField(
        allow_null=True, help_text="the option_id the agent was answered with; null: none"
    )
    decided_by = DecidedByOut()
    requested_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField()
    request_id = serializers.CharField(help_text="empty when answered by policy")
    seq = serializers.IntegerField(help_text="the permission_resolved event in the history")


class ApprovalListView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("session_id", OpenApiTypes.STR, description="its id or a prefix"),
            OpenApiParameter(
                "since", OpenApiTypes.STR, description="ISO date or datetime (naive: UTC)"
            ),
            OpenApiParameter("limit", OpenApiTypes.INT, description="1..1000, default 200"),
        ],
        responses=ApprovalOut(many=True),
    )
    def get(self, request: Request) -> Response:
        """Every permission decision, newest first: asked and answered on a surface, answered
        by policy, or cancelled (timed out, the turn cancelled)."""
        params = request.query_params
        session = params.get("session_id", "")
        return Response(
            selectors.approval_list_dicts(
                session_id=_session_id(session) if session else "",
                since=approvals.since_parse(params.get("since")),
                limit=_limit(params.get("limit")),
            )
        )


class PermissionAnswerIn(serializers.Serializer):
    request_id = serializers.CharField(max_length=64)
    option_id = serializers.CharField(max_length=200)


class SessionPermissionsView(APIView):
    def get(self, request: Request, session_id: str) -> Response:
        """The session's permission requests waiting for an answer (`permission_request`
        events); empty unless it is a live chat asking right now."""
        sid = _session_id(session_id)
        return Response(
            approvals.permissions_pending(host=parts.of_request(request).host, session_id=sid)
        )

    @extend_schema(request=PermissionAnswerIn, responses={204: None})
    def post(self, request: Request, session_id: str) -> Response:
        """Answers one waiting request; recorded with `decided_by.surface` `api`."""
        data = PermissionAnswerIn(data=request.data)
        data.is_valid(raise_exception=True)
        approvals.permission_answer(
            host=parts.of_request(request).host,
            session_id=_session_id(session_id),
            by=approvals.decided_by(
                "api", approvals.caller(getattr(request._request, "scope", {}))
            ),
            **data.validated_data,
        )
        return Response(status=204)
