"""The runtime (contract §12): the one object that owns everything living as long as the daemon.

Built once when the listening socket is bound (svcproject.startup), or by a test in-process;
`start()` reconciles what a previous run left, mirrors settings (agents' MCP entries included)
and starts the supervised services; `stop()` stops them, every hosted process tree and every
client and pool, so the process ends with a clean log. Nothing live hides in a module-level
variable elsewhere: code finds the runtime through `current()`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async

if TYPE_CHECKING:
    from bridge_app.conversations import Conversations
    from bridge_app.requestlog import RequestLog
    from bridge_app.response_store import ResponseStore
    from bridge_app.upstream import UpstreamClient
    from mcp_app.asgi import MCPApp
    from mcp_app.integrations import Report
    from previews_app.proxy import PreviewClient
    from previews_app.render_pool import RenderPool
    from sessions_app.handover import FailureWindow
    from sessions_app.host.registry import ProcessHost
    from sessions_app.lists import Snapshots
    from sessions_app.subagent_runs import SubagentRuns
    from svcproject.supervisor import Supervisor

logger = logging.getLogger(__name__)

SessionExited = Callable[[str], Awaitable[None]]

_current: Runtime | None = None  # the one reference to live state; set by install()


def current() -> Runtime:
    if _current is None:
        raise RuntimeError("svc's runtime is not running (it is built when the daemon binds)")
    return _current


def current_or_none() -> Runtime | None:
    return _current


def install(runtime: Runtime | None) -> None:
    global _current
    _current = runtime


class Runtime:
    def __init__(self, *, backoff_first_s: float | None = None) -> None:
        from bridge_app.conversations import Conversations
        from bridge_app.requestlog import RequestLog
        from bridge_app.response_store import ResponseStore
        from bridge_app.upstream import UpstreamClient
        from channels_app.service import Channels
        from mcp_app.asgi import MCPApp
        from notifications_app.hub import Notifier
        from previews_app.proxy import PreviewClient
        from previews_app.render_pool import RenderPool
        from remote_app.gate import RemoteSockets
        from remote_app.tunnels.service import Tunnels
        from sessions_app import lists
        from sessions_app.handover import FailureWindow
        from sessions_app.host.activity import Activity
        from sessions_app.host.registry import ProcessHost
        from sessions_app.subagent_runs import SubagentRuns
        from svcproject.onetime import OneTimeGrants
        from svcproject.supervisor import BACKOFF_FIRST_S, Supervisor

        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready = asyncio.Event()
        self.lists: Snapshots = lists.Snapshots()
        self.host: ProcessHost = ProcessHost(Activity(lambda: lists.abroadcast("agents_runtime")))
        self.subagents: SubagentRuns = SubagentRuns(self)
        self.conversations: Conversations = Conversations(self)
        self.requestlog: RequestLog = RequestLog()
        self.upstream: UpstreamClient = UpstreamClient()
        self.responses: ResponseStore = ResponseStore()  # Responses turns translated by svc
        self.previews: PreviewClient = PreviewClient()
        self.render: RenderPool = RenderPool()
        self.preview_grants = OneTimeGrants(seconds=60)  # entry to a preview's own origin
        self.login_grants = OneTimeGrants(seconds=60)  # the hand-over to the dashboard host
        self.handover_failures: FailureWindow = FailureWindow()
        self.mcp: MCPApp = MCPApp()
        self.supervisor: Supervisor = Supervisor(
            lists.abroadcast, backoff_first_s=backoff_first_s or BACKOFF_FIRST_S
        )
        self.remote_port = 0  # the remote listener's port once bound (contract §13)
        self.remote_sockets = RemoteSockets()  # open remote WebSockets, closed on revoke
        self.public_urls: dict[str, str] = {}  # tunnel name → public URL while it is online
        self.tunnel_started: dict[str, str] = {}  # tunnel name → when it came online (ISO)
        self.tunnels = Tunnels(self)
        self.channels = Channels(self)  # chat channels (contract §14), supervised services
        self.integrations: Report | None = None  # the last auto-install report (contract §9)
        self._exit_hooks: list[SessionExited] = [self.subagents.cancel_for_parent]
        self.notifier = Notifier(self)  # contract §15; registers its session-exit hook

    # --- hooks ---------------------------------------------------------------------------------

    def on_session_exit(self, hook: SessionExited) -> None:
        self._exit_hooks.append(hook)

    async def session_exited(self, session_id: str) -> None:
        """A hosted session's process ended (its row is already marked): tell whoever cares."""
        for hook in self._exit_hooks:
            try:
                await hook(session_id)
            except Exception:
                logger.exception("a session-exit hook failed for %s", session_id)

    def channel_notifiers(self) -> list[Any]:
        """The running channels with a `notify_chat` (contract §14): `.name` and
        `async send_notification(title, body, url)` each."""
        return self.channels.notifiers()

    # --- start and stop ------------------------------------------------------------------------

    async def start(self) -> None:
        """What a starting daemon does once (contract §12), in order."""
        from svcproject import config
        from svcproject.watcher import SettingsWatcher

        self.loop = asyncio.get_running_loop()
        await database_sync_to_async(_reconcile_and_mirror)()
        await self.notifier.start()  # what a previous run left pending is failed, never re-sent
        await self.mcp.start()
        settings = config.current_settings()
        await self.supervisor.add(SettingsWatcher(self), settings)
        await self.supervisor.add(self.conversations.sweeper(), settings)
        await self.tunnels.apply(settings)
        await self.channels.apply(settings)
        self.ready.set()

    async def settings_changed(self) -> None:
        """settings.json changed on disk: mirror it, then restart the services it touches."""
        from svcproject import config, services

        await database_sync_to_async(services.settings_sync)()
        settings = config.current_settings()
        await self.supervisor.apply_settings(settings)
        await self.tunnels.apply(settings)
        await self.channels.apply(settings)

    async def stop(self) -> None:
        """Orderly stop (contract §12): services, subagent runs, hosted process trees, then the
        clients and pools, so nothing is left pending or unclosed when the loop ends."""
        await self.notifier.stop()  # first: stopping sessions is not their failure
        await self.supervisor.stop()
        await self.subagents.stop()
        stopped = await self.host.stop_all()
        if stopped:
            logger.info("stopped %d hosted session%s", stopped, "" if stopped == 1 else "s")
        await self.conversations.stop()
        await self.mcp.stop()
        await self.requestlog.flush()
        await self.upstream.aclose()
        await self.previews.aclose()
        self.render.close()
        self.ready.clear()


def _reconcile_and_mirror() -> None:
    from sessions_app import services as session_services
    from sessions_app import subagents
    from svcproject import services

    if ended := session_services.sessions_reconcile():
        logger.info("marked %d sessions exited: their processes are gone", ended)
    if cut := subagents.turns_reconcile():
        logger.info("ended %d subagent turns that were running when svc stopped", cut)
    services.settings_sync()
