"""Why an agent ended when nobody stopped it (issue 34: "an agent that fails says why"): its exit
code and the last lines of its stderr, kept as the session's `detail` for the API, the chat pane,
the table and the CLI; its whole log is one click away (GET /api/sessions/{id}/log)."""

from __future__ import annotations

from django.db import transaction

from sessions_app import agent_logs
from sessions_app.models import Session

LAST_LINES = 8
LAST_CHARS = 1500


def last_lines(session_id: object, lines: int = LAST_LINES, limit: int = LAST_CHARS) -> str:
    """The end of its stderr as lines (a traceback's last line is the one that says why)."""
    kept = [line.rstrip() for line in agent_logs.read(session_id, 16 * 1024).splitlines()]
    text = "\n".join(line for line in kept if line.strip())
    tail = "\n".join(text.splitlines()[-lines:])
    return tail[-limit:]


def ending(session_id: object, exit_code: int | None) -> str:
    """What `detail` says of an agent that ended on its own and not cleanly; "" for a clean end
    (code 0), where its stderr is chatter rather than a reason."""
    if exit_code == 0:
        return ""
    how = f"the agent exited with code {exit_code}" if exit_code is not None else "the agent died"
    said = last_lines(session_id)
    return f"{how}; its stderr ends:\n{said}" if said else f"{how} (nothing on its stderr)"


@transaction.atomic
def start_failed(session_id: str) -> str:
    """A chat whose agent did not get through its start: `failed`, whatever its exit handler
    wrote meanwhile (it may have ended `exited`), and with its reason; answers that reason."""
    session = Session.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        return ""
    if session.is_live:
        session.mark_exited(None, failed=True)
    elif session.ended_by:  # stopped by someone meanwhile: that is how it ended
        return session.detail
    session.status = Session.Status.FAILED
    if not session.detail:
        session.detail = ending(session_id, session.exit_code)
    session.save()
    return session.detail
