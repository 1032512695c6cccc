"""What happens to subagents that other apps may want to hear of: they connect in their own
code; subagents never name them."""

from django.dispatch import Signal

# A subagent turn finished: every subagent has its report (kwargs: turn_id). Sent by
# `SubagentRuns._finish` (subagents_app/subagent_runs.py) on the event loop.
subagent_turn_completed = Signal()
