"""ASGI entry point: preview origins → previews, /mcp → MCP SDK, /svc/… → bridge, other HTTP →
Django, WebSockets → guarded consumers."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")

from django.core.asgi import get_asgi_application

# Django first: the imports below load models.
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from bridge_app.views import application as bridge_application  # noqa: E402
from mcp_app.asgi import application as mcp_application  # noqa: E402
from previews_app.asgi import PreviewRouter  # noqa: E402
from remote_app.gate import RemoteGate  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402
from svcproject import admission, server_compat, startup  # noqa: E402
from svcproject.auth import WebSocketGuard  # noqa: E402
from svcproject.static_files import StaticFiles  # noqa: E402

startup.at_bind()
server_compat.install_admission(admission.admit, admission.head_of, admission.body_limit)
server_compat.check_backpressure()


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
