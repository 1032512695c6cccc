"""What a subagent is told, and what its answer becomes (contract §4): plain functions, no I/O.

A subagent's report is its final message; a trailing `<svc-report>{json}</svc-report>` block is
parsed into `report`, and `summary` is one line — the report's own `summary` when it gives one,
else the message's first line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core import untrusted_json

SUMMARY_MAX = 200
_REPORT = re.compile(r"<svc-report>(?P<body>.*?)</svc-report>", re.DOTALL)

_ROLE = {
    "parallel": (
        "You work alone, at the same time as other subagents who do other parts, in {where}. "
        "Commit your work there; the caller reviews your branch."
    ),
    "collaboration": (
        "You work after the subagents before you, in {where}, which holds their work. Build on "
        "it and commit yours; the caller reviews the branch."
    ),
    "brainstorming": (
        "Answer with ideas only: in this turn svc refuses every edit and command you ask for. "
        "Other subagents answer the same task at the same time."
    ),
}


def _where(workspace: str, branch: str) -> str:
    return f"the git worktree {workspace} (branch {branch})" if branch else workspace


def prompt(
    *,
    mode: str,
    name: str,
    turn_id: str,
    workspace: str,
    branch: str,
    shared_task: str,
    task: str,
    earlier: list[dict[str, Any]],
) -> str:
    """The subagent's prompt. Its own task comes last: agents weigh the end of a prompt most."""
    parts = [
        f'You are subagent "{name}" of an svc {mode} turn ({turn_id}).',
        _ROLE[mode].format(where=_where(workspace, branch)),
        "When you are done, end your final message with a block <svc-report>…</svc-report> "
        'holding one JSON object whose "summary" is one line saying what you did.',
    ]
    if earlier:
        parts.append("Reports of the subagents before you:")
        parts += [_earlier_line(r) for r in earlier]
    if shared_task and shared_task != task:
        parts.append(f"The shared task:\n{shared_task}")
    parts.append(f"Your task:\n{task or shared_task}")
    return "\n\n".join(parts)


def _earlier_line(report: dict[str, Any]) -> str:
    line = f"- {report['name']} ({report['agent']}), {report['status']}: {report['summary']}"
    if report.get("report") is not None:
        line += f"\n  report: {json.dumps(report['report'], ensure_ascii=False)}"
    if report.get("changes"):
        line += f"\n  changes: {json.dumps(report['changes'])}"
    return line


def final_message(events: list[dict[str, Any]]) -> str:
    """The text the agent said after its last tool activity (its closing message), or all it
    said when that part is empty."""
    said: list[str] = []
    since_tool: list[str] = []
    for event in events:
        kind = event.get("kind")
        if kind == "agent_message_chunk":
            said.append(event.get("text") or "")
            since_tool.append(event.get("text") or "")
        elif kind in ("tool_call", "tool_call_update"):
            since_tool = []
    closing = "".join(since_tool).strip()
    return closing or "".join(said).strip()


def parse(final: str) -> tuple[Any, str]:
    """(report, summary) of a final message. An unreadable block is kept as text under
    `unparsed`, so nothing the agent said is lost."""
    blocks = list(_REPORT.finditer(final))
    report: Any = None
    if blocks:
        body = blocks[-1]["body"].strip()
        try:
            report = untrusted_json.loads(body, max_bytes=len(final))
        except ValueError:  # not JSON, or nested past the limit (its size is the message's)
            report = {"unparsed": body}
    said = _REPORT.sub("", final).strip()
    summary = report.get("summary") if isinstance(report, dict) else None
    if not isinstance(summary, str) or not summary.strip():
        summary = next((line for line in said.splitlines() if line.strip()), "")
    return report, one_line(summary)


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_MAX else line[: SUMMARY_MAX - 1] + "…"
