"""/api/ views for sessions, workspaces, agents, channels, tunnels and settings: parse, call one
service or selector, shape the answer."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import DomainError
from sessions_app import (
    agent_logs,
    agent_settings,
    handover,
    mirrors,
    parts,
    selectors,
    services,
)


class WorkspaceIn(serializers.Serializer):
    path = serializers.CharField()
    name = serializers.CharField(required=False, allow_blank=True, default="")


class WorkspaceListView(APIView):
    def get(self, request: Request) -> Response:
        return Response([w.to_dict() for w in selectors.workspace_list()])

    @extend_schema(request=WorkspaceIn)
    def post(self, request: Request) -> Response:
        data = WorkspaceIn(data=request.data)
        data.is_valid(raise_exception=True)
        workspace, created = services.workspace_register(**data.validated_data)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response({**workspace.to_dict(), "created": created}, status=code)


class WorkspaceRenameIn(serializers.Serializer):
    name = serializers.CharField(max_length=200, allow_blank=True)


class WorkspaceDetailView(APIView):
    @extend_schema(request=WorkspaceRenameIn)
    def patch(self, request: Request, workspace_id: int) -> Response:
        """Renames (the name lives in the database; settings.json lists paths only)."""
        data = WorkspaceRenameIn(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = services.workspace_rename(workspace_id=workspace_id, **data.validated_data)
        return Response(workspace.to_dict())

    def delete(self, request: Request, workspace_id: int) -> Response:
        services.workspace_delete(workspace_id=workspace_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentListView(APIView):
    def get(self, request: Request) -> Response:
        """Each row says how to install a built-in that is not (`install`); a CLI installed since
        the last look is found here (mirrors.agents_rescan)."""
        mirrors.agents_rescan()
        return Response([a.to_dict() for a in selectors.agent_list()])


def _argv() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(trim_whitespace=False), required=False, default=list
    )


class AgentIn(serializers.Serializer):
    """An agent entry's known keys (contract §1); omitted or empty ones are removed from it."""

    enabled = serializers.BooleanField(required=False, allow_null=True, default=None)
    command = _argv()
    acp_command = _argv()
    env = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        default=dict,
    )


class AgentDetailView(APIView):
    """PUT writes the agent's entry in settings.json (an override for a built-in), keeping the
    entry's unknown keys; DELETE removes the entry."""

    def get(self, request: Request, name: str) -> Response:
        agent = selectors.agent_get(name)
        if agent is None:
            raise NotFound(f"no agent {name!r}")
        return Response(agent.to_dict())

    @extend_schema(request=AgentIn)
    def put(self, request: Request, name: str) -> Response:
        """`?check=0` answers once the entry is written, without the check (which can take
        seconds): the dashboard shows the saved row at once and asks POST …/check next."""
        data = AgentIn(data=request.data)
        data.is_valid(raise_exception=True)
        agent, created = agent_settings.agent_save(name=name, **data.validated_data)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        if request.query_params.get("check") == "0":
            return Response(agent.to_dict(), status=code)
        # Saved either way; the check says whether it will start (issue 34).
        return Response({**agent.to_dict(), "check": agent_settings.agent_check(name)}, status=code)

    def delete(self, request: Request, name: str) -> Response:
        agent_settings.agent_remove(name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentCheckView(APIView):
    """POST: whether the agent as saved will start (its command found; an ACP agent answers
    `initialize`), `{ok, message}`, or null when there is nothing of its own to check."""

    def post(self, request: Request, name: str) -> Response:
        if selectors.agent_get(name) is None:
            raise NotFound(f"no agent {name!r}")
        return Response(agent_settings.agent_check(name))


class SessionIn(serializers.Serializer):
    agent = serializers.CharField()
    workspace = serializers.CharField()
    kind = serializers.ChoiceField(choices=["terminal", "chat"], default="terminal")
    profile_id = serializers.CharField(required=False, allow_blank=True, default="")
    cols = serializers.IntegerField(required=False, default=80, min_value=1, max_value=1000)
    rows = serializers.IntegerField(required=False, default=24, min_value=1, max_value=1000)
    title = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class SessionListView(APIView):
    def get(self, request: Request) -> Response:
        """`?status=live|exited` and `?q=<text>` (title, agent, workspace or id prefix) filter."""
        params = request.query_params
        return Response(
            selectors.session_list_dicts(status=params.get("status", ""), q=params.get("q", ""))
        )

    @extend_schema(request=SessionIn)
    def post(self, request: Request) -> Response:
        data = SessionIn(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.session_create(
            host=parts.of_request(request).host, **data.validated_data
        )
        return Response(session.to_dict(), status=status.HTTP_201_CREATED)


def _session_id(given: str) -> str:
    found = selectors.session_id_resolve(given)
    if not found:
        raise NotFound(f"no session {given} (give its id or a unique prefix of 4+ characters)")
    return found


class SessionRenameIn(serializers.Serializer):
    title = serializers.CharField(max_length=200, allow_blank=True)


class SessionDetailView(APIView):
    def get(self, request: Request, session_id: str) -> Response:
        session = selectors.session_get(_session_id(session_id))
        if session is None:
            raise NotFound(f"no session {session_id}")
        return Response(session.to_dict())

    @extend_schema(request=SessionRenameIn)
    def patch(self, request: Request, session_id: str) -> Response:
        """Renames; a blank title gives naming back to the agent and the first prompt."""
        data = SessionRenameIn(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.session_rename(session_id=_session_id(session_id), **data.validated_data)
        return Response(session.to_dict())

    def delete(self, request: Request, session_id: str) -> Response:
        """Stops the process tree; the row stays. 202 with the row as it is now while the stop
        runs in the background (the live list shows `exited` when it is); `?wait=1` answers 200
        once the row is `exited`. `?remove=1` instead deletes an ended session's row and its
        chat history (204); a live one is refused with 409."""
        if request.query_params.get("remove") in ("1", "true"):
            services.session_remove(session_id=_session_id(session_id))
            return Response(status=status.HTTP_204_NO_CONTENT)
        wait = request.query_params.get("wait") in ("1", "true")
        session, pending = services.session_stop(
            host=parts.of_request(request).host, session_id=_session_id(session_id), wait=wait
        )
        code = status.HTTP_202_ACCEPTED if pending else status.HTTP_200_OK
        return Response(session.to_dict(), status=code)


class SessionStopAllView(APIView):
    @extend_schema(request=None)
    def post(self, request: Request) -> Response:
        """Stops every live session, as DELETE /api/sessions/{id} would each (`ended_by` user),
        and answers once all have ended: `{"stopped": n}`."""
        return Response(
            {"stopped": services.sessions_stop_all(host=parts.of_request(request).host)}
        )


class SessionResumeView(APIView):
    @extend_schema(request=None)
    def post(self, request: Request, session_id: str) -> Response:
        """Brings an ended session back to `running` under the same id and answers its row; a
        session svc hosts right now is answered as it is. One that cannot be resumed is the
        service's refusal (4xx, saying why)."""
        session = services.session_resume(
            host=parts.of_request(request).host, session_id=_session_id(session_id)
        )
        return Response(session.to_dict())


class SessionHandoverView(APIView):
    @extend_schema(request=None)
    def post(self, request: Request, session_id: str) -> Response:
        """A handover code for this session (contract §4's, as the MCP tool `prepare_handover`
        gives): 201 `{code, expires_at, expires_in, pickup}`; the session's chat shows it too."""
        offer = services.handover_offer(
            session_id=_session_id(session_id), host=parts.of_request(request).host
        )
        return Response(offer, status=status.HTTP_201_CREATED)


class SessionEventView(APIView):
    def get(self, request: Request, session_id: str, seq: int) -> Response:
        """One stored chat event, whole: what a /ws/chat event cut at the frame limit
        (`truncated: true`) names in its `fetch` (docs/sessions.md, "Frames"). Whoever may read
        the chat on /ws/chat may read this."""
        event = selectors.session_event(_session_id(session_id), seq)
        if event is None:
            raise NotFound(f"no event {seq} in session {session_id}")
        return Response(event)


LOG_KIB_MAX = 1024
LOG_MAIN_PORT_ONLY = (
    "an agent's log may hold secrets (what it printed of its environment): read it on svc's "
    "own machine (its dashboard, or $SVC_HOME/logs there); a paired device sees its last lines "
    "in the session's detail"
)


class SessionLogView(APIView):
    def get(self, request: Request, session_id: str) -> Response | HttpResponse:
        """The end of the agent's own log (its stderr): what a failed start or prompt links to.
        `?kib=N` (default 64, at most 1024) the last N KiB; `?as=text` plain text (what the
        chat pane's "Open the log" opens), else JSON `{session_id, log}`. The machine's own:
        a log may hold what an agent printed of its environment (docs/security.md)."""
        if request._request.scope.get("svc_remote"):
            raise DomainError(LOG_MAIN_PORT_ONLY, status=403, code="main_port_only")
        session = selectors.session_get(_session_id(session_id))
        if session is None:
            raise NotFound(f"no session {session_id}")
        try:
            kib = min(max(int(request.query_params.get("kib", 64)), 1), LOG_KIB_MAX)
        except ValueError as exc:
            raise DomainError("kib must be a whole number of KiB") from exc
        log = agent_logs.read(session.id, kib * 1024)
        if request.query_params.get("as") == "text":
            return HttpResponse(log, content_type="text/plain; charset=utf-8")
        return Response({"session_id": str(session.id), "log": log})


class PickupIn(serializers.Serializer):
    code = serializers.CharField(max_length=16)


class HandoverPickupView(APIView):
    """Consumes a handover code (once) and answers the session it hands over."""

    @extend_schema(request=PickupIn)
    def post(self, request: Request) -> Response:
        data = PickupIn(data=request.data)
        data.is_valid(raise_exception=True)
        failures = parts.of_request(request).handover_failures
        if request._request.scope.get("svc_fleet"):
            # Asked by another member of the fleet, which counts a failed pickup once for the
            # whole fleet (fleet_app.middleware): its guesses are limited there.
            failures = handover.FailureWindow()
        session = services.handover_redeem(code=data.validated_data["code"], failures=failures)
        return Response(session.to_dict())
