"""What a daemon runs, in start order: the one place that names every part (contract §12).

Each part is built with the collaborators it uses and added to the runtime with what it does at
start, on every settings change and at stop. `Runtime.start()` runs the parts in this order and
`stop()` in reverse, so the order below is also the stop order read from the bottom: the
notifier stops first (stopping sessions is not their failure), then every supervised service
(channels, tunnels, the settings watcher), then subagent runs, then every hosted process tree,
then the clients and pools.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async

from core import config, live
from core import settings_store as settings
from core.runtime import Runtime
from core.watcher import SettingsWatcher

if TYPE_CHECKING:
    from fleet_app.conf import FleetConfig
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger(__name__)


def build(*, backoff_first_s: float | None = None) -> Runtime:
    from bridge_app.conversations import Conversations
    from bridge_app.requestlog import RequestLog
    from bridge_app.response_store import ResponseStore
    from bridge_app.upstream import UpstreamClient
    from channels_app.service import Channels
    from fleet_app import conf as fleet_conf
    from holder.client import HolderClient
    from holder.paths import holder_dir
    from mcp_app.asgi import MCPApp
    from notifications_app.hub import Notifier
    from previews_app.proxy import PreviewClient
    from previews_app.render_pool import RenderPool
    from remote_app.gate import RemoteSockets
    from remote_app.lan import LanListener
    from remote_app.tunnels.service import Tunnels
    from sessions_app import prompt_queue
    from sessions_app.handover import FailureWindow
    from sessions_app.host.activity import Activity
    from sessions_app.host.registry import ProcessHost
    from subagents_app.subagent_runs import SubagentRuns

    rt = Runtime(backoff_first_s=backoff_first_s)
    render = rt.add("render", RenderPool(), stop=lambda: render.close())
    previews = rt.add("previews", PreviewClient(), stop=lambda: previews.aclose())
    upstream = rt.add("upstream", UpstreamClient(), stop=lambda: upstream.aclose())
    rt.add("responses", ResponseStore())  # Responses turns translated by svc
    requestlog = rt.add("requestlog", RequestLog(), stop=lambda: requestlog.flush())
    mcp = rt.add("mcp", MCPApp(), start=lambda: mcp.start(), stop=lambda: mcp.stop())
    holder = HolderClient(holder_dir(config.svc_home()), on_exit=lambda sid, code: None)
    activity = Activity(lambda: live.abroadcast("agents_runtime"))
    host = rt.add("host", ProcessHost(activity, holder if config.knobs().holder else None))
    host.on_idle = prompt_queue.on_idle  # a chat that becomes idle sends what waits
    conversations = rt.add("conversations", Conversations(host), stop=lambda: conversations.stop())
    rt.add(
        "conversation_sweeper",
        start=lambda: rt.supervisor.add(conversations.sweeper(), config.current_settings()),
    )
    rt.add("host_stop", stop=lambda: _stop_sessions(host))  # every hosted process tree
    subagents = rt.add("subagents", SubagentRuns(host), stop=lambda: subagents.stop())
    rt.add("handover_failures", FailureWindow())
    rt.add("remote_sockets", RemoteSockets())  # open remote WebSockets, closed on revoke
    # What taking back replays (a turn's end, a permission request) is notified once started.
    rt.add("notices_early", start=lambda: notifier.hear_early())
    rt.add("reconcile", start=lambda: _reconcile(rt, host))
    rt.add("supervisor", rt.supervisor, stop=lambda: rt.supervisor.stop())
    watcher = SettingsWatcher(
        rt.settings_changed, rt.remote_sockets.sweep, lambda: rt.settings_applied_ns
    )
    rt.add("settings_watcher", start=lambda: rt.supervisor.add(watcher, config.current_settings()))
    if (fleet := fleet_conf.current()) is not None:  # contract §18: this daemon is a member
        _add_fleet(rt, fleet)
    tunnels = rt.add("tunnels", Tunnels(rt.supervisor, rt.reach), apply=lambda s: tunnels.apply(s))
    # The remote listener's LAN socket (contract §13 `remote.lan`), bound while turned on.
    lan = rt.add(
        "lan", LanListener(rt.reach), apply=lambda s: lan.apply(s), stop=lambda: lan.stop()
    )
    channels = rt.add(
        "channels",
        Channels(rt.supervisor, host),
        apply=lambda s: channels.apply(s),
        stop=lambda: channels.stop(),  # the chats' conversations (their services stop after)
    )
    notifier = Notifier(channels.notifiers, rt.reach.urls)  # contract §15
    rt.add("notifier", notifier, start=notifier.start, stop=notifier.stop)
    if (member := getattr(rt, "fleet_member", None)) is not None:
        from notifications_app.fleet import FleetNotices

        FleetNotices(member.bus, notifier, lambda: config.current_settings().fleet.machine)
    return rt


def _add_fleet(rt: Runtime, fleet: FleetConfig) -> None:
    """A fleet member's parts (contract §18): the signed bus, every member's rows in the live
    lists, requests and sockets for other members' sessions, and the heartbeat."""
    from fleet_app.heartbeat import Heartbeat
    from fleet_app.inbound import Inbound
    from fleet_app.lists import FleetLists
    from fleet_app.member import Member
    from fleet_app.outbound import Forwarder
    from fleet_app.sockets import FleetSockets

    knobs = config.knobs()
    member = rt.add("fleet_member", Member(fleet, knobs.redis_url, knobs.redis_prefix))
    bus = member.bus
    rt.add("fleet_bus", start=member.start, stop=member.stop)
    rt.status_parts["fleet"] = member.status
    lists = rt.add(
        "fleet_lists",
        FleetLists(
            fleet,
            bus,
            lambda name: live.snapshot(name, rt),
            lambda: config.current_settings().fleet.machine,
        ),
        start=lambda: lists.start(),
        stop=lambda: lists.stop(),
    )
    rt.lists.extend = lists.extend
    inbound = Inbound(lambda: lists.names)
    bus.handle("http", inbound.http)
    bus.handle("whose", inbound.whose)
    sockets = rt.add("fleet_sockets", FleetSockets(fleet, bus, lists), stop=lambda: sockets.stop())
    bus.handle("ws_open", sockets.serve)
    rt.add("fleet_forward", Forwarder(fleet, bus, lists))
    heartbeat = Heartbeat(fleet, live.abroadcast, lists.statuses_changed)
    rt.add(
        "fleet",
        start=lambda: rt.supervisor.add(heartbeat, config.current_settings()),
        stop=lambda: heartbeat.leave(rt.supervisor),
    )


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
    from sessions_app import services as session_services

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
    from subagents_app import subagents

    if cut := subagents.turns_reconcile():
        logger.info("ended %d subagent turns that were running when svc stopped", cut)
    return settings.settings_sync()
