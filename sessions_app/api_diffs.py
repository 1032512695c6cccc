"""/api/ views for diff review (contract §10): a session's or a subagent's changes against its base
commit, merging or discarding a subagent's branch (sessions_app/diffs.py does the git), and line
comments sent to the agent as one prompt (sessions_app/diff_comments.py)."""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app import diff_comments, diffs, selectors
from sessions_app.models import Session
from sessions_app.worktrees import GitError
from svcproject.errors import DomainError, NotFound


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
    sent = diff_comments.send(session, text)
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
