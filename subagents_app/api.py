"""/api/ views for subagent turns and diff review (contract §4, §10): turns listed and
cancelled, a session's or a subagent's changes against its base commit, merging or discarding
a branch (subagents_app/diffs.py does the git), and line comments sent to the agent."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import DomainError, NotFound
from sessions_app import selectors
from sessions_app.models import Session
from subagents_app import diff_comments, diffs, parts, subagents
from subagents_app.models import SubagentTurn
from subagents_app.worktrees import GitError


def _git_failed(exc: GitError) -> DomainError:
    return DomainError(f"git failed: {exc}", status=500, code="git_error")


class SessionDiffView(APIView):
    def get(self, request: Request, session_id: str) -> Response:
        session = selectors.session_get(session_id)
        if session is None:
            raise NotFound(f"no session {session_id!r}; use an id from GET /api/sessions")
        try:
            return Response(diffs.session_diff(session))
        except GitError as exc:
            raise _git_failed(exc) from exc


class SubagentDiffView(APIView):
    def get(self, request: Request, run_id: str) -> Response:
        try:
            return Response(diffs.subagent_diff(diffs.subagent_get(run_id)))
        except GitError as exc:
            raise _git_failed(exc) from exc


class SubagentMergeView(APIView):
    def post(self, request: Request, run_id: str) -> Response:
        """200 `{merged: true, base_commit, fast_forward, …}`; 409 on conflict, naming the files
        (the base branch and its work tree are left exactly as they were)."""
        try:
            return Response(diffs.merge(diffs.subagent_get(run_id)))
        except diffs.MergeConflict as exc:
            body = {"status": 409, "code": "conflict", "message": exc.message, "files": exc.files}
            return Response({"error": body}, status=status.HTTP_409_CONFLICT)
        except GitError as exc:
            raise _git_failed(exc) from exc


class SubagentDiscardView(APIView):
    def post(self, request: Request, run_id: str) -> Response:
        try:
            diffs.discard(diffs.subagent_get(run_id))
        except GitError as exc:
            raise _git_failed(exc) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)


def _comments_sent(request: Request, target: tuple[Session, dict[str, Any]]) -> Response:
    """202 `{prompt, session_id, comments, resumed}`: the prompt is on its way to the agent."""
    session, found = target
    comments = diff_comments.parse(request.data, [f["path"] for f in found["files"]])
    text = diff_comments.prompt_text(comments, found)
    sent = diff_comments.send(session, text, parts.of_request(request).host)
    body = {"prompt": text, "comments": len(comments), **sent}
    return Response(body, status=status.HTTP_202_ACCEPTED)


class SessionDiffCommentsView(APIView):
    def post(self, request: Request, session_id: str) -> Response:
        try:
            return _comments_sent(request, diff_comments.target_of_session(session_id))
        except GitError as exc:
            raise _git_failed(exc) from exc


class SubagentDiffCommentsView(APIView):
    def post(self, request: Request, run_id: str) -> Response:
        try:
            return _comments_sent(request, diff_comments.target_of_subagent(run_id))
        except GitError as exc:
            raise _git_failed(exc) from exc


class SubagentTurnListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(subagents.turn_list())


def _turn_id(given: str) -> str:
    """A turn id from the id itself or a unique prefix of 4+ characters (what `manage.py turns`
    and the dashboard print); an unknown or ambiguous one is left for turn_get's 404."""
    prefix = given.strip().lower()
    if len(prefix) < 4 or len(prefix) >= 36 or any(c not in "0123456789abcdef-" for c in prefix):
        return given
    found = [
        str(pk)
        for pk in SubagentTurn.objects.values_list("pk", flat=True)
        if str(pk).startswith(prefix)
    ][:2]
    if len(found) > 1:
        raise NotFound(f"subagent turn {given!r} is ambiguous: give more of its id")
    return found[0] if found else given


class SubagentTurnDetailView(APIView):
    def get(self, request: Request, turn_id: str) -> Response:
        return Response(subagents.turn_snapshot(_turn_id(turn_id)))

    def delete(self, request: Request, turn_id: str) -> Response:
        """Cancels every running subagent of the turn (ACP cancel, then the process tree) and
        answers once they have stopped; `?cleanup=1` also removes its worktrees and branches."""
        cleanup = request.query_params.get("cleanup") in ("1", "true")
        cancelled = subagents.turn_cancel(
            runs=parts.of_request(request).subagents, turn_id=_turn_id(turn_id), cleanup=cleanup
        )
        return Response(cancelled)
