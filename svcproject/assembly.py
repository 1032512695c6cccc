"""What a daemon runs, in start order: the one place that names every part (contract §12).

Each part is built with the collaborators it uses and added to the runtime with what it does at
start, on every settings change and at stop; `build()` answers them all as one typed `Parts`
(svcproject/parts.py), handed over from there (docs/runtime.md "Parts handed over").
`Runtime.start()` runs the parts in this order and `stop()` in reverse, so the order below is
also the stop order read from the bottom: the notifier stops first (stopping sessions is not
their failure), then every supervised service (channels, tunnels, the settings watcher), then
subagent runs, then every hosted process tree, then the clients and pools.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from channels.db import database_sync_to_async
from channels.routing import URLRouter
from django.core.handlers.asgi import ASGIHandler

from bridge_app.conversations import Conversations
from bridge_app.requestlog import RequestLog
from bridge_app.response_store import ResponseStore
from bridge_app.upstream import UpstreamClient
from channels_app.supervised import Channels
from core import config, live
from core import settings_store as settings
from core.runtime import Runtime
from core.watcher import SettingsWatcher
from fleet_app import conf as fleet_conf
from fleet_app.conf import FleetConfig
from fleet_app.heartbeat import Heartbeat
from fleet_app.inbound import Inbound
from fleet_app.lists import FleetLists
from fleet_app.member import Member
from fleet_app.outbound import Forwarder
from fleet_app.sockets import FleetSockets
from holder.client import HolderClient
from holder.paths import holder_dir
from mcp_app.asgi import MCPApp
from notifications_app.fleet import FleetNotices
from notifications_app.hub import Notifier
from previews_app.proxy import PreviewClient
from previews_app.render_pool import RenderPool
from remote_app.gate import RemoteSockets
from remote_app.lan import LanListener
from remote_app.tunnels.supervised import Tunnels
from sessions_app import prompt_queue
from sessions_app import services as session_services
from sessions_app.handover import FailureWindow
from sessions_app.host.activity import Activity
from sessions_app.host.registry import ProcessHost
from sessions_app.routing import websocket_urlpatterns
from subagents_app import subagents
from subagents_app.subagent_runs import SubagentRuns
from svcproject.parts import InScope, Parts

logger = logging.getLogger(__name__)


def build(*, backoff_first_s: float | None = None) -> Parts:
    rt = Runtime(backoff_first_s=backoff_first_s)
    render = RenderPool()
    rt.add("render", stop=render.close)
    previews = PreviewClient()
    rt.add("previews", stop=previews.aclose)
    upstream = UpstreamClient()
    rt.add("upstream", stop=upstream.aclose)
    responses = ResponseStore()  # Responses turns translated by svc
    requestlog = RequestLog()
    rt.add("requestlog", stop=requestlog.flush)
    mcp = MCPApp()
    rt.add("mcp", start=mcp.start, stop=mcp.stop)
    holder = HolderClient(holder_dir(config.svc_home()), on_exit=lambda sid, code: None)
    activity = Activity(lambda: live.abroadcast("agents_runtime"))
    # A chat that becomes idle sends what waits (prompt_queue.on_idle).
    host = ProcessHost(
        activity, holder if config.knobs().holder else None, on_idle=prompt_queue.on_idle
    )
    conversations = Conversations(host)
    rt.add("conversations", stop=conversations.stop)
    rt.add(
        "conversation_sweeper",
        start=lambda: rt.supervisor.add(conversations.sweeper(), config.current_settings()),
    )
    rt.add("host_stop", stop=lambda: _stop_sessions(host))  # every hosted process tree
    subagents = SubagentRuns(host)
    rt.add("subagents", stop=subagents.stop)
    failures = FailureWindow()  # failed handover pickups, behind the 429
    remote_sockets = RemoteSockets()  # open remote WebSockets, closed on revoke
    # What taking back replays (a turn's end, a permission request) is notified once started.
    rt.add("notices_early", start=lambda: notifier.hear_early())
    rt.add("reconcile", start=lambda: _reconcile(rt, host))
    rt.add("supervisor", stop=rt.supervisor.stop)
    watcher = SettingsWatcher(
        rt.settings_changed, remote_sockets.sweep, lambda: rt.settings_applied_ns
    )
    rt.add("settings_watcher", start=lambda: rt.supervisor.add(watcher, config.current_settings()))
    fleet = fleet_conf.member_config()  # contract §18: this daemon is a member
    member = _add_fleet(rt, fleet) if fleet is not None else None
    tunnels = Tunnels(rt.supervisor, rt.reach)
    rt.add("tunnels", apply=tunnels.apply)
    # The remote listener's LAN socket (contract §13 `remote.lan`), bound while turned on.
    lan = LanListener(rt.reach)
    rt.add("lan", apply=lan.apply, stop=lan.stop)
    channels = Channels(
        rt.supervisor,
        host,
        failures=failures,
        fleet_sockets=member.sockets if member else None,
        fleet_forward=member.forward if member else None,
    )
    # At stop, the chats' conversations (their services stop after, with the supervisor).
    rt.add("channels", apply=channels.apply, stop=channels.stop)
    notifier = Notifier(channels.notifiers, rt.reach.urls)  # contract §15
    rt.add("notifier", start=notifier.start, stop=notifier.stop)
    if member is not None:
        FleetNotices(member.member.bus, notifier, lambda: config.current_settings().fleet.machine)
    parts = Parts(
        runtime=rt,
        render=render,
        previews=previews,
        upstream=upstream,
        responses=responses,
        requestlog=requestlog,
        mcp=mcp,
        host=host,
        conversations=conversations,
        subagents=subagents,
        handover_failures=failures,
        remote_sockets=remote_sockets,
        tunnels=tunnels,
        lan=lan,
        channels=channels,
        notifier=notifier,
        fleet_member=member.member if member else None,
        fleet_lists=member.lists if member else None,
        fleet_sockets=member.sockets if member else None,
        fleet_forward=member.forward if member else None,
    )
    rt.lists.parts = parts  # what the live lists' readers are given (core.live)
    for served in member.served if member else ():
        served.parts = parts
    return parts


@dataclass(frozen=True)
class _Fleet:
    member: Member
    lists: FleetLists
    sockets: FleetSockets
    forward: Forwarder
    served: tuple[InScope, ...]  # what serves other members' requests and sockets here


def _add_fleet(rt: Runtime, fleet: FleetConfig) -> _Fleet:
    """A fleet member's parts (contract §18): the signed bus, every member's rows in the live
    lists, requests and sockets for other members' sessions, and the heartbeat."""

    knobs = config.knobs()
    member = Member(fleet, knobs.redis_url, knobs.redis_prefix)
    bus = member.bus
    rt.add("fleet_bus", start=member.start, stop=member.stop)
    rt.status_parts["fleet"] = member.status
    lists = FleetLists(
        fleet,
        bus,
        lambda name: live.snapshot(name, rt.lists.parts),
        lambda: config.current_settings().fleet.machine,
    )
    rt.add("fleet_lists", start=lists.start, stop=lists.stop)
    rt.lists.extend = lists.extend
    # What other members ask of this one is served in-process: their requests by Django's
    # handler, their sockets by the sessions' router, with this daemon's parts in each scope as
    # a connection's are (handed to them once the parts are built, at the end of build()).
    answered = InScope(ASGIHandler())
    inbound = Inbound(lambda: lists.names, answered)
    bus.handle("http", inbound.http)
    bus.handle("whose", inbound.whose)
    socketed = InScope(URLRouter(websocket_urlpatterns))
    sockets = FleetSockets(fleet, bus, lists, socketed)
    rt.add("fleet_sockets", stop=sockets.stop)
    bus.handle("ws_open", sockets.serve)
    heartbeat = Heartbeat(fleet, live.abroadcast, lists.statuses_changed)
    rt.add(
        "fleet",
        start=lambda: rt.supervisor.add(heartbeat, config.current_settings()),
        stop=lambda: heartbeat.leave(rt.supervisor),
    )
    return _Fleet(member, lists, sockets, Forwarder(fleet, bus, lists), (answered, socketed))


async def _stop_sessions(host: ProcessHost) -> None:
    """Contract §17 `host.on_exit`: "keep" leaves the held sessions to their holder for the next
    start; "stop" (or no holder) ends every hosted process tree."""
    if config.current_settings().host_on_exit == "keep":
        kept, stopped = await host.let_go()
    else:
        kept, stopped = 0, await host.stop_all()
    if stopped:
        logger.info("stopped %d hosted session%s", stopped, "" if stopped == 1 else "s")
    if kept:
        logger.info(
            "%d hosted session%s keep%s running; the next start takes them back "
            "(bin/svc sessions --stop-all ends them)",
            kept,
            "" if kept == 1 else "s",
            "s" if kept == 1 else "",
        )


async def _reconcile(rt: Runtime, host: ProcessHost) -> None:
    taken, interrupted = await session_services.asessions_take_back(host=host)
    if taken or interrupted:
        logger.info(
            "took back %d hosted sessions; %d were interrupted (their processes are gone)",
            taken,
            len(interrupted),
        )
    if interrupted and config.current_settings().host_resume_on_start:
        chats = [s for s in interrupted if s.kind == "chat"]
        host.resuming.mark([str(s.id) for s in chats])  # before a socket is answered
        host.in_background(session_services.asessions_resume_interrupted(host=host, sessions=chats))
    mirrored = await database_sync_to_async(_reconcile_and_mirror)()
    rt.settings_applied_ns = mirrored.loaded_mtime_ns  # the watcher compares with this


def _reconcile_and_mirror() -> config.Settings:
    """What a previous run left: turns that were running end, and settings.json is mirrored
    into the database and the agents' configs."""
    if cut := subagents.turns_reconcile():
        logger.info("ended %d subagent turns that were running when svc stopped", cut)
    return settings.settings_sync()
