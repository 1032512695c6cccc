"""The remote listener's pages (contract §13): the pairing page and its two calls, and the
dashboard as a paired browser gets it. Only ever answered on the remote listener."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from core import config, restart_command
from core import public_urls as public
from core.asgi_helpers import own_origin
from remote_app import pairing, parts
from remote_app.routes import REMOTE_COOKIE

COOKIE_MAX_AGE = 400 * 24 * 3600  # browsers' own cap; the 7-day idle end is kept server-side
# An invite (made on the machine) travels in a header: /pair/* take no request body, and the
# link carries it in its fragment, which no server, log or Referer ever sees.
INVITE_HEADER = "X-Svc-Pair-Invite"


def _scope(request: HttpRequest) -> dict[str, Any]:
    return getattr(request, "scope", None) or {}


def _remote_only(request: HttpRequest) -> None:
    if not _scope(request).get("svc_remote"):
        raise Http404("pairing happens on svc's remote listener")


def _secure_headers(response: HttpResponse) -> HttpResponse:
    """Never framed, never cached, and in a browsing-context group of its own: a previewed page
    on the same origin can neither frame, read nor script it (docs/remote.md)."""
    response["Cache-Control"] = "no-store"
    response["X-Frame-Options"] = "DENY"
    response["Content-Security-Policy"] = "frame-ancestors 'none'"
    response["Cross-Origin-Opener-Policy"] = "same-origin"
    response["Referrer-Policy"] = "same-origin"
    return response


def remote_dashboard(request: HttpRequest) -> HttpResponse:
    """`/` on the remote listener: the pairing page, or — for a paired browser's own top-level
    navigation only — the dashboard with the page key."""
    scope = _scope(request)
    if not scope.get("svc_device"):
        return pair_page(request)
    dest = request.headers.get("Sec-Fetch-Dest", "")
    mode = request.headers.get("Sec-Fetch-Mode", "")
    # Browsers send Fetch Metadata in secure contexts (https) only. Without it (a plain-http
    # tunnel) no same-origin page can be asking: previews there are sandboxed (gate.py).
    if (dest or mode) and (dest != "document" or mode != "navigate"):
        response = HttpResponse(
            "svc's dashboard opens only as a page of its own (a browser that sends Fetch "
            "Metadata: current Chromium, Firefox or Safari).",
            status=403,
            content_type="text/plain",
        )
        return _secure_headers(response)
    context = {
        "port": config.current_auth().port,
        "page_key": scope["svc_page_key"],
        "device_id": scope["svc_device"],
        **restart_command.page_context(),  # the down banner's command, for the owner to run there
    }
    # Only a signed cookie finds a device (pairing.device_for_cookie): one from before cookies
    # were signed opens nothing, and its browser pairs again.
    return _secure_headers(render(request, "dashboard.html", context))


@require_GET
def pair_page(request: HttpRequest) -> HttpResponse:
    _remote_only(request)
    return _secure_headers(render(request, "pair.html", {}))


def _same_origin_or_none(request: HttpRequest) -> bool:
    origin = request.headers.get("Origin", "")
    return not origin or own_origin(_scope(request), origin)


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(
        {"error": {"status": status, "code": code, "message": message}}, status=status
    )


@csrf_exempt  # nothing to forge: no session exists yet; the Origin is checked instead
@require_POST
def pair_start(request: HttpRequest) -> JsonResponse:
    _remote_only(request)
    if not _same_origin_or_none(request):
        return _error(403, "cross_origin", "start pairing from svc's own pairing page")
    try:
        started = pairing.pair_start(
            request.headers.get("User-Agent", ""),
            request.headers.get("Host", ""),
            invite=request.headers.get(INVITE_HEADER, "").strip()[:100],
        )
    except pairing.PairingError as exc:
        return _error(exc.status, exc.code, str(exc))
    body = {"pair_id": started.pair_id, "code": started.code, "expires_in": started.expires_in}
    return _secure_headers(JsonResponse(body))


@require_GET
def pair_status(request: HttpRequest) -> JsonResponse:
    _remote_only(request)
    status, cookie, _ = pairing.pair_status(request.GET.get("pair_id", ""))
    response = _secure_headers(JsonResponse({"status": status}))
    if cookie is not None:
        _set_device_cookie(request, response, cookie)
    return response


def _set_device_cookie(request: HttpRequest, response: HttpResponse, value: str) -> None:
    response.set_cookie(
        REMOTE_COOKIE,
        value,
        max_age=COOKIE_MAX_AGE,
        path="/",
        secure=_is_https(request),
        httponly=True,
        samesite="Strict",
    )


@require_GET
def pair_session(request: HttpRequest) -> JsonResponse:
    """Whether this browser is paired: a page opened from a link in another site's page gets no
    SameSite=Strict cookie on that first load, and reloads itself when this says yes."""
    _remote_only(request)
    return _secure_headers(JsonResponse({"paired": bool(_scope(request).get("svc_device"))}))


def _is_https(request: HttpRequest) -> bool:
    """The browser sees https: it came over svc's own TLS (the LAN listener), the tunnel's
    public URL for this Host is https, or the tunnel says so (cloudflared and ngrok add
    X-Forwarded-Proto)."""
    if _scope(request).get("scheme") == "https":
        return True
    if request.headers.get("X-Forwarded-Proto", "").lower() == "https":
        return True
    online = parts.of_request(request).public_urls
    return public.scheme_for_host(online, request.headers.get("Host", "")) == "https"
