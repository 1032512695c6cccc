"""Writes for sessions and workspaces (ARCHITECTURE: each app's `services`), by concept:
starting (start.py), resuming and taking back after svc was away (resume.py), stopping
(stop.py), the rows a session's life writes (records.py), workspaces (workspaces.py),
handover codes (handover.py), a session's name (naming.py) and the prompts that wait for
a chat (queued_prompts.py).
Database writes are one transaction each; starting and stopping processes happens around them,
never inside one. Callers use this package's names: `services.asession_create(...)`."""

from sessions_app.services.handover import (
    handover_issue,
    handover_offer,
    handover_redeem,
)
from sessions_app.services.naming import session_rename
from sessions_app.services.queued_prompts import AlreadyReceived, QueueFull
from sessions_app.services.records import (
    HOLDER_LOST,
    session_event_append,
    session_mark_exited,
)
from sessions_app.services.resume import (
    INTERRUPTED,
    asession_resume,
    asessions_resume_interrupted,
    asessions_take_back,
    session_resume,
)
from sessions_app.services.start import (
    TERMINAL_SIZE_MAX,
    asession_create,
    asession_start,
    session_create,
    session_row_create,
)
from sessions_app.services.stop import (
    asession_stop,
    asessions_stop_all,
    session_remove,
    session_stop,
    sessions_stop_all,
)
from sessions_app.services.workspaces import (
    workspace_delete,
    workspace_register,
    workspace_rename,
)

__all__ = [
    "HOLDER_LOST",
    "INTERRUPTED",
    "TERMINAL_SIZE_MAX",
    "AlreadyReceived",
    "QueueFull",
    "asession_create",
    "asession_resume",
    "asession_start",
    "asession_stop",
    "asessions_resume_interrupted",
    "asessions_stop_all",
    "asessions_take_back",
    "handover_issue",
    "handover_offer",
    "handover_redeem",
    "session_create",
    "session_event_append",
    "session_mark_exited",
    "session_remove",
    "session_rename",
    "session_resume",
    "session_row_create",
    "session_stop",
    "sessions_stop_all",
    "workspace_delete",
    "workspace_register",
    "workspace_rename",
]
