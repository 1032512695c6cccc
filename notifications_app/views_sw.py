"""`/sw.js`: the dashboard's service worker (Web Push, docs/notifications.md "Browser side").

It is served from the root rather than /static/ because a worker controls only the paths under
its own URL, and the notifications it shows open `/#session=<id>`. No login is asked: the file
is the same public code as /static/ (nothing in it is secret), and a browser re-fetches it to
look for updates long after a login may have ended — a refusal there would only leave a stale
worker behind. The remote listener serves it too (remote_app/routes.py), for paired phones.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

SOURCE = settings.BASE_DIR / "static" / "svc" / "sw.js"


@require_safe
def service_worker(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(SOURCE.read_bytes(), content_type="application/javascript")
    response["Service-Worker-Allowed"] = "/"
    # Browsers cap a worker's HTTP caching at 24 h anyway; no-cache makes each update check
    # ask svc, so a new svc's worker is in use from the next page load.
    response["Cache-Control"] = "no-cache"
    return response
