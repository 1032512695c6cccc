"""A chat taken back from its holder at svc's start (contract §17): the `AcpSession` part that
carries on with what its agent did while svc was away, read again from the holder's journal.

- A turn the svc before this one started ends once, however it ended meanwhile: the answer to
  that svc's prompt (its end, or the JSON-RPC error of a failed prompt), or the agent's exit —
  recorded as the same events as when svc was there all along.
- A permission request the agent made while svc was away is asked, even if nobody has opened
  the chat again yet: the person learns of it now (contract §17, "a permission request shown as
  pending"), where a request made while svc runs with nobody to ask is refused at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from acp.exceptions import RequestError

if TYPE_CHECKING:
    from sessions_app.host.acp_link import AgentStream, Link
    from sessions_app.selectors import ChatPosition


class TakingBack:
    """Mixed into AcpSession: its `emit`, `_connect`, `link`, turn state and idle handling."""

    busy: bool
    idle: asyncio.Event
    agent_session_id: str
    link: Link
    pid: int
    _asked: dict[int, dict[str, Any]]
    _decided: dict[int, dict[str, Any]]

    # The turn the svc before this one started, still to end here; and the journal's end when
    # svc took the chat back (the agent wrote what is before it while svc was away).
    _inherited_turn = False
    _away_until = -1

    async def take_back(
        self,
        stream: AgentStream,
        *,
        agent_session_id: str,
        position: ChatPosition,
        away_until: int = -1,
    ) -> int:
        """An agent the holder kept while svc was away: no handshake (it had one); what it
        said since the last stored update is read again, a turn under way goes on, and its
        permission requests are asked again without being stored or notified twice.
        `away_until`: the end of the holder's journal when svc attached again."""
        self._asked, self._decided = position.asked, position.decided
        self._away_until = away_until
        self._inherited_turn = position.in_turn
        await self._connect(stream, stored_upto=position.stored_upto)
        self.agent_session_id = agent_session_id
        if position.in_turn:  # its end comes as the answer to the last svc's prompt
            self.busy = True
            self.idle.clear()
        await self._publish_runtime()
        if not self.busy:
            self._now_idle()
        return self.pid

    def asked_while_away(self, src: int | None) -> bool:
        """Whether the agent message at `src` was written while svc was away."""
        return src is not None and src < self._away_until

    async def _orphan_answer(self, src: int, message: dict[str, Any]) -> None:
        """An answer to a request of the svc before this one: the turn that was running when it
        stopped has ended. Recorded once (a turn end already stored is read again, not stored)."""
        result = message.get("result")
        if not self._inherited_turn or (isinstance(result, dict) and "stopReason" not in result):
            return  # not a turn's end (or one already recorded): nobody waits for it
        # The turn's last updates first, as the SDK does for a prompt's answer: their handlers
        # were started before this answer was read.
        await asyncio.sleep(0)
        await self._updates_stored()
        if self.link.seen(src):
            pass  # recorded by the svc before, which died before acknowledging it
        elif isinstance(result, dict):
            ended: dict[str, Any] = {"stop_reason": str(result["stopReason"])}
            if isinstance(result.get("usage"), dict):
                ended["usage"] = result["usage"]
            await self.emit("turn_end", ended, src=src)
            self._turn_ended(ended["stop_reason"])
        else:
            await self._turn_failed(_request_error(message.get("error")), src=src)
        await self._inherited_turn_over()

    async def _end_inherited_turn(self) -> None:
        """The agent exited during the inherited turn: no answer will come. It ends as a turn
        does whose agent exits while svc is there (the prompt fails: the connection closed)."""
        if self._inherited_turn:
            await self._turn_failed(ConnectionError("Connection closed"))
            await self._inherited_turn_over()

    async def _inherited_turn_over(self) -> None:
        self._inherited_turn = False
        self.busy = False
        self._now_idle()
        await self._publish_runtime()


def _request_error(error: Any) -> Exception:
    """A JSON-RPC error object as the ACP SDK raises it for a failed request."""
    if not isinstance(error, dict):
        return RuntimeError(str(error))
    return RequestError(error.get("code", -32603), error.get("message", "Error"), error.get("data"))
