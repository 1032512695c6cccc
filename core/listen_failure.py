"""A port already in use, or a start that fails after the bind, ends start-up (docs/service.md).

daphne logs "Listen failure: …" and stops the reactor before it runs: runserver then returns as
if all went well (exit 0), which looked like success. svc ends start-up with a non-zero exit and
one line naming the port (and its owner), instead of daphne's log line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from core import twisted_reactor

LISTEN_FAILED_EXIT = 1


def exit_on_listen_failure(explain: Callable[[int, str, OSError | None], str]) -> bool:
    """Make a failed bind end the process: `explain(port, interface, socket error)` is the line
    printed (port 0 when the failure names none). False when svc is not served by daphne
    (in-process tests)."""
    if "twisted.internet.reactor" not in sys.modules or "daphne.server" not in sys.modules:
        return False
    # Only once daphne has loaded it (above): importing daphne.server installs its reactor.
    from daphne.server import Server

    if getattr(Server, "_svc_exits_on_listen_failure", False):
        return True
    run = Server.run

    def listen_error(self: Server, failure: object) -> None:
        self._svc_listen_failure = getattr(failure, "value", failure)
        self.stop()

    def run_or_exit(self: Server) -> None:
        run(self)
        if _start_failure:
            _exit_with(_start_failure[0])
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
        _exit_with(line)

    Server.listen_error = listen_error
    Server.run = run_or_exit
    Server._svc_exits_on_listen_failure = True
    return True


# Why the start after binding failed: set once, read as the server's run returns.
_start_failure: list[str] = []


def fail_start(line: str) -> None:
    """The daemon bound its port but could not start (a Redis it was told to use is not there):
    end the process with `line` and a non-zero exit, rather than keep a port open that answers
    nothing (docs/service.md)."""
    _start_failure.append(line)
    twisted_reactor.installed().stop()


def _exit_with(line: str) -> None:
    sys.stderr.write(line.rstrip("\n") + "\n")
    sys.stderr.flush()
    raise SystemExit(LISTEN_FAILED_EXIT)
