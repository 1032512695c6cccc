"""ASGI entry point: preview origins → previews, /mcp → MCP SDK, /svc/… → bridge, other HTTP →
Django, WebSockets → guarded consumers."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")

from django.core.asgi import get_asgi_application

# Django first: the imports below load models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.exceptions import SuspiciousFileOperation  # noqa: E402
from django.http import Http404, HttpResponseNotFound  # noqa: E402
from django.middleware.gzip import GZipMiddleware  # noqa: E402
from django.urls import re_path  # noqa: E402

from bridge_app.views import application as bridge_application  # noqa: E402
from mcp_app.asgi import application as mcp_application  # noqa: E402
from previews_app.asgi import PreviewRouter  # noqa: E402
from remote_app.gate import RemoteGate  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402
from svcproject import admission, server_compat, startup  # noqa: E402
from svcproject.auth import WebSocketGuard  # noqa: E402

startup.at_bind()
server_compat.install_admission(admission.admit, admission.head_of, admission.body_limit)
server_compat.check_backpressure()


COMPRESSIBLE = ("text/", "application/javascript", "application/json", "image/svg+xml")
GZIP = GZipMiddleware(lambda request: None)


class StaticFiles(ASGIStaticFilesHandler):
    """A missing static file is a plain 404 — `/static/../x` included, for which Django's finder
    raises SuspiciousFileOperation. Plain, because Django's 404 page wants a session (for its
    CSRF token) and the static handler runs outside the middleware that makes one."""

    def serve(self, request):  # type: ignore[no-untyped-def]
        try:
            response = super().serve(request)
        except (SuspiciousFileOperation, Http404):
            return HttpResponseNotFound("no such static file", content_type="text/plain")
        # Text goes gzipped to a browser that takes it: the dashboard's libraries are ~0.9 MB
        # as files, and a phone loads them through a tunnel.
        if response.get("Content-Type", "").startswith(COMPRESSIBLE):
            return GZIP.process_response(request, response)
        return response


async def no_such_socket(scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
    """An unknown WebSocket path is refused before the handshake (403), not a 500."""
    await send({"type": "websocket.close", "code": 4404})


# RemoteGate first: what arrived on the remote listener (contract §13) is judged by its rules
# before anything else. Then PreviewRouter: `{slug}.localhost` hosts are preview origins and must
# never reach svc's own routes, and /preview/ needs raw ASGI (streamed bodies, proxied WebSockets).
application = RemoteGate(
    PreviewRouter(
        ProtocolTypeRouter(
            {
                "http": URLRouter(
                    [
                        re_path(r"^mcp/?$", mcp_application),
                        re_path(r"^svc/(?:local-api|bridge|local-agent)/", bridge_application),
                        re_path(r"", StaticFiles(django_asgi_app)),
                    ]
                ),
                "websocket": WebSocketGuard(
                    URLRouter([*websocket_urlpatterns, re_path(r"", no_such_socket)])
                ),
            }
        )
    )
)
