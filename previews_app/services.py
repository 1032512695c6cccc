"""Writes for previews (contract §8): publish a live or Markdown preview, delete one.

A port preview is reused per workspace+port and a file preview per file, so an agent that calls
`preview` again gets the same owner URL. Every publish of a port preview issues a fresh share slug
valid for SHARE_SECONDS: a share URL is a capability that leaks easily, so old ones stop working.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from core import config, errors
from core.errors import DomainError
from previews_app.models import Preview
from previews_app.selectors import share_seal
from sessions_app import selectors as sessions_selectors

SHARE_SECONDS = 600
DENIED_PORTS = frozenset(
    {22, 25, 53, 110, 143, 389, 443, 445, 993, 995, 1433, 1521, 2049, 3306, 5432, 5672, 6379}
    | {6380, 9200, 11211, 27017}
    # Debuggers and container control: a page that reaches them runs code (contract §4).
    | {2375, 2376, 5900, 6443, 9222, 9229, 10250}
)
_SUFFIX_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
Clock = Callable[[], datetime]


def port_refusal(port: int, own_port: int | None = None) -> str | None:
    """Why svc will not proxy to this port, or None. Checked at publish and again per request."""
    if not 1 <= port <= 65535:
        return f"port must be 1-65535, got {port}"
    if port in DENIED_PORTS:
        return f"port {port} is on the deny-list (databases, mail, ssh…): svc never proxies to it"
    if port in {config.svc_port(), own_port}:
        return f"port {port} is svc's own port"
    return None


def _owner_slug(label: str) -> str:
    """Readable prefix + 10 random characters (~50 bits); also a valid DNS label for the
    preview's own origin `{slug}.localhost`."""
    prefix = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:40].strip("-") or "preview"
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(10))
    return f"{prefix}-{suffix}"


def _share_slug() -> str:
    return secrets.token_hex(16)  # 128 bits; hex so it survives case-folding proxies


def nothing_listens(port: int) -> str | None:
    """A warning when no server answers a TCP connect on loopback (IPv4 or IPv6, as the proxy
    tries both): the preview is still made, since a dev server is often started after it."""
    for host in ("127.0.0.1", "::1"):
        try:
            with socket.create_connection((host, port), timeout=0.3):
                return None
        except OSError:
            continue
    return (
        f"nothing listens on port {port} yet: the preview shows an error until a server "
        "is started there"
    )


def workspace_roots() -> list[Path]:
    """Every registered workspace (svc's and settings.json's), resolved."""
    return _workspace_roots()


def _workspace_roots() -> list[Path]:
    roots = [Path(w.path) for w in sessions_selectors.workspace_list()]
    roots += [Path(p) for p in config.current_settings().workspaces]
    return [r.resolve() for r in roots]


def _inside(path: Path, root: Path) -> bool:
    return os.path.commonpath([path, root]) == str(root)


def markdown_file_resolve(
    file: str, cwd: str = "", session_workspace: str = ""
) -> tuple[Path, Path]:
    """(real file, real workspace root). The file must resolve, symlinks followed, inside a
    registered workspace or the calling session's workspace (contract §4); `cwd` only says where a
    relative path starts — it is not a root, or `cwd: "/"` would open every file."""
    if not file or "\x00" in file:
        raise DomainError("file must be a path to a Markdown file")
    if cwd and not os.path.isabs(cwd):
        raise DomainError(f"cwd must be an absolute path, got {cwd!r}")
    if not os.path.isabs(file) and not cwd:
        raise DomainError("a relative file needs cwd (the directory it is relative to)")
    real = Path(cwd or "/", file).resolve()
    if not real.is_file():
        raise DomainError(f"{file!r} is not an existing file")
    roots = ([Path(session_workspace).resolve()] if session_workspace else []) + _workspace_roots()
    for root in roots:
        if root.is_dir() and _inside(real, root):
            return real, root
    raise DomainError(
        f"{file!r} is outside every registered workspace and your session's workspace; "
        "register its folder first (register_workspace)"
    )


def _session_workspace(session_id: str | None) -> tuple[str | None, str]:
    """(session id, its workspace) of the caller, or (None, "")."""
    if not session_id:
        return None, ""

    session = sessions_selectors.session_get(session_id)
    if session is None:
        raise errors.NotFound(f"no session {session_id}")
    return session_id, session.workspace


def preview_publish(
    *,
    port: int | None = None,
    file: str | None = None,
    workspace: str = "",
    title: str = "",
    session_id: str | None = None,
    clock: Clock = timezone.now,
) -> Preview:
    """Create or reuse the preview of `port` (per workspace) or of Markdown `file` (per file)."""
    if (port is None) == (file is None):
        raise DomainError("send exactly one of port (a dev server) or file (a Markdown file)")
    sid, session_workspace = _session_workspace(session_id)
    if port is not None:
        return _publish_port(port=port, workspace=workspace, title=title, sid=sid, clock=clock)
    real, root = markdown_file_resolve(file or "", workspace, session_workspace)
    return _publish_file(real=real, root=root, title=title, sid=sid)


def _publish_port(
    *, port: int, workspace: str, title: str, sid: str | None, clock: Clock
) -> Preview:
    refusal = port_refusal(port)
    if refusal:
        raise DomainError(refusal)
    if workspace and not os.path.isabs(workspace):
        raise DomainError(f"workspace must be an absolute path, got {workspace!r}")
    workspace = str(Path(workspace).resolve()) if workspace else ""
    with transaction.atomic():
        preview = Preview.objects.filter(
            kind=Preview.Kind.PORT, workspace=workspace, port=port
        ).first()
        if preview is None:
            label = title or f"{Path(workspace).name or 'port'}-{port}"
            preview = Preview(kind=Preview.Kind.PORT, port=port, workspace=workspace)
            preview.slug = _owner_slug(label)
        preview.title = title or preview.title
        preview.session_id = sid or preview.session_id
        preview.share_slug = _share_slug()
        preview.share_expires_at = clock() + timedelta(seconds=SHARE_SECONDS)
        preview.share_seal = share_seal(preview)
        preview.created_now = preview._state.adding  # type: ignore[attr-defined]
        preview.save()
    preview.warning = nothing_listens(port)  # type: ignore[attr-defined]
    return preview


def _publish_file(*, real: Path, root: Path, title: str, sid: str | None) -> Preview:
    with transaction.atomic():
        preview = Preview.objects.filter(kind=Preview.Kind.FILE, file=str(real)).first()
        if preview is None:
            preview = Preview(kind=Preview.Kind.FILE, file=str(real), workspace=str(root))
            preview.slug = _owner_slug(title or real.stem)
        preview.workspace = str(root)
        preview.title = title or preview.title or real.name
        preview.session_id = sid or preview.session_id
        preview.created_now = preview._state.adding  # type: ignore[attr-defined]
        preview.save()
    return preview


def preview_delete(*, slug: str) -> None:
    with transaction.atomic():
        deleted, _ = Preview.objects.filter(slug=slug).delete()
    if not deleted:
        raise errors.NotFound(f"no preview {slug}")
