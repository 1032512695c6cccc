"""One client's view of a hosted chat (a /ws/chat socket, a chat channel's room): the stored
history to replay, then the live events, with the seq numbers keeping each event once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

Deliver = Callable[[dict[str, Any]], None]
History = Callable[[], Awaitable[list[dict[str, Any]]]]


class Chat(Protocol):
    """What a subscription needs of its chat (host/acp.py's `AcpSession`), declared here so the
    chat imports its subscriptions and not the other way round."""

    def pending_requests(self) -> list[dict[str, Any]]: ...

    def unsubscribe(self, subscription: ChatSubscription) -> None: ...


class ChatSubscription:
    """One client's view of a chat: `replay` (the stored history, each event marked
    `replay: True`) to send first, then `start()` hands over to live delivery.

    The client subscribes *before* the history is read, so an event stored meanwhile is in the
    history, in the buffered live events, or in both — and the seq numbers drop the duplicate
    (the rule lives here, next to the emit lock that gives events their order)."""

    def __init__(self, chat: Chat, deliver: Deliver, *, showing: bool = True) -> None:
        self._chat, self._deliver = chat, deliver
        # Whether a person sees this chat through this client right now (contract §15: a turn
        # that ends while no client shows it is notified). A client that never says counts as
        # showing — an older page, the CLI, an API caller awaiting its own turn — so none of
        # them gets notifications it did not ask for; a dashboard page says, tab by tab.
        self.showing = showing
        self._buffered: list[dict[str, Any]] | None = []
        self.replay: list[dict[str, Any]] = []
        self._last = 0

    def receive(self, event: dict[str, Any]) -> None:
        if self._buffered is not None:
            self._buffered.append(event)
        else:
            self._deliver(event)

    def set_history(self, history: list[dict[str, Any]], *, after: int = 0) -> None:
        """`history`: the stored events after seq `after` (0, or the last one a client reopening
        the chat already has); live events from then on are delivered once."""
        self.replay = [{**event, "replay": True} for event in history]
        self._last = max(after, history[-1]["seq"] if history else 0)

    def start(self) -> None:
        """Live events stored after the history, then the permission requests still waiting for
        an answer (again, as live events, so a client that reconnects can answer them)."""
        buffered, self._buffered = self._buffered or [], None
        for event in buffered:
            if event["seq"] is None or event["seq"] > self._last:
                self._deliver(event)
        for request in self._chat.pending_requests():
            if request["seq"] <= self._last:
                self._deliver(request)

    def close(self) -> None:
        self._chat.unsubscribe(self)
