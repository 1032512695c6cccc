"""/md-preview/{slug}: the Markdown file rendered on every request, the images next to it, and
the Markdown files it links to. /docs/{name}.md: svc's own docs, rendered the same way.

The owner check happens in front (previews_app.asgi, then OwnerTokenMiddleware). The page runs no
script but svc's own nonce-tagged poller, which reloads it when the file's version changes.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import secrets
from html import escape
from pathlib import Path

from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe

from previews_app import files, markdown, parts, render_pool, selectors

_CODE_CSS = markdown.code_css()
DOCS = Path(__file__).resolve().parents[1] / "docs"  # this clone's docs/
_DOC_NAME = re.compile(r"[a-z0-9][a-z0-9-]*\.md")
_POLL = (
    "(function(){var v=document.querySelector('meta[name=svc-version]').content;"
    "function poll(){window.fetch(location.pathname+'?version=1',{cache:'no-store'})"
    ".then(function(r){return r.json()}).then(function(j){"
    "if(j.version&&j.version!==v){location.reload()}else{setTimeout(poll,1000)}})"
    ".catch(function(){setTimeout(poll,3000)})}setTimeout(poll,1000)})();"
)


def _csp(nonce: str) -> str:
    return (
        f"default-src 'none'; img-src 'self' data:; style-src 'nonce-{nonce}'; "
        "style-src-attr 'unsafe-inline'; "  # only text-align survives the sanitiser
        f"script-src 'nonce-{nonce}'; connect-src 'self'; base-uri 'self'; "
        "form-action 'none'; frame-ancestors 'self'"
    )


def _secure(response: HttpResponse, csp: str) -> HttpResponse:
    response["Content-Security-Policy"] = csp
    response["Referrer-Policy"] = "no-referrer"
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "no-store"
    return response


def _not_found(message: str) -> HttpResponse:
    return _secure(
        HttpResponse(message, status=404, content_type="text/plain; charset=utf-8"),
        "default-src 'none'",
    )


def _page(
    render: render_pool.RenderPool, title: str, name: str, base: str, text: str, version: str
) -> tuple[str, str]:
    nonce = secrets.token_urlsafe(16)
    try:
        body, toc = render.render(text, version)
    except render_pool.RenderTimeout:
        seconds = f"{render_pool.render_seconds():g}"
        body = f"<p><strong>svc stopped rendering this file after {seconds} s.</strong></p>"
        toc = ""
    nav = f'<nav class="toc">{toc}</nav>' if toc else ""
    return nonce, (
        "<!doctype html><html><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f'<meta name="svc-version" content="{escape(version)}">'
        f'<base href="{escape(base)}"><title>{escape(title)}</title>'
        f'<style nonce="{nonce}">{markdown.PAGE_CSS}{_CODE_CSS}</style></head>'
        f"<body><main><header>{escape(name)}</header>{nav}"
        f'<article class="markdown">{body}</article></main>'
        f'<script nonce="{nonce}">{_POLL}</script></body></html>'
    )


def _markdown_response(request: HttpRequest, path: Path, title: str, base: str) -> HttpResponse:
    """Read now, render now: `?version=1` answers the file's hash for the refresh poll."""
    try:
        with path.open("rb") as handle:  # never more than the cap in memory, whatever the size
            raw = handle.read(markdown.MAX_BYTES)
    except OSError:
        return _not_found("The previewed file is gone.")
    version = hashlib.sha256(raw).hexdigest()[:16]
    if request.GET.get("version"):
        return _secure(JsonResponse({"version": version}), "default-src 'none'")
    text = raw.decode("utf-8", errors="replace")
    render = parts.of_request(request).render
    nonce, html = _page(render, title, path.name, base, text, version)
    return _secure(HttpResponse(html, content_type="text/html; charset=utf-8"), _csp(nonce))


@require_safe
def md_page(request: HttpRequest, slug: str) -> HttpResponse:
    preview = selectors.file_preview_get(slug)
    if preview is None:
        return _not_found("No such Markdown preview. It may have been deleted.")
    try:
        path = files.markdown_path(preview)
    except files.Refused:
        return _not_found("The previewed file is gone or now resolves outside its workspace.")
    title = preview.title or path.name
    return _markdown_response(request, path, title, f"/md-preview/{slug}/")


@require_safe
def md_asset(request: HttpRequest, slug: str, rest: str) -> HttpResponse:
    """What the Markdown file links to, relative to its folder: images, and other Markdown files
    of the workspace, rendered the same way (so a README's links to docs/ work)."""
    preview = selectors.file_preview_get(slug)
    if preview is None:
        return _not_found("No such Markdown preview.")
    try:
        path = files.asset_path(preview, rest)
    except files.Refused as exc:
        return _not_found(str(exc))
    if path.suffix.lower() in (".md", ".markdown"):
        folder = rest.rsplit("/", 1)[0] + "/" if "/" in rest else ""
        return _markdown_response(request, path, path.name, f"/md-preview/{slug}/{folder}")
    ctype = mimetypes.guess_type(path.name)[0] or ""
    if not ctype.startswith("image/"):
        return _not_found("Only images and Markdown files next to the Markdown file are served.")
    response = FileResponse(path.open("rb"), content_type=ctype)
    # An SVG opened on its own would be a document on svc's origin: keep it inert.
    return _secure(response, "default-src 'none'; style-src 'unsafe-inline'; sandbox")


@require_safe
def docs_page(request: HttpRequest, name: str) -> HttpResponse:
    """One of svc's own docs (this clone's docs/*.md, never a path outside it): where the
    dashboard names a doc ("Step by step in docs/channels.md") it links here, so the page that
    says what to do opens with no clone or website to look for. Links between the docs work,
    as they are relative (`contract.md#12-runtime`)."""
    if not _DOC_NAME.fullmatch(name) or not (DOCS / name).is_file():
        return _not_found(f"svc has no docs/{name}; the docs are listed in README.md.")
    return _markdown_response(request, DOCS / name, f"svc: docs/{name}", "/docs/")
