"""Which API requests travel between members (contract §18 "Act anywhere"), as plain rules on a
method and a path: no Django, no I/O, tested with strings.

A member acts on another's sessions through that member's own API: the request is forwarded over
the signed bus and the owner's views do the work, with the caller's surface (main port or a
paired device) so the owner applies the same refusals. Only what acts on sessions, their turns
and their history travels; a machine's settings, agents, profiles, tunnels, pairings, channels,
tokens and push subscriptions are its own, changed on its own dashboard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ID = r"(?P<id>[^/]+)"

# (methods, path): what a member may ask another to do, checked on both sides.
FORWARDABLE: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = tuple(
    (frozenset(methods.split()), re.compile(pattern))
    for methods, pattern in (
        ("GET POST", r"^/api/sessions$"),
        ("POST", r"^/api/sessions/stop_all$"),
        ("GET PATCH DELETE", rf"^/api/sessions/{_ID}$"),
        ("POST", rf"^/api/sessions/{_ID}/(resume|handover)$"),
        ("GET", rf"^/api/sessions/{_ID}/log$"),
        ("GET POST", rf"^/api/sessions/{_ID}/permissions$"),
        ("GET", rf"^/api/sessions/{_ID}/diff$"),
        ("POST", rf"^/api/sessions/{_ID}/diff/comments$"),
        ("GET", rf"^/api/subagents/{_ID}/diff$"),
        ("POST", rf"^/api/subagents/{_ID}/(diff/comments|merge|discard)$"),
        ("GET", r"^/api/subagent-turns$"),
        ("GET DELETE", rf"^/api/subagent-turns/{_ID}$"),
        ("POST", r"^/api/handover/pickup$"),
        ("GET", r"^/api/(usage|search|approvals|notifications|agents|workspaces)$"),
    )
)

# Reads that cover the fleet when no machine is named: every member's answer, merged.
FLEET_READS = ("/api/usage", "/api/search", "/api/approvals", "/api/notifications")
FLEET_READS += ("/api/subagent-turns",)

_SESSION = re.compile(rf"^/api/sessions/{_ID}(/.*)?$")
_SUBAGENT = re.compile(rf"^/api/subagents/{_ID}/")
_TURN = re.compile(rf"^/api/subagent-turns/{_ID}$")


def forwardable(method: str, path: str) -> bool:
    return any(method in methods and pattern.match(path) for methods, pattern in FORWARDABLE)


@dataclass(frozen=True)
class Target:
    """What a request names: a session, a subagent run or a turn (by id or prefix)."""

    kind: str  # "session" | "subagent" | "turn"
    id: str


def named_thing(path: str) -> Target | None:
    if (found := _SESSION.match(path)) and found["id"] != "stop_all":
        return Target("session", found["id"])
    if found := _SUBAGENT.match(path):
        return Target("subagent", found["id"])
    if found := _TURN.match(path):
        return Target("turn", found["id"])
    return None


def is_fleet_read(method: str, path: str) -> bool:
    return method == "GET" and path in FLEET_READS
