"""A failed prompt in the agent's own words (issue 23: "prompt failed: Internal error")."""

from __future__ import annotations

import pytest
from acp import RequestError

from sessions_app.host.agent_errors import failure_text


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (RequestError.internal_error({"details": "quota exceeded"}), "quota exceeded"),
        (RequestError.internal_error({"message": "model not found"}), "model not found"),
        (RequestError.internal_error({"error": {"message": "overloaded"}}), "overloaded"),
        (RequestError(-32603, "Internal error", "rate limited"), "rate limited"),
        (RequestError.internal_error(None), "Internal error"),
        (RequestError.invalid_params({"details": "no such mode"}), "Invalid params: no such mode"),
        (
            RequestError(-32000, "Authentication required", {"details": "Authentication required"}),
            "Authentication required",
        ),
        (ConnectionError(), "ConnectionError"),
    ],
)
def test_the_agents_own_words_replace_the_generic_message(error: Exception, said: str) -> None:
    assert failure_text(error) == said
