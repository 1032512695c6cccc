"""A channel's commands (contract §14): `/new`, `/sessions`, `/switch`, `/resume`, `/cancel`,
`/status`, `/queue`, `/unqueue`, `/now`, `/handover`, `/pickup`, `/pair`, `/help`; anything
else answers with the help."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from channels.db import database_sync_to_async

from channels_app import remote_handover, store
from channels_app.config import ChannelConfig
from channels_app.remote_chat import RemoteChatUnavailable
from channels_app.room import RemoteSession, Room, elsewhere
from core.errors import DomainError
from fleet_app.outbound import Forwarded
from fleet_app.selectors import machine_list_dicts
from remote_app import pairing
from sessions_app import prompt_queue, selectors, services

if TYPE_CHECKING:
    from fleet_app.outbound import Forwarder
    from fleet_app.sockets import FleetSockets
    from sessions_app.handover import FailureWindow


class Channel(Protocol):
    """What a command needs of the channel it was typed in (conversation.py's `Channel`, which
    imports this module to run them)."""

    config: ChannelConfig
    host: Any  # the process host: the chat sessions this channel talks to
    failures: FailureWindow
    fleet_sockets: FleetSockets | None
    fleet_forward: Forwarder | None


AT_ONCE = frozenset(
    {"cancel", "status", "help", "start", "handover", "pair", "queue", "unqueue", "now"}
    | {"machines"}
)
HELP = (
    "Send a message to prompt the agent of this chat's session.\n"
    "/new [agent] [workspace] [@machine] – a new session (@machine: on that one of the fleet)\n"
    "/machines – the fleet's machines\n"
    "/sessions – this chat's sessions · /switch <n | id> – change to one\n"
    "/resume [n | id] – start an ended session's agent again, same session\n"
    "/cancel – stop the running turn · /status – what is running\n"
    "/queue – the messages waiting for the running turn · /unqueue <n> – take one back · "
    "/now <n> – cancel the turn and send it\n"
    "/handover – a code to pick this session up elsewhere · /pickup CODE – continue one here\n"
    "/pair CODE – approve a browser's pairing request · /help – this text"
)


async def run(channel: Channel, room: Room, text: str) -> None:
    """Answer one command typed in a chat."""
    name, rest = command_name(text), text.partition(" ")[2]
    handler: Callable[[Channel, Room, str], Awaitable[None]] | None = {
        "help": cmd_help,
        "start": cmd_help,
        "new": cmd_new,
        "sessions": cmd_sessions,
        "machines": cmd_machines,
        "switch": cmd_switch,
        "resume": cmd_resume,
        "cancel": cmd_cancel,
        "status": cmd_status,
        "queue": cmd_queue,
        "unqueue": cmd_unqueue,
        "now": cmd_now,
        "handover": cmd_handover,
        "pickup": cmd_pickup,
        "pair": cmd_pair,
    }.get(name)
    if handler is None:
        await room.say(f"Unknown command /{name}.\n\n{HELP}")
        return
    try:
        await handler(channel, room, rest.strip())
    except DomainError as exc:
        await room.say(exc.message)


async def cmd_help(channel: Channel, room: Room, _: str) -> None:
    await room.say(HELP)


async def cmd_new(channel: Channel, room: Room, rest: str) -> None:
    words = rest.split()
    named = [w[1:] for w in words if w.startswith("@") and len(w) > 1]
    agent, workspace = ([w for w in words if not w.startswith("@")] + ["", ""])[:2]
    machine = await _machine(channel, named[-1]) if named else None
    try:
        session = await room.new_session(agent, workspace, machine or "")
    except RemoteChatUnavailable as exc:
        await room.say(f"Could not start it there: {exc}")
        return
    where = f" on {session.machine}" if isinstance(session, RemoteSession) else ""
    await room.say(
        f"New session {str(session.id)[:8]}{where}: {session.agent} in {session.workspace}"
    )


async def _machine(channel: Channel, given: str) -> str | None:
    """Another machine of the fleet named in a chat (None: this one). DomainError: none such."""
    fleet = channel.fleet_sockets
    if fleet is None:
        raise DomainError(f"svc here is not in a fleet: there is no machine {given!r}")
    try:
        return await fleet.resolve(given)
    except LookupError as exc:
        raise DomainError(str(exc)) from None


async def cmd_machines(channel: Channel, room: Room, _: str) -> None:
    rows = await database_sync_to_async(machine_list_dicts)()
    lines = [
        f"{'● ' if m['status'] == 'online' else '○ '}{m['name']} — {m['status']}, "
        f"{m['sessions_running']} running" + (" (this one)" if m["self"] else "")
        for m in rows
    ]
    await room.say("\n".join(lines) + "\n/new [agent] [workspace] @machine starts one there.")


async def cmd_sessions(channel: Channel, room: Room, _: str) -> None:
    rows = await database_sync_to_async(store.chat_sessions)(channel.config.name, room.chat)
    if not rows:
        await room.say("No sessions yet: send a message or /new.")
        return
    if room.remote is not None and room.session_id not in {r["id"] for r in rows}:
        where = f"running on {room.remote.machine_name}"
        rows.insert(0, {"id": room.session_id, "agent": room.remote.agent, "status": where})
    lines = [
        f"{i}. {r['id'][:8]} {r['agent']} ({r['status']})"
        + (" ← current" if r["id"] == room.session_id else "")
        for i, r in enumerate(rows, 1)
    ]
    await room.say("\n".join(lines))


async def _chosen(channel: Channel, room: Room, rest: str) -> str | None:
    """This chat's session that `rest` names: its number in /sessions or an id prefix."""
    rows = await database_sync_to_async(store.chat_sessions)(channel.config.name, room.chat)
    if rest.isdigit() and 0 < int(rest) <= len(rows):
        return rows[int(rest) - 1]["id"]
    if rest:
        found = next((r["id"] for r in rows if r["id"].startswith(rest)), None)
        # Else a session of another member.
        return found or (rest if elsewhere(channel.fleet_sockets, rest) else None)
    return None


async def cmd_switch(channel: Channel, room: Room, rest: str) -> None:
    chosen = await _chosen(channel, room, rest)
    if chosen is None:
        await room.say("Say which: /switch <number from /sessions | id prefix>")
        return
    live = await room.attach(chosen)
    ended = " (its agent has exited: /resume starts it again)"
    await room.say(f"Now on session {chosen[:8]}" + ("" if live else ended))


async def cmd_resume(channel: Channel, room: Room, rest: str) -> None:
    """`/resume`: this chat's session; `/resume <n | id prefix>`: one of /sessions. Its agent
    starts again on the same session (contract §17) and this chat follows it."""
    chosen = await _chosen(channel, room, rest) if rest else room.session_id
    if not chosen:
        hint = "Say which: /resume <number from /sessions | id prefix>"
        await room.say(hint if rest else "No session to resume: send a message or /new.")
        return
    if (owner := elsewhere(channel.fleet_sockets, chosen)) is not None:
        await _resume_elsewhere(channel, room, owner, chosen)
        return
    session = await services.asession_resume(host=channel.host, session_id=chosen)
    await room.attach(str(session.id))
    await room.say(
        f"Session {str(session.id)[:8]} ({session.agent}) is running again: "
        "send a message to continue."
    )


async def _resume_elsewhere(channel: Channel, room: Room, machine: str, session_id: str) -> None:
    """Another member resumes its own session (its API, over the fleet's bus)."""
    path = f"/api/sessions/{session_id}/resume"
    asked = Forwarded("POST", path, "", [], b"", surface="main")
    assert channel.fleet_forward is not None  # the session is another member's: a fleet
    reply = await channel.fleet_forward.send(machine, asked)
    if reply.status != 200:
        problem = (reply.json() or {}).get("error", {}).get("message", f"HTTP {reply.status}")
        await room.say(f"Could not resume it: {problem}")
        return
    await room.attach(session_id)
    await room.say(f"Session {session_id[:8]} is running again: send a message to continue.")


async def cmd_cancel(channel: Channel, room: Room, _: str) -> None:
    chat = room.live()
    if chat is None or not chat.busy:
        await room.say("Nothing is running.")
        return
    await chat.cancel()
    await room.say("Cancelling the running turn.")


async def cmd_status(channel: Channel, room: Room, _: str) -> None:
    if not room.session_id:
        await room.say("No session yet: send a message or /new.")
        return
    chat = room.live()
    state = "no longer running" if chat is None else ("busy" if chat.busy else "idle")
    queued = len(await _queued(room))
    waiting = f", {queued} message(s) waiting" if queued else ""
    if room.remote is not None:
        agent = f"{room.remote.agent} on {room.remote.machine_name}"
    else:
        session = await database_sync_to_async(session_row)(room.session_id)
        agent = session.agent if session else "?"
    await room.say(f"Session {room.session_id[:8]}: {agent}, {state}{waiting}")


async def _queued(room: Room) -> list[dict[str, Any]]:
    if not room.session_id:
        return []
    if room.remote is not None:  # what its member last said waits there
        return list(room.remote.queued)
    return await database_sync_to_async(prompt_queue.queued_list)(room.session_id)


async def cmd_queue(channel: Channel, room: Room, _: str) -> None:
    items = await _queued(room)
    if not items:
        await room.say("Nothing is waiting: a message sent now goes to the agent at once.")
        return
    lines = [f"{n}. {item['text'][:200]}" for n, item in enumerate(items, 1)]
    await room.say("Waiting for the running turn, in order:\n" + "\n".join(lines))


async def _nth_queued(room: Room, rest: str) -> dict[str, Any] | None:
    items = await _queued(room)
    if not rest.isdigit() or not 1 <= int(rest) <= len(items):
        some = f"Give a number from /queue (1 to {len(items)})."
        await room.say(some if items else "Nothing is waiting.")
        return None
    return items[int(rest) - 1]


async def cmd_unqueue(channel: Channel, room: Room, rest: str) -> None:
    if (item := await _nth_queued(room, rest)) is not None:
        await room.queue_button(int(item["id"]), "rm")


async def cmd_now(channel: Channel, room: Room, rest: str) -> None:
    if (item := await _nth_queued(room, rest)) is not None:
        await room.queue_button(int(item["id"]), "now")


async def cmd_handover(channel: Channel, room: Room, _: str) -> None:
    if not room.session_id:
        await room.say("No session to hand over.")
        return
    if room.remote is not None:
        offer = await remote_handover.handover_there(
            channel.fleet_forward, room.remote.machine, room.session_id
        )
    else:
        offer = await database_sync_to_async(services.handover_offer)(
            session_id=room.session_id, host=channel.host
        )
    await room.say(
        f"Handover code: {offer['code']} (valid {offer['expires_in']} s, once). Pick it up with "
        "/pickup in a chat, the dashboard, or `manage.py pickup`."
    )


async def cmd_pickup(channel: Channel, room: Room, rest: str) -> None:
    elsewhere_found = await remote_handover.picked_up_elsewhere(
        channel.fleet_forward, channel.failures, rest
    )
    if (there := elsewhere_found) is not None:
        live = await room.attach(str(there["id"]))
        await room.say(
            f"Picked up session {str(there['id'])[:8]} ({there.get('agent', '')}) on "
            f"{there['machine_name']}."
            + ("" if live else " Its agent has exited: /resume starts it again, /new another.")
        )
        return
    session = await database_sync_to_async(services.handover_redeem)(
        code=rest, failures=channel.failures
    )
    live = await room.attach(str(session.id))
    summary = await database_sync_to_async(store.history_summary)(str(session.id))
    await room.say(
        f"Picked up session {str(session.id)[:8]} ({session.agent})."
        + ("" if live else " Its agent has exited: /resume starts it again, /new another.")
        + (f"\n\n{summary}" if summary else "")
    )


async def cmd_pair(channel: Channel, room: Room, rest: str) -> None:
    request = await database_sync_to_async(pairing.pair_approve)(rest, channel.config.name)
    await room.say(f"Paired the browser that showed {rest} ({request.device[:80]}).")


def command_name(text: str) -> str:
    """`/Cancel@svc_bot now` → "cancel" (Telegram adds @botname to commands in groups)."""
    return text[1:].partition(" ")[0].split("@", 1)[0].lower()


def session_row(session_id: str) -> Any:
    return selectors.session_get(session_id) if session_id else None
