"""Which files a Markdown preview may read: normalise once, then judge the real path.

URL-string checks are what Vite's fs.deny and VS Code Live Preview got wrong repeatedly (encoded
`..`, query tricks, symlinks); here every answer comes from the resolved filesystem path, which
must stay inside the preview's workspace (also resolved), compared by path components.
"""

from __future__ import annotations

import os
from pathlib import Path

from previews_app.models import Preview

MAX_ASSET_BYTES = 20 * 1024 * 1024


class Refused(Exception):
    """The path is not one this preview may serve; the message says so without echoing it."""


def _inside(path: Path, root: Path) -> bool:
    return os.path.commonpath([str(path), str(root)]) == str(root)


def markdown_path(preview: Preview) -> Path:
    root = Path(preview.workspace).resolve()
    real = Path(preview.file).resolve()
    if not _inside(real, root) or not real.is_file():
        raise Refused("the previewed file is outside its workspace")
    return real


def asset_path(preview: Preview, rest: str) -> Path:
    """`rest` as decoded from the URL. Anything but a plain relative path is refused outright;
    what remains is resolved (symlinks followed) and must land inside the workspace."""
    parts = rest.split("/")
    if (
        not rest
        or "\x00" in rest
        or "\\" in rest
        or rest.startswith("/")
        or any(p in ("..", ".", "") for p in parts)
        or "%" in rest  # already decoded once: a second layer of encoding is never legitimate
    ):
        raise Refused("That path is not allowed here.")
    folder = markdown_path(preview).parent
    real = (folder / rest).resolve()
    if not _inside(real, Path(preview.workspace).resolve()):
        raise Refused("That file is outside the preview's workspace.")
    if not real.is_file() or real.stat().st_size > MAX_ASSET_BYTES:
        raise Refused("No such file next to the Markdown file.")
    return real
