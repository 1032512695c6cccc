"""What each command prints, for both command-line paths: the fast client (`bin/svc`) and the
management commands (`manage.py`) render through these functions, so their output is one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Item = dict[str, Any]
Options = dict[str, Any]

# Session.Status.STARTING and RUNNING (sessions_app.models.Session.LIVE, which imports Django).
LIVE_STATUSES = ("starting", "running")


def line(message: str) -> str:
    """A message as Django's OutputWrapper writes it: with a newline unless it ends in one."""
    return message if message.endswith("\n") else message + "\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    return str(value)


def table(items: Sequence[Item], columns: tuple[str, ...]) -> str:
    rows = [[_cell(item.get(c)) for c in columns] for item in items]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in [list(columns), *rows]
    ]
    return "\n".join(lines)


def json_text(value: Any) -> str:
    """What --json prints."""
    return json.dumps(value, indent=2)


def listing(items: list[Item], columns: tuple[str, ...], as_json: bool) -> str:
    """A list command's whole output: the JSON itself with --json, else a table."""
    return json_text(items) if as_json else table(items, columns)


# --- status -------------------------------------------------------------------------------------


def status_report(
    url: str, sessions: list[Item], agents: list[Item], integrations: Item, daemon: Item
) -> Item:
    """`status --json`: from GET /api/sessions, /api/agents, /api/integrations and /api/status."""
    live = [s for s in sessions if s["status"] in LIVE_STATUSES]
    return {
        "running": True,
        "url": url,
        "settings_error": daemon.get("settings_error"),
        "sessions": len(sessions),
        "live_sessions": len(live),
        "agents_enabled": [a["name"] for a in agents if a.get("enabled")],
        "integrations": integrations,
    }


def status_lines(status: Item) -> list[str]:
    integrations = status["integrations"]
    # A hand edit svc cannot read is not in force, and svc refuses to save over it.
    broken = status.get("settings_error")
    settings = [f"settings.json is broken, fix it by hand: {broken['message']}"] if broken else []
    return [
        f"svc is running at {status['url']}",
        *settings,
        f"sessions: {status['live_sessions']} live, {status['sessions']} in total",
        f"agents enabled: {', '.join(status['agents_enabled']) or '(none)'}",
        f"auto-install into agents (MCP entry for {integrations['mcp_url']}):",
        *integration_lines(integrations),
    ]


def integration_lines(report: Item) -> list[str]:
    """One line per agent and part: its state, file, and why when skipped (contract §9)."""
    lines = []
    for agent in report["agents"]:
        for label in ("mcp", "skills"):
            part = agent[label]
            why = f" — {part['reason']}" if part["reason"] else ""
            lines.append(
                f"  {agent['agent']:<9} {label:<6} {part['state']:<10} {part['path']}{why}"
            )
    return lines


# --- the lists ----------------------------------------------------------------------------------


def _as_is(items: list[Item], options: Options) -> list[Item]:
    return items


DETAIL_WIDTH = 100
NAME_WIDTH = 40
SHORT_ID = 8


def _sessions(items: list[Item], options: Options) -> list[Item]:
    if options["live"]:
        items = [s for s in items if s["status"] in (*LIVE_STATUSES, "unreachable")]
    if options["json"]:
        return items
    # One line a row: an agent's last stderr lines, folded and cut (--json has them whole); the
    # id's first 8 characters (any unique prefix of 4+ names a session) and its name.
    return [
        {
            **s,
            "id": str(s["id"])[:SHORT_ID],
            "machine": s.get("machine_name") or "",
            "name": _one_line(s.get("name") or s.get("title") or "", NAME_WIDTH),
            "detail": _one_line(s.get("detail") or "", DETAIL_WIDTH),
        }
        for s in items
    ]


def _one_line(text: str, width: int) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= width else folded[: width - 1] + "…"


def stopped_line(answer: Item) -> str:
    """`sessions --stop-all`: how many sessions it ended; in a fleet, on which machine."""
    count = answer["stopped"]
    line = f"stopped {count} session{'' if count == 1 else 's'}" if count else ""
    machines = answer.get("machines") or []
    if len(machines) > 1:
        done = [f"{m['machine_name']} {m['stopped']}" for m in machines if m["stopped"] is not None]
        line = f"{line or 'no session was running'} ({', '.join(done)})" if done else line
    return line or "no session was running"


def not_stopped(answer: Item) -> list[str]:
    """`sessions --stop-all` in a fleet: the members that could not stop theirs, and why."""
    return [str(m["error"]) for m in answer.get("machines") or [] if m.get("stopped") is None]


def resumed_line(session: Item) -> str:
    """`resume ID`: the session as it is now."""
    return f"session {session['id']} ({session['agent']} {session['kind']}) is {session['status']}"


def _channels(items: list[Item], options: Options) -> list[Item]:
    if options["json"]:
        return items
    # The bot as people write its name in the chat app.
    return [{**i, "bot": f"@{i['bot']}" if i.get("bot") else None} for i in items]


def _changes(changes: Item | None) -> str:
    if not changes or "commits" not in changes:
        return ""
    return (
        f"{changes['commits']} commits, {changes['files_changed']} files "
        f"+{changes['insertions']} -{changes['deletions']}"
    )


def turn_rows(items: list[Item], options: Options) -> list[Item]:
    """One row per subagent (the turn's id cut to the 8 characters the API accepts back)."""
    if options["json"]:
        return items
    return [_turn_row(turn, s) for turn in items for s in turn["subagents"]]


def _turn_row(turn: Item, subagent: Item) -> Item:
    return {
        "turn": turn["turn_id"][:8],
        "mode": turn["mode"],
        "turn_status": turn["status"],
        "name": subagent["name"],
        "agent": subagent["agent"],
        "status": subagent["status"],
        "changes": _changes(subagent["changes"]),
        "summary": subagent["summary"],
    }


def _machines(items: list[Item], options: Options) -> list[Item]:
    if options["json"]:
        return items
    # `here`: the machine answering (the fleet's others are reached through it).
    return [{**m, "here": "*" if m.get("self") else "", "id": str(m["id"])[:12]} for m in items]


@dataclass(frozen=True)
class ListView:
    """One /api/ list as a command prints it. `flags`: the options besides --json that the fast
    client knows for it; anything else goes to manage.py."""

    path: str
    columns: tuple[str, ...]
    rows: Callable[[list[Item], Options], list[Item]] = _as_is
    flags: tuple[str, ...] = field(default=())
    optional: tuple[str, ...] = field(default=())  # shown only when a row has one

    def render(self, items: list[Item], options: Options) -> str:
        rows = self.rows(items, options)
        columns = tuple(
            c for c in self.columns if c not in self.optional or any(r.get(c) for r in rows)
        )
        return listing(rows, columns, options["json"])


SESSIONS = ListView(
    "sessions",
    # `detail`: how an ended session ended, for people (its machine value is `end_reason`).
    (
        *("id", "machine", "name", "agent", "kind", "status"),
        *("exit_code", "workspace", "created_at", "detail"),
    ),
    _sessions,
    ("live",),
    optional=("machine",),  # a fleet's (contract §18): the machine that hosts it
)
PREVIEWS = ListView(
    "previews", ("slug", "kind", "port", "file", "share_expires_at", "owner_url", "share_url")
)
PROFILES = ListView("profiles", ("id", "provider", "base_url", "models"))
AGENTS = ListView(
    "agents", ("name", "enabled", "executable_found", "source", "command", "acp_command")
)
TURNS = ListView(
    "subagent-turns",
    ("turn", "mode", "turn_status", "name", "agent", "status", "changes", "summary"),
    turn_rows,
)
CHANNELS = ListView("channels", ("name", "kind", "status", "bot", "chats", "detail"), _channels)
TUNNELS = ListView("tunnels", ("name", "provider", "status", "public_url", "started_at", "detail"))
MACHINES = ListView(
    "machines",
    ("here", "name", "status", "id", "sessions_running", "load", "agents", "url", "last_seen"),
    _machines,
)

# Command name → its list: what `bin/svc` answers without Django (and `status`).
LISTS: dict[str, ListView] = {
    "sessions": SESSIONS,
    "previews": PREVIEWS,
    "profiles": PROFILES,
    "agents": AGENTS,
    "turns": TURNS,
    "channels": CHANNELS,
    "tunnels": TUNNELS,
    "machines": MACHINES,
}
