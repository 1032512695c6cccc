"""Workspaces: registered once per folder (and listed in settings.json), renamed, removed."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction

from core import config, errors
from core import settings_store as settings_services
from core.errors import DomainError
from sessions_app.models import Workspace

if TYPE_CHECKING:
    pass

logger = logging.getLogger("sessions_app.services")


def _normalise_workspace(path: str) -> Path:
    if not path or not os.path.isabs(path):
        raise DomainError(f"workspace path must be absolute, got {path!r}")
    resolved = Path(path).resolve()
    if not resolved.is_dir():
        raise DomainError(f"workspace {path!r} is not an existing directory")
    return resolved


def workspace_register(*, path: str, name: str = "") -> tuple[Workspace, bool]:
    """Idempotent: the same directory always maps to one row; also recorded in settings.json."""
    resolved = _normalise_workspace(path)
    with settings_services.SETTINGS_LOCK, transaction.atomic():
        workspace, created = Workspace.objects.get_or_create(
            path=str(resolved), defaults={"name": name or resolved.name}
        )
        if not created and name and workspace.name != name:
            workspace.name = name
            workspace.save(update_fields=["name"])
        declared = list(config.current_settings().workspaces)
        if str(resolved) not in declared:
            config.update_settings({"workspaces": [*declared, str(resolved)]})
    return workspace, created


def workspace_rename(*, workspace_id: int, name: str) -> Workspace:
    """A workspace's name is svc's own (the database's): settings.json lists only paths. A blank
    name goes back to the folder's name."""
    with transaction.atomic():
        workspace = Workspace.objects.select_for_update().filter(pk=workspace_id).first()
        if workspace is None:
            raise errors.NotFound(f"no workspace with id {workspace_id}")
        workspace.name = name.strip() or Path(workspace.path).name
        workspace.save(update_fields=["name"])
    return workspace


def workspace_delete(*, workspace_id: int) -> None:
    # The row and settings.json change as one against the settings mirror: a mirror that read
    # settings.json before the removal would otherwise re-create the row it just deleted.
    with settings_services.SETTINGS_LOCK, transaction.atomic():
        workspace = Workspace.objects.filter(pk=workspace_id).first()
        if workspace is None:
            raise errors.NotFound(f"no workspace with id {workspace_id}")
        workspace.delete()
        declared = list(config.current_settings().workspaces)
        if workspace.path in declared:
            config.update_settings({"workspaces": [p for p in declared if p != workspace.path]})
