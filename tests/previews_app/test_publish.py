"""preview_publish and preview_delete: reuse rules, slugs, refusals, the Markdown file rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.errors import DomainError, NotFound
from previews_app import services
from previews_app.models import Preview
from sessions_app.services import workspace_register

pytestmark = pytest.mark.django_db


def test_a_port_preview_is_reused_per_workspace_and_port(tmp_path: Path) -> None:
    first = services.preview_publish(port=5173, workspace=str(tmp_path), title="My App")
    again = services.preview_publish(port=5173, workspace=str(tmp_path))
    other = services.preview_publish(port=5173, workspace="/")
    assert again.pk == first.pk and again.slug == first.slug
    assert other.pk != first.pk
    assert Preview.objects.count() == 2


def test_owner_slugs_are_readable_dns_labels_and_shares_are_128_bit_random() -> None:
    preview = services.preview_publish(port=3000, title="Docs Site!")
    assert re.fullmatch(r"docs-site-[a-z0-9]{10}", preview.slug)
    assert re.fullmatch(r"[0-9a-f]{32}", preview.share_slug or "")
    before = preview.share_slug
    assert services.preview_publish(port=3000).share_slug != before


@pytest.mark.parametrize("port", [0, 22, 443, 3306, 6379, 6380, 11211, 70000])
def test_refused_ports(port: int) -> None:
    with pytest.raises(DomainError):
        services.preview_publish(port=port)


def test_exactly_one_of_port_or_file() -> None:
    with pytest.raises(DomainError, match="exactly one"):
        services.preview_publish()


def test_a_markdown_file_is_reused_and_must_stay_inside_a_registered_workspace(
    tmp_path: Path,
) -> None:
    (tmp_path / "README.md").write_text("# hi")
    with pytest.raises(DomainError, match="register its folder"):
        services.preview_publish(file="README.md", workspace=str(tmp_path))
    workspace_register(path=str(tmp_path))
    first = services.preview_publish(file="README.md", workspace=str(tmp_path))
    again = services.preview_publish(file=str(tmp_path / "README.md"), workspace=str(tmp_path))
    assert first.pk == again.pk and first.kind == "file"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("# secret")
    (tmp_path / "link.md").symlink_to(outside)
    for bad in ("link.md", "../" + outside.name, str(outside), "missing.md"):
        with pytest.raises(DomainError):
            services.preview_publish(file=bad, workspace=str(tmp_path))


def test_delete_removes_and_unknown_slug_is_not_found() -> None:
    preview = services.preview_publish(port=8080)
    services.preview_delete(slug=preview.slug)
    with pytest.raises(NotFound):
        services.preview_delete(slug=preview.slug)


def test_links_for_the_mcp_tools(tmp_path: Path) -> None:
    from core import config
    from previews_app import selectors

    dashboard = f"http://{config.current_auth().browser_host}:8000"
    live = services.preview_publish(port=5173)
    links = selectors.preview_links(live, "http://127.0.0.1:8000")
    # The owner opens it in the browser logged in on the dashboard host; anyone, the share.
    assert links["owner_url"] == f"{dashboard}/preview/u/{live.slug}/"
    assert links["share_url"] == f"http://127.0.0.1:8000/preview/s/{live.share_slug}/"
    assert links["share_expires_at"]
    (tmp_path / "a.md").write_text("# a")
    workspace_register(path=str(tmp_path))
    doc = services.preview_publish(file="a.md", workspace=str(tmp_path))
    assert (
        selectors.preview_links(doc, "http://h:8000")["owner_url"]
        == f"{dashboard}/md-preview/{doc.slug}"
    )
    assert "share_url" not in selectors.preview_links(doc)
