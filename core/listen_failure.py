"""A port already in use ends start-up (docs/service.md).

daphne logs "Listen failure: …" and stops the reactor before it runs: runserver then returns as
if all went well (exit 0), which looked like success. svc ends start-up with a non-zero exit and
one line naming the port (and its owner), instead of daphne's log line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

LISTEN_FAILED_EXIT = 1


def exit_on_listen_failure(explain: Callable[[int, str, OSError | None], str]) -> bool:
    """Make a failed bind end the process: `explain(port, interface, socket error)` is the line
    printed (port 0 when the failure names none). False when svc is not served by daphne
    (in-process tests)."""
    if "twisted.internet.reactor" not in sys.modules or "daphne.server" not in sys.modules:
        return False
    from daphne.server import Server

    if getattr(Server, "_svc_exits_on_listen_failure", False):
        return True
    run = Server.run

    def listen_error(self: Server, failure: object) -> None:
        self._svc_listen_failure = getattr(failure, "value", failure)
        self.stop()

    def run_or_exit(self: Server) -> None:
        run(self)
        problem = getattr(self, "_svc_listen_failure", None)
        if problem is None:
            return
        port = getattr(problem, "port", 0)
        interface = getattr(problem, "interface", "") or ""
        error = getattr(problem, "socketError", None)
        try:
            line = explain(
                int(port or 0), str(interface), error if isinstance(error, OSError) else None
            )
        except Exception as exc:  # the line must come out whatever the look at the owner did
            line = f"svc: cannot start: could not listen ({problem}; {exc})"
        sys.stderr.write(line.rstrip("\n") + "\n")
        sys.stderr.flush()
        raise SystemExit(LISTEN_FAILED_EXIT)

    Server.listen_error = listen_error  # type: ignore[method-assign]
    Server.run = run_or_exit  # type: ignore[method-assign]
    Server._svc_exits_on_listen_failure = True  # type: ignore[attr-defined]
    return True
