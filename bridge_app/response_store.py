"""What a Responses client needs svc to remember when its provider speaks another dialect:
the conversation behind each response id (for `previous_response_id`) and the response itself
(for `GET /responses/{id}`). In the runtime's memory, newest 500, gone on restart: state a client
may lose, as it would after the provider's own retention ends."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from bridge_app import ir

MAX_RESPONSES = 500


@dataclass(frozen=True, slots=True)
class Stored:
    messages: list[ir.Message]  # the full input history plus the answer, as the next turn sees it
    response: dict[str, Any]  # the Responses object the client received


class ResponseStore:
    """The runtime's remembered Responses, newest last."""

    def __init__(self) -> None:
        self._responses: OrderedDict[str, Stored] = OrderedDict()

    def remember(self, response_id: str, messages: list[ir.Message], response: dict) -> None:
        self._responses[response_id] = Stored(messages, response)
        self._responses.move_to_end(response_id)
        while len(self._responses) > MAX_RESPONSES:
            self._responses.popitem(last=False)

    def recall(self, response_id: str) -> Stored | None:
        return self._responses.get(response_id)

    def forget(self, response_id: str) -> bool:
        return self._responses.pop(response_id, None) is not None
