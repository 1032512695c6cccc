"""The dashboard page and the admin login hand-off."""

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from core import browser, config, restart_command
from remote_app.views import remote_dashboard


def dashboard(request: HttpRequest) -> HttpResponse:
    if (getattr(request, "scope", None) or {}).get("svc_remote"):
        return remote_dashboard(request)
    context = {"port": config.current_auth().port, **restart_command.page_context()}
    return render(request, "dashboard.html", context)


def admin_login(request: HttpRequest) -> HttpResponse:
    """Admin has no passwords: the owner token (via /login) is the only way in."""
    if request.user.is_authenticated and request.user.is_staff:
        return HttpResponseRedirect(browser.safe_next(request.GET.get("next", "/admin/")))
    return HttpResponse(
        "<!doctype html><title>svc admin</title><h1>svc admin</h1>"
        "<p>Open the login URL printed at start-up, then come back to "
        "<a href='/admin/'>/admin/</a>."
        "</p>",
        status=401,
    )
