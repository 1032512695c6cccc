"""What happens to sessions that other apps may want to hear of: they connect in their own
`AppConfig.ready()`; sessions never name them."""

from django.dispatch import Signal

# An agent asks permission and waits (kwargs: session_id, agent, tool_call — the request's
# tool call as ACP gives it). Sent from the event loop; receivers must return at once.
permission_requested = Signal()
# A chat turn ended while no client showed the session (kwargs: session_id, agent, stop_reason).
turn_ended = Signal()
# A hosted session's process ended; its row is already marked (kwargs: session_id). Sent with
# `asend_robust`: receivers may be coroutines (a parent's subagents stop, a failure is notified).
session_exited = Signal()
