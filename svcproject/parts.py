"""The daemon's parts, typed (contract §12; docs/runtime.md "Parts handed over").

svcproject/assembly.py builds one `Parts` at bind (or a test builds its own) and hands it over:
the outermost ASGI app (`InScope`) puts it in every scope as `scope["svc"]`, the way Starlette
puts itself in `scope["app"]`, and the parts built once take what they use as constructor
arguments. Nothing looks them up.

The apps below this layer cannot name `Parts`: each says what its edges read of it as a
Protocol in its own `parts.py` (`sessions_app.parts.SessionParts`, …) and casts the scope's
value to it; the `SERVES_…` lines below are where mypy proves that `Parts` is every one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from bridge_app.conversations import Conversations
from bridge_app.parts import BridgeParts
from bridge_app.requestlog import RequestLog
from bridge_app.response_store import ResponseStore
from bridge_app.upstream import UpstreamClient
from channels_app.parts import ChannelParts
from channels_app.supervised import Channels
from core import live
from core.asgi_helpers import PARTS, ASGIApp, Receive, Scope, Send
from core.onetime import OneTimeGrants
from core.parts import CoreParts
from core.runtime import Reach, Runtime
from core.supervisor import Supervisor
from fleet_app.lists import FleetLists
from fleet_app.member import Member
from fleet_app.outbound import Forwarder
from fleet_app.parts import FleetParts
from fleet_app.sockets import FleetSockets
from mcp_app.asgi import MCPApp, MountParts
from mcp_app.parts import ToolParts
from notifications_app.hub import Notifier
from previews_app.parts import PreviewParts
from previews_app.proxy import PreviewClient
from previews_app.render_pool import RenderPool
from remote_app.gate import RemoteSockets
from remote_app.lan import LanListener
from remote_app.parts import RemoteParts
from remote_app.tunnels.supervised import Tunnels
from sessions_app.handover import FailureWindow
from sessions_app.host.registry import ProcessHost
from sessions_app.parts import SessionParts
from subagents_app.parts import SubagentParts
from subagents_app.subagent_runs import SubagentRuns


@dataclass(frozen=True, kw_only=True)
class Parts:
    """Everything that lives as long as the daemon, by name (the table in docs/runtime.md)."""

    runtime: Runtime  # start, settings changes, stop; core's own parts
    render: RenderPool
    previews: PreviewClient
    upstream: UpstreamClient
    responses: ResponseStore
    requestlog: RequestLog
    mcp: MCPApp
    host: ProcessHost
    conversations: Conversations
    subagents: SubagentRuns
    handover_failures: FailureWindow
    remote_sockets: RemoteSockets
    tunnels: Tunnels
    lan: LanListener  # the remote listener's LAN socket
    channels: Channels
    notifier: Notifier
    # A fleet member's (contract §18); None on a daemon alone.
    fleet_member: Member | None = None
    fleet_lists: FleetLists | None = None
    fleet_sockets: FleetSockets | None = None
    fleet_forward: Forwarder | None = None

    # Core's own, read through the runtime.
    @property
    def lists(self) -> live.Snapshots:
        return self.runtime.lists

    @property
    def supervisor(self) -> Supervisor:
        return self.runtime.supervisor

    @property
    def reach(self) -> Reach:
        return self.runtime.reach

    @property
    def public_urls(self) -> dict[str, str]:
        return self.runtime.reach.urls

    @property
    def login_grants(self) -> OneTimeGrants:
        return self.runtime.login_grants

    @property
    def preview_grants(self) -> OneTimeGrants:
        return self.runtime.preview_grants


# What each app's edges read of the parts in the scope: mypy checks `Parts` against each one
# here, and names the Protocol a missing or mistyped part breaks.
SERVES_CORE: type[CoreParts] = Parts
SERVES_SESSIONS: type[SessionParts] = Parts
SERVES_SUBAGENTS: type[SubagentParts] = Parts
SERVES_BRIDGE: type[BridgeParts] = Parts
SERVES_PREVIEWS: type[PreviewParts] = Parts
SERVES_REMOTE: type[RemoteParts] = Parts  # the remote gate's GateParts with it
SERVES_FLEET: type[FleetParts] = Parts
SERVES_CHANNELS: type[ChannelParts] = Parts
SERVES_MCP_MOUNT: type[MountParts] = Parts
SERVES_MCP_TOOLS: type[ToolParts] = Parts


class InScope:
    """The outermost ASGI app: every connection's scope carries the daemon's parts
    (`scope["svc"]`) to the routers, consumers, views and MCP tools below. Built when the ASGI
    module is imported; the daemon hands it its parts at bind (svcproject.startup), a test when it
    builds it."""

    def __init__(self, app: ASGIApp, parts: Parts | None = None) -> None:
        self.app, self.parts = app, parts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.parts is None:
            raise RuntimeError("svc's parts are built when the daemon binds (svcproject.startup)")
        scope[PARTS] = self.parts
        await self.app(scope, receive, send)
