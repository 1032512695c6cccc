"""Registering and removing a workspace write the database and settings.json as one step against
the settings mirror (the watcher's `settings_sync`, on another thread): a mirror that read
settings.json before a removal must not bring the removed workspace back (found by the
dashboard's remove test: the watcher, applying the registration a moment late, re-created the
row the removal had just deleted, and the mirror never drops rows)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from core import config
from core import settings_store as settings_services
from harness.runtime import settings_file
from sessions_app import services
from sessions_app.models import Workspace

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_removed_workspace_stays_removed_while_the_mirror_runs(tmp_path: Path) -> None:
    folders = [tmp_path / f"w{i}" for i in range(10)]
    stop = threading.Event()

    def mirror() -> None:  # what the settings watcher does on every change it notices
        while not stop.is_set():
            settings_services.settings_sync()

    with settings_file({}):
        watcher = threading.Thread(target=mirror)
        watcher.start()
        try:
            for folder in folders:
                folder.mkdir()
                workspace, _ = services.workspace_register(path=str(folder))
                services.workspace_delete(workspace_id=workspace.pk)
        finally:
            stop.set()
            watcher.join()
        settings_services.settings_sync()
        assert list(config.current_settings().workspaces) == []
        assert list(Workspace.objects.values_list("path", flat=True)) == []
