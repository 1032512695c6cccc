"""The Markdown files of a registered workspace, for the dashboard's "preview a file" picker.

Only a registered workspace is listed (the same roots `markdown_file_resolve` accepts), the walk
never follows a symlinked folder, and a symlinked file is listed only when its real path stays in
the workspace: the list can name nothing that a preview of it would then refuse.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import DomainError
from previews_app import services

MAX_FILES = 500
# Folders no one previews Markdown from, and that can hold tens of thousands of files.
SKIPPED = frozenset({"node_modules", "__pycache__", "venv", "dist", "build", "target"})


def markdown_files(workspace: str) -> list[str]:
    """Paths relative to `workspace` of its *.md files, sorted, at most MAX_FILES."""
    if not workspace or not os.path.isabs(workspace):
        raise DomainError("workspace must be the absolute path of a registered workspace")
    root = Path(workspace).resolve()
    if root not in services.workspace_roots() or not root.is_dir():
        raise DomainError(f"{workspace!r} is not a registered workspace")
    found: list[str] = []
    for folder, dirs, files in os.walk(root):  # followlinks=False: a linked folder is not walked
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED)
        for name in sorted(files):
            if not name.lower().endswith((".md", ".markdown")):
                continue
            path = Path(folder, name)
            real = path.resolve()
            if real.is_file() and os.path.commonpath([real, root]) == str(root):
                found.append(str(path.relative_to(root)))
            if len(found) >= MAX_FILES:
                return found
    return found
