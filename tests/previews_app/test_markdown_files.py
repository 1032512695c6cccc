"""Which files a Markdown preview may serve: the resolved path decides, inside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from previews_app import files
from previews_app.models import Preview


@pytest.fixture
def preview(tmp_path: Path) -> Preview:
    ws = tmp_path / "ws"
    (ws / "docs" / "img").mkdir(parents=True)
    (ws / "docs" / "guide.md").write_text("# guide")
    (ws / "docs" / "img" / "a.png").write_bytes(b"\x89PNG")
    (ws / "logo.png").write_bytes(b"\x89PNG")
    (tmp_path / "secret.png").write_bytes(b"secret")
    (ws / "docs" / "escape.png").symlink_to(tmp_path / "secret.png")
    (ws / "docs" / "inside.png").symlink_to(ws / "logo.png")
    return Preview(slug="g", kind="file", file=str(ws / "docs" / "guide.md"), workspace=str(ws))


def test_images_next_to_the_file_and_inside_the_workspace_are_served(preview: Preview) -> None:
    assert files.asset_path(preview, "img/a.png").name == "a.png"
    assert files.asset_path(preview, "inside.png").name == "logo.png"


@pytest.mark.parametrize(
    "rest",
    [
        "../logo.png",
        "../../secret.png",
        "img/../../logo.png",
        "/etc/passwd",
        "escape.png",
        "%2e%2e/logo.png",
        "img\\..\\a.png",
        "img/a.png\x00.md",
        "",
        "./img/a.png",
        "nope.png",
    ],
)
def test_escapes_are_refused(preview: Preview, rest: str) -> None:
    with pytest.raises(files.Refused):
        files.asset_path(preview, rest)
