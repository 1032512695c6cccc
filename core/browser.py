"""Browser logins (contract §2): the browser never holds a token, only a revocable session id, and
only on svc's own host name.

Browsers send a host's cookies to every port of that host, so a cookie on `127.0.0.1` or
`localhost` would reach any dev server the owner opens. The dashboard therefore lives on
`svc-<random>.localhost:{port}` (auth.json `browser_host`; Chromium and Firefox resolve every
`*.localhost` name to loopback), a name no other page can guess and so never navigate to.
`/login?token=` on any host checks the token and hands the browser over to that host with a
one-time grant; redeeming it creates a Django session (server-side, ended by logout, by
`rotate_tokens` and after BROWSER_IDLE_SECONDS without a request).
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model, login, logout
from django.contrib.sessions.models import Session
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_POST

from core import config, parts
from core.asgi_helpers import cookie_in, request_scope
from core.onetime import OneTimeGrants
from core.session_store import SessionStore  # SESSION_ENGINE's: rows under a keyed hash
from core.tokens import token_kind

OWNER_USERNAME = "owner"
GRANT_SECONDS = 60
_FINGERPRINT_KEY = "svc_token_fp"


def browser_host() -> str:
    return config.current_auth().browser_host


def browser_base(port: int | None = None) -> str:
    """Absolute base URL of the dashboard host, e.g. http://svc-abcdefghijkl.localhost:8000."""
    return f"http://{browser_host()}:{port or config.svc_port()}"


def host_name(host_header: str) -> str:
    """The Host header without its port, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host


def is_browser_host(host_header: str) -> bool:
    return hmac.compare_digest(host_name(host_header).encode(), browser_host().encode())


def token_fingerprint(token: str) -> str:
    """What a browser session remembers of the token it logged in with (never the token), so
    a rotation made by another process (the CLI) ends it too."""
    return hmac.new(token.encode(), b"svc-login-session", "sha256").hexdigest()


def _current_fingerprint() -> str:
    return token_fingerprint(config.current_auth().owner_token)


def owner_user() -> Any:
    user, created = get_user_model().objects.get_or_create(
        username=OWNER_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


# --- the hand-over from 127.0.0.1 to the dashboard host ----------------------------------------


def _grants(request: HttpRequest) -> OneTimeGrants:
    return parts.of(request_scope(request)).runtime.login_grants


def grant_issue(grants: OneTimeGrants, following: str) -> str:
    return grants.issue(following)


def grant_redeem(grants: OneTimeGrants, grant: str) -> str | None:
    """Where to go next, once per live grant; None for a used, expired or unknown grant."""
    return grants.redeem(grant)


def safe_next(target: str) -> str:
    """Only a plain path on svc may follow a login (`//host` and `/\\host` are other sites)."""
    plain = target.startswith("/") and not target.startswith("//") and "\\" not in target
    return target if plain and target.isprintable() else "/"


# --- sessions ----------------------------------------------------------------------------------


def session_owner(request: HttpRequest) -> bool:
    """The request comes from a logged-in browser on the dashboard host with a session made
    under the owner token in force. A stale session (rotated token) is ended here."""
    if not request.user.is_authenticated:
        return False
    if not is_browser_host(request.headers.get("Host", "")):
        return False  # the session cookie is never the credential on another host
    remembered = request.session.get(_FINGERPRINT_KEY, "")
    if hmac.compare_digest(remembered.encode(), _current_fingerprint().encode()):
        return True
    logout(request)
    return False


def scope_session_owner(scope: dict[str, Any]) -> bool:
    """session_owner for a raw ASGI scope (WebSockets, previews). Synchronous: reads the DB."""
    headers = dict(scope.get("headers") or [])
    if not is_browser_host(headers.get(b"host", b"").decode("latin-1")):
        return False
    key = cookie_in(headers.get(b"cookie", b"").decode("latin-1"), settings.SESSION_COOKIE_NAME)
    if not key:
        return False

    session = SessionStore(session_key=key)
    remembered = session.get(_FINGERPRINT_KEY, "")
    return bool(session.get("_auth_user_id")) and hmac.compare_digest(
        remembered.encode(), _current_fingerprint().encode()
    )


def end_all_sessions() -> int:
    """Every browser login ends (token rotation)."""
    deleted, _ = Session.objects.all().delete()
    return deleted


# --- views -------------------------------------------------------------------------------------

_LOGIN_HELP = (
    "<!doctype html><title>svc: log in</title><h1>Log in to svc</h1>"
    "<p>Open the login URL that <code>make run</code> printed, or "
    "<code>http://127.0.0.1:PORT/login?token=</code> followed by <code>owner_token</code> from "
    "<code>$SVC_HOME/auth.json</code>.</p>"
)


def login_help(status: int = 401) -> HttpResponse:
    response = HttpResponse(_LOGIN_HELP, status=status)
    response["Referrer-Policy"] = "no-referrer"
    return response


def _browser_port(request: HttpRequest) -> int:
    tail = request.headers.get("Host", "").rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else config.svc_port()


def login_view(request: HttpRequest) -> HttpResponse:
    """GET /login?token=… anywhere → the dashboard host; /login?grant=… there → a session."""
    token = request.GET.get("token", "")
    following = safe_next(request.GET.get("next", "/"))
    if token and token_kind(token) != "owner":
        return login_help()
    if token and not is_browser_host(request.headers.get("Host", "")):
        grant = grant_issue(_grants(request), following)
        target = browser_base(_browser_port(request)) + "/login?" + urlencode({"grant": grant})
        response = HttpResponseRedirect(target)
        response["Referrer-Policy"] = "no-referrer"  # the token stays out of Referer headers
        return response
    if not token:
        redeemed = grant_redeem(_grants(request), request.GET.get("grant", ""))
        if redeemed is None or not is_browser_host(request.headers.get("Host", "")):
            return login_help()
        following = redeemed
    login(request, owner_user(), backend="django.contrib.auth.backends.ModelBackend")
    request.session[_FINGERPRINT_KEY] = _current_fingerprint()
    response = HttpResponseRedirect(following)
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    """POST /logout (CSRF-checked): the session ends here and now."""
    logout(request)
    return HttpResponse(
        "<!doctype html><title>svc: logged out</title><h1>Logged out of svc</h1>"
        "<p>Open the login URL again to come back.</p>"
    )


def login_url(host: str = "127.0.0.1") -> str:
    auth = config.current_auth()
    return f"http://{host}:{config.svc_port()}/login?token={auth.owner_token}"


def dashboard_redirect(request: HttpRequest) -> HttpResponse | None:
    """A person who opens http://127.0.0.1:{port}/ in a browser is sent to the dashboard host,
    where their session (or the login help) is; API clients keep their 401."""
    wants_page = "text/html" in request.headers.get("Accept", "")
    if not (request.method in ("GET", "HEAD") and request.path == "/" and wants_page):
        return None
    if is_browser_host(request.headers.get("Host", "")):
        return login_help()  # not logged in here: say how to
    return HttpResponseRedirect(browser_base(_browser_port(request)) + "/")
