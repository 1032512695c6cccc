"""ASGI entry point: preview origins → previews, /mcp → MCP SDK, /svc/… → bridge, other HTTP →
Django, WebSockets → guarded consumers."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")

import django

# Django first: the imports below load models.
django.setup(set_prefix=False)
from svcproject.request_threads import KeptThreadsASGIHandler, OwnContext  # noqa: E402

django_asgi_app = KeptThreadsASGIHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from bridge_app.views import application as bridge_application  # noqa: E402
from core import server_compat  # noqa: E402
from core.asgi_helpers import Receive, Scope, Send  # noqa: E402
from core.auth import WebSocketGuard  # noqa: E402
from core.live_consumer import websocket_urlpatterns as list_sockets  # noqa: E402
from core.static_files import StaticFiles  # noqa: E402
from mcp_app.asgi import application as mcp_application  # noqa: E402
from previews_app import shares  # noqa: E402
from previews_app.asgi import PreviewRouter  # noqa: E402
from remote_app.gate import RemoteGate  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402
from svcproject import admission, startup  # noqa: E402
from svcproject.parts import InScope  # noqa: E402

server_compat.check_backpressure()


async def no_such_socket(scope: Scope, receive: Receive, send: Send) -> None:
    """An unknown WebSocket path is refused before the handshake (403), not a 500."""
    await send({"type": "websocket.close", "code": 4404})


# RemoteGate first: what arrived on the remote listener (contract §13) is judged by its rules
# before anything else. Then PreviewRouter: `{slug}.localhost` hosts are preview origins and must
# never reach svc's own routes, and /preview/ needs raw ASGI (streamed bodies, proxied WebSockets).
routed = OwnContext(
    RemoteGate(
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
                        URLRouter(
                            [*websocket_urlpatterns, *list_sockets(), re_path(r"", no_such_socket)]
                        )
                    ),
                }
            )
        ),
        is_share_read=shares.is_share_read,
    )
)

# Outermost: every scope carries the daemon's parts (svcproject/parts.py), handed over at bind.
application = InScope(routed)
startup.at_bind(application)


def admit(head: admission.Head) -> admission.Answer | None:
    """The rules daphne applies before a body (svcproject/admission.py), knowing the remote
    listener's ports from the same parts."""
    parts = application.parts
    return admission.admit(head, parts.reach if parts is not None else None)


server_compat.install_admission(admit, admission.head_of, admission.body_limit)
