"""Subagent turns as they run, on the daemon's event loop (contract §4).

A turn's subagents are hosted ACP sessions of kind `subagent`, driven through the host registry
like any chat: started, prompted once, then stopped (their chat history stays readable). Every
state change is stored, published on /ws/agents/runtime and wakes whoever waits on the turn —
no polling anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async

from core import config
from core.errors import DomainError
from sessions_app import agent_logs, services
from sessions_app import signals as session_signals
from subagents_app import signals, subagent_reports, subagents, worktrees
from subagents_app.models import Subagent, SubagentTurn

if TYPE_CHECKING:
    from sessions_app.host.registry import ProcessHost

logger = logging.getLogger(__name__)

KEEP_ON_RUNTIME_S = 30.0  # a finished turn stays on the live list this long
CANCEL_GRACE_S = 2.0  # between ACP session/cancel and stopping the process tree
EXIT_GRACE_S = 2.0  # for a failed turn's agent to exit, so its exit code and words are known


@dataclass
class Run:
    turn_id: str
    mode: str
    task: asyncio.Task | None = None
    cancelling: bool = False
    sessions: dict[str, str] = field(default_factory=dict)  # subagent id → live session id
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def changed(self) -> asyncio.Event:
        """An event set at the next state change (take it before reading the state)."""
        return self._changed

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


class SubagentRuns:
    """The turns running now, one set per runtime."""

    def __init__(self, host: ProcessHost) -> None:
        self.host = host
        self._runs: dict[str, Run] = {}
        # A stopped agent's subagents stop too (held weakly: it ends with this runtime).
        session_signals.session_exited.connect(
            self._parent_exited, dispatch_uid=f"subagents.{id(self)}"
        )

    def start(self, turn_id: str) -> None:
        """Run a created turn in the background (called on the daemon's loop)."""
        run = Run(turn_id=turn_id, mode="")
        self._runs[turn_id] = run
        run.task = asyncio.get_running_loop().create_task(
            self._run(run), context=contextvars.Context()
        )

    async def _run(self, run: Run) -> None:
        turn = await sync_to_async(subagents.turn_get)(run.turn_id)
        run.mode = turn.mode
        members = await sync_to_async(lambda: list(turn.subagents.all()))()
        await self._publish(run)
        try:
            if turn.mode == "collaboration":
                earlier: list[dict[str, Any]] = []
                for member in members:
                    if run.cancelling:
                        break
                    earlier.append(await self._run_one(run, turn, member, earlier))
            else:
                await asyncio.gather(*(self._run_one(run, turn, m, []) for m in members))
        except Exception:
            logger.exception("subagent turn %s", run.turn_id)
        finally:
            await self._finish(run)

    async def _finish(self, run: Run) -> None:
        status = "cancelled" if run.cancelling else "completed"
        reason = "cancelled before it started" if run.cancelling else "the turn ended first"
        await sync_to_async(subagents.subagents_unfinished_end)(run.turn_id, "cancelled", reason)
        await sync_to_async(subagents.turn_finish)(run.turn_id, status)
        run.notify()
        await self._publish(run)
        if status == "completed":
            signals.subagent_turn_completed.send_robust(sender=SubagentRuns, turn_id=run.turn_id)
        self._runs.pop(run.turn_id, None)
        asyncio.get_running_loop().call_later(KEEP_ON_RUNTIME_S, self._unpublish, run.turn_id)

    async def _run_one(
        self, run: Run, turn: SubagentTurn, member: Subagent, earlier: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """One subagent from start to report; returns its report entry. Never raises: whatever
        goes wrong is its `failed` status and summary."""
        await self._set(run, member, status="starting")
        try:
            session_id = await self._start_session(turn, member)
        except DomainError as exc:
            await self._set(run, member, status="failed", summary=exc.message)
            return await _report(member)
        run.sessions[str(member.id)] = session_id
        try:
            if run.cancelling:  # cancelled while its agent was starting: it never gets the task
                await self._set(run, member, status="cancelled", summary="cancelled")
                return await _report(member)
            await self._set(run, member, status="running")
            outcome = await self._prompt(run, turn, member, session_id, earlier)
            await self._set(run, member, **outcome, **await _measured(turn, member))
        finally:
            run.sessions.pop(str(member.id), None)
            await self.host.stop(session_id)  # nothing of a finished subagent keeps running
        return await _report(member)

    async def _set(self, run: Run, member: Subagent, **fields: Any) -> None:
        await sync_to_async(subagents.subagent_update)(str(member.id), **fields)
        run.notify()
        await self._publish(run)

    async def _start_session(self, turn: SubagentTurn, member: Subagent) -> str:
        """Start the subagent's agent in the session made for it with the turn."""
        env = {
            "SVC_SUBAGENT_ID": str(member.id),
            "SVC_SUBAGENT_TURN_ID": str(turn.id),
            "SVC_AGENT_ROLE": "subagent",
        }
        session = await sync_to_async(subagents.subagent_session)(str(member.id))
        session = await services.asession_start(session, host=self.host, extra_env=env)
        chat = self.host.chat(str(session.id))
        if chat is None:
            raise DomainError(f"{member.agent} exited right after it started")
        # Unattended: svc answers permissions itself — read-only brainstorming refuses them all.
        chat.permission_mode = "deny" if turn.mode == "brainstorming" else "allow"
        return str(session.id)

    async def _prompt(
        self,
        run: Run,
        turn: SubagentTurn,
        member: Subagent,
        session_id: str,
        earlier: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """Prompt the subagent once and turn what it said into status, summary and report."""
        chat = self.host.chat(session_id)
        if chat is None:
            return {"status": "failed", "summary": _exited_summary(session_id, None)}
        events: list[dict[str, Any]] = []
        subscription = await chat.subscribe(events.append)
        subscription.start()
        text = subagent_reports.prompt(
            mode=turn.mode,
            name=member.name,
            turn_id=str(turn.id),
            workspace=member.workspace,
            branch=member.branch,
            shared_task=turn.task,
            task=member.task,
            earlier=earlier,
        )
        try:
            stop_reason = await _prompt_or_exit(chat, text)
        finally:
            subscription.close()
        return _outcome(run, session_id, chat, events, stop_reason)

    # --- waiting and cancelling --------------------------------------------------------------

    async def wait(self, turn_id: str, timeout_s: float, progress: Progress) -> dict[str, Any]:
        """The turn's snapshot once it has ended, or at `timeout_s` with `timed_out: true`.
        `progress` hears every state change, and at least every SVC_SUBAGENT_PROGRESS_S s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        beat = config.knobs().subagent_progress_s
        while True:
            run = self._runs.get(turn_id)
            changed = run.changed() if run is not None else None
            snapshot = await sync_to_async(subagents.turn_snapshot)(turn_id)
            if snapshot["status"] != "running" or changed is None:
                ended = snapshot["status"] != "running"
                return {**snapshot, "completed": ended, "timed_out": False}
            left = deadline - loop.time()
            if left <= 0:
                return {**snapshot, "completed": False, "timed_out": True}
            await progress(snapshot)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(beat, left))

    async def cancel(self, turn_id: str) -> bool:
        """Cancel every running subagent of the turn: ACP session/cancel, then the process
        tree. Returns False when the turn was not running."""
        run = self._runs.get(turn_id)
        if run is None:
            return False
        run.cancelling = True
        run.notify()
        live = [self.host.chat(sid) for sid in list(run.sessions.values())]
        for chat in live:
            if chat is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(chat.cancel(), CANCEL_GRACE_S)
        await asyncio.gather(*(self.host.stop(sid) for sid in list(run.sessions.values())))
        if run.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(run.task), 15)
        return True

    async def cancel_for_parent(self, session_id: str) -> None:
        """A stopped agent's subagents stop too."""
        for turn_id in await sync_to_async(subagents.turns_of_parent)(session_id):
            await self.cancel(turn_id)

    async def _parent_exited(self, session_id: str, **_: object) -> None:
        if self._runs:
            await self.cancel_for_parent(session_id)

    async def stop(self) -> None:
        """At shutdown: every running turn cancelled, its task ended."""
        session_signals.session_exited.disconnect(dispatch_uid=f"subagents.{id(self)}")
        await asyncio.gather(*(self.cancel(t) for t in list(self._runs)), return_exceptions=True)

    # --- the live list -----------------------------------------------------------------------

    async def _publish(self, run: Run) -> None:
        snapshot = await sync_to_async(subagents.turn_snapshot)(run.turn_id)
        self.host.activity.put(
            _runtime_key(run.turn_id),
            kind="subagent_turn",
            turn_id=run.turn_id,
            mode=snapshot["mode"],
            status=snapshot["status"],
            subagents=[
                {k: s[k] for k in ("id", "name", "agent", "status", "session_id", "summary")}
                for s in snapshot["subagents"]
            ],
        )
        await self.host.activity.publish()

    def _unpublish(self, turn_id: str) -> None:
        self.host.activity.remove(_runtime_key(turn_id))
        asyncio.get_running_loop().create_task(self.host.activity.publish())


def _outcome(
    run: Run, session_id: str, chat: Any, events: list[dict[str, Any]], stop_reason: str
) -> dict[str, Any]:
    """What the subagent said, as its status, summary and report."""
    final = subagent_reports.final_message(events)
    report, summary = subagent_reports.parse(final)
    said = {"final_message": final, "report": report}
    if run.cancelling:
        return {**said, "status": "cancelled", "summary": summary or "cancelled"}
    if stop_reason in ("error", "exited"):
        errors = [e.get("message", "") for e in events if e.get("kind") == "error"]
        why = _exited_summary(session_id, chat.exit_code) if stop_reason == "exited" else ""
        return {
            **said,
            "status": "failed",
            "summary": subagent_reports.one_line(
                "; ".join(x for x in (*errors, why) if x) or "the agent's turn failed"
            ),
        }
    if stop_reason == "cancelled":
        return {**said, "status": "cancelled", "summary": summary or "cancelled by its agent"}
    return {**said, "status": "done", "summary": summary}


async def _prompt_or_exit(chat: Any, text: str) -> str:
    """The turn's stop reason, or `exited` when the agent dies first (some agents never answer
    a prompt whose process is gone)."""
    turn = asyncio.ensure_future(chat.prompt(text))
    died = asyncio.ensure_future(chat.exited.wait())
    try:
        await asyncio.wait({turn, died}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        died.cancel()
    if turn.done():
        reason = turn.result()
        if reason == "error":  # a broken connection: the process is usually on its way out
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(chat.exited.wait(), EXIT_GRACE_S)
        return "exited" if reason == "error" and chat.exited.is_set() else reason
    turn.cancel()
    with contextlib.suppress(BaseException):
        await turn
    return "exited"


def _exited_summary(session_id: str, code: int | None) -> str:
    tail = agent_logs.tail(session_id, 300)
    said = f"the agent exited with code {code}" if code is not None else "the agent exited"
    return f"{said}: {tail}" if tail else said


async def _measured(turn: SubagentTurn, member: Subagent) -> dict[str, Any]:
    if not member.branch:
        return {}
    try:
        changes = await sync_to_async(worktrees.measure, thread_sensitive=False)(
            subagents.worktree_of(member), turn.base_commit, member.branch
        )
    except worktrees.GitError as exc:
        return {"changes": {"branch": member.branch, "error": str(exc)}}
    return {"changes": changes}


async def _report(member: Subagent) -> dict[str, Any]:
    await sync_to_async(member.refresh_from_db)()
    return subagents.subagent_dict(member)


Progress = Callable[[dict[str, Any]], Awaitable[None]]


def _runtime_key(turn_id: str) -> str:
    return f"turn:{turn_id}"
