"""Workspaces and previews for MCP tools (their DomainErrors become tool errors in server.py)."""

from __future__ import annotations

from typing import Any

from core import public_urls
from core.errors import DomainError
from previews_app import selectors as preview_selectors
from previews_app import services as preview_services
from sessions_app import selectors, services


def _caller_workspace(session_id: str | None) -> str:
    session = selectors.session_get(session_id) if session_id else None
    return session.workspace if session is not None else ""


def workspace_register(*, cwd: str, name: str | None) -> dict[str, Any]:
    try:
        workspace, created = services.workspace_register(path=cwd, name=name or "")
    except DomainError as exc:
        message = f"{exc.message}. Pass cwd: the absolute path of an existing directory."
        raise DomainError(message) from exc
    return {
        "workspace_id": workspace.pk,
        "path": workspace.path,
        "name": workspace.name,
        "created": created,
    }


def preview_publish(
    *,
    port: int | None,
    file: str | None,
    cwd: str | None,
    title: str | None,
    session_id: str | None,
    online: dict[str, str],  # the online tunnels' public URLs: where a share link points
) -> dict[str, Any]:
    workspace = cwd or _caller_workspace(session_id)
    preview = preview_services.preview_publish(
        port=port, file=file, workspace=workspace, title=title or "", session_id=session_id
    )
    outside = public_urls.share_base(online)
    return preview_selectors.preview_links(preview, outside=outside)
