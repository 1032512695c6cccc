"""Fleet-wide answers made of every member's (contract §18 "One view"): plain functions over
decoded JSON, tested with lists in and lists out.

Each member's rows are tagged with `machine` (its id) and `machine_name`. Lists ordered by time
stay ordered by time across members; search hits, ranked per member, are interleaved rank by
rank; usage per day or per model is summed over the fleet (one chart), usage per session, turn
or profile stays per machine (a profile is a machine's own)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import zip_longest
from typing import Any

Rows = list[dict[str, Any]]
Answer = tuple[str, str, Any]  # (machine id, machine name, decoded JSON)

NEWEST_FIRST = {
    "/api/approvals": ("decided_at", "requested_at"),
    "/api/notifications": ("created_at",),
    "/api/subagent-turns": ("created_at",),
    "/api/sessions": ("created_at",),
}
USAGE_SUMMED = ("day", "model")
USAGE_NUMBERS = (
    "requests",
    "errors",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "cost_usd",
)


def tagged(machine: str, name: str, rows: Iterable[Any]) -> Rows:
    return [
        {"machine": machine, "machine_name": name} | row for row in rows if isinstance(row, dict)
    ]


def tag_answer(machine: str, name: str, data: Any) -> Any:
    """A forwarded answer as this member's clients see it: its rows (or its one row) tagged;
    an error body is left as it is."""
    if isinstance(data, list):
        return tagged(machine, name, data)
    if isinstance(data, dict) and "error" not in data and "id" in data:
        return tagged(machine, name, [data])[0]
    return data


def newest_first(path: str, answers: list[Answer], limit: int | None = None) -> Rows:
    keys = NEWEST_FIRST.get(path, ("created_at",))
    rows = [row for machine, name, data in answers for row in tagged(machine, name, data or [])]
    rows.sort(key=lambda row: next((str(row[k]) for k in keys if row.get(k)), ""), reverse=True)
    return rows[:limit] if limit else rows


def interleaved(answers: list[Answer], limit: int) -> Rows:
    """Best hit of each member, then the second of each, …: each member ranks its own."""
    per_member = [tagged(machine, name, data or []) for machine, name, data in answers]
    rows = [row for rank in zip_longest(*per_member) for row in rank if row is not None]
    return rows[:limit]


def usage(group_by: str, answers: list[Answer]) -> Rows:
    if group_by not in USAGE_SUMMED:
        rows = [row for machine, name, data in answers for row in tagged(machine, name, data or [])]
        return sorted(rows, key=lambda row: row["machine_name"])  # stable: each in key order
    totals: dict[str, dict[str, Any]] = {}
    for _machine, _name, data in answers:
        for row in data or []:
            key = str(row.get(group_by, ""))
            total = totals.setdefault(key, {group_by: key} | dict.fromkeys(USAGE_NUMBERS, 0))
            for number in USAGE_NUMBERS:
                total[number] += row.get(number) or 0
    for total in totals.values():
        total["cost_usd"] = round(total["cost_usd"], 6)
    return [totals[key] for key in sorted(totals)]


def sessions_matching(rows: Rows, *, status: str, q: str) -> Rows:
    """Another member's session rows by GET /api/sessions' filters (as its selector does)."""
    live = ("starting", "running", "unreachable")
    if status == "live":
        rows = [r for r in rows if r.get("status") in live]
    elif status == "exited":
        rows = [r for r in rows if r.get("status") not in live]
    text = q.strip().lower()
    if text:
        fields = ("title", "agent", "workspace")
        rows = [
            r
            for r in rows
            if any(text in str(r.get(f, "")).lower() for f in fields)
            or str(r.get("id", "")).startswith(text)
        ]
    return rows
