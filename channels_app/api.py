"""/api/channels (contract §14): the same rows as `/ws/channels`; and setting a channel up from
the dashboard (channels_app/setup.py) — checking and saving tokens, the senders asking to be
allowed, allowing them. Those are the machine's own: a paired device gets 403 `main_port_only`
(its writes are refused before this by remote_app.routes; the asking list here)."""

from __future__ import annotations

import asyncio
import contextvars

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from channels_app import parts, selectors, setup
from core import live
from core.errors import DomainError

MAIN_PORT_ONLY = (
    "who may use svc's chat bots is decided on svc's own machine (its dashboard there): "
    "a paired device does not see who asked"
)


def _main_port_only(request: Request) -> None:
    if request._request.scope.get("svc_remote"):
        raise DomainError(MAIN_PORT_ONLY, status=403, code="main_port_only")


class ChannelListView(APIView):
    def get(self, request: Request) -> Response:
        return Response(selectors.channel_list_dicts(parts.of_request(request)))


class ChannelCheckView(APIView):
    def post(self, request: Request, kind: str) -> Response:
        """Whether Telegram (`{token, api_base?}`) or Slack (`{bot_token, app_token,
        api_base?}`) takes the tokens: `{ok, bot_username, bot_name}`, else 400 saying why."""
        _main_port_only(request)
        return Response(setup.check(kind, request.data))


class ChannelDetailView(APIView):
    def put(self, request: Request, name: str) -> Response:
        """Create or change a channel; a token given is checked, then kept in secrets.json."""
        _main_port_only(request)
        saved = setup.save(name, request.data)
        _apply_now(request)
        live.broadcast_now("channels")
        return Response(saved)


def _apply_now(request: Request) -> None:
    """Apply the settings just written before answering (rather than at the watcher's next look,
    within a second): once Allow has answered, the sender's next message meets the new list."""
    runtime = parts.of_request(request).runtime
    if runtime.loop is None:
        return  # not started (a test's parts): the watcher's next look, if any, applies them
    # On the runtime's loop, in a context of its own: the channel's service task starts there
    # and must not inherit this request thread's (asgiref's executor ends with the request).
    done = contextvars.Context().run(
        asyncio.run_coroutine_threadsafe, runtime.settings_changed(), runtime.loop
    )
    done.result(timeout=30)


class ChannelAskingView(APIView):
    def get(self, request: Request, name: str) -> Response:
        """Senders who wrote to the channel while not on its allow-list, newest first."""
        _main_port_only(request)
        return Response(parts.of_request(request).channels.asking_list(name))


class ChannelAllowView(APIView):
    def post(self, request: Request, name: str) -> Response:
        """`{user}`: add them to the channel's allow-list in settings.json."""
        _main_port_only(request)
        user = request.data.get("user") if isinstance(request.data, dict) else None
        allowed = setup.allow(name, user)
        parts.of_request(request).channels.allowed(name, str(user))
        _apply_now(request)
        live.broadcast_now("channels")
        return Response(allowed)
