"""A chat's permission requests (the `AcpSession` part that asks them): asked of the subscribed
clients, answered by policy when the mode says so or nobody listens, refused when nobody answers
within `permission_timeout_s`, and asked again after svc restarted (contract §17)."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from sessions_app import signals
from sessions_app.host import permission_answers as answers
from sessions_app.host.acp_link import current_src

if TYPE_CHECKING:
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

# A permission answer: the option chosen (None: none) and who decided, {"surface", "who"}.
Answer = tuple[str | None, dict[str, str]]


class AskingPermission:
    """Mixed into AcpSession: its `emit`, `event`, subscribers and the requests it keeps."""

    session_id: str
    agent: str
    permission_mode: str
    permission_timeout_s: float
    _decided: dict[int, dict[str, Any]]
    _asked: dict[int, dict[str, Any]]
    _pending: dict[str, tuple[asyncio.Future[Answer], set[str]]]
    _requests: dict[str, dict[str, Any]]
    _subscribers: Any
    asked_while_away: Any  # acp_taken_back.TakingBack

    # --- permissions -----------------------------------------------------------------------
    # Each answer says who decided (`decided_by`, sessions_app/approvals.py): the stored
    # `permission_resolved` event carries it, and the approval record is made from that event.

    async def ask_permission(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        ids = {o.option_id for o in options}
        src = current_src.get()  # the same request read again after a restart has the same
        if src is not None and (decided := self._decided.pop(src, None)) is not None:
            # Decided before svc stopped, the answer maybe never sent: the same answer again.
            chosen = decided.get("chosen")
            return answers.selected(chosen) if chosen else answers.refuse(options)
        asked_before = self._asked.pop(src, None) if src is not None else None
        # Nobody to ask refuses at once — unless it was asked while svc was away: at the start
        # nobody can have opened the chat yet, and the person is to see it pending (§17).
        nobody = not self._subscribers and not self.asked_while_away(src)
        if asked_before is None and (self.permission_mode in ("allow", "deny") or nobody):
            return await self._answer_by_policy(tool_call, options)
        request_id = f"r{src}" if src is not None else uuid.uuid4().hex
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, ids)
        if asked_before is not None:  # stored and notified by the svc before: still pending
            seq = asked_before.pop("seq")
            self._requests[request_id] = self.event("permission_request", asked_before, seq)
        else:
            self._requests[request_id] = await self.emit(
                "permission_request",
                {
                    "request_id": request_id,
                    "tool_call": tool_call.model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    ),
                    "options": answers.options_of(options),
                },
                src=src,
            )
            asked = self._requests[request_id].get("tool_call", {})
            signals.permission_requested.send_robust(  # contract §15
                sender=type(self), session_id=self.session_id, agent=self.agent, tool_call=asked
            )
        try:
            chosen, by = await asyncio.wait_for(future, self.permission_timeout_s)
        except TimeoutError:
            waited = f"nobody answered within {self.permission_timeout_s:g} s"
            chosen, by = None, {"surface": "cancelled", "who": waited}
        finally:
            self._pending.pop(request_id, None)
            self._requests.pop(request_id, None)
        answer = answers.refuse(options) if chosen is None else answers.selected(chosen)
        resolved = {
            "request_id": request_id,
            "option_id": chosen,  # the person's choice; None: nobody chose
            "answered": chosen is not None,
            "chosen": answers.option_of(answer),  # what the agent was answered with
            "decided_by": by,
            "decided_at": answers.now(),
        }
        await self.emit("permission_resolved", resolved, src=src)
        return answer

    async def _answer_by_policy(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        """Answered without asking anyone (the mode says so, or nobody listens) — and said, so
        whoever reads the session later knows why the agent could or could not act."""
        allow = self.permission_mode == "allow"
        answer = (answers.choose(options, "allow") if allow else None) or answers.refuse(options)
        chosen = answers.option_of(answer)
        policy = self.permission_mode if self.permission_mode != "ask" else "nobody to ask"
        await self.emit(
            "permission_resolved",
            {
                "request_id": None,
                "option_id": chosen,
                "answered": False,
                "policy": policy,
                "allowed": allow and chosen is not None,
                "tool_call": tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
                "options": answers.options_of(options),
                "chosen": chosen,
                "decided_by": {"surface": "policy", "who": policy},
                "decided_at": answers.now(),
            },
            src=current_src.get(),
        )
        return answer

    def pending_requests(self) -> list[dict[str, Any]]:
        """Permission requests still waiting, for a client that (re)opens the session."""
        return [event for event in self._requests.values() if event]

    def answer_permission(
        self, request_id: str, option_id: str, decided_by: dict[str, str] | None = None
    ) -> str | None:
        """None when accepted, else why not. `decided_by`: `{"surface", "who"}` of whoever
        answered (sessions_app/approvals.py); in-process callers that do not say count as the
        API."""
        pending = self._pending.get(request_id)
        if pending is None or pending[0].done():
            return f"no pending permission request {request_id!r}"
        if option_id not in pending[1]:
            return f"option_id must be one of {sorted(pending[1])}"
        pending[0].set_result((option_id, decided_by or {"surface": "api", "who": ""}))
        return None
