#!/usr/bin/env python
"""svc's command line: runserver (daphne), migrate, rotate_tokens, status, sessions, attach…"""

import os
import sys

from core import secret_env  # standard library only: nothing of note loads before its re-exec


def serves(argv: list[str]) -> bool:
    """The daemon itself: `run`, or `runserver` without Django's reloader (whose child would be
    started with this process's environment, the variables svc holds gone from it)."""
    return argv[1:2] == ["run"] or (argv[1:2] == ["runserver"] and "--noreload" in argv)


def main() -> None:
    if serves(sys.argv):
        # First: the database's and Redis's passwords and the fleet secret leave the environment
        # the agents svc hosts could read in /proc/<pid>/environ (svc may exec itself again).
        secret_env.hold()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")
    # Django and svc's config only now: secret_env.hold() may execute this process again, and
    # whatever was imported before it would be imported twice.
    from django.core.management import execute_from_command_line

    from core.config import SettingsError

    try:
        execute_from_command_line(sys.argv)
        sys.stdout.flush()
    except SettingsError as exc:
        sys.stderr.write(f"svc: cannot start: {exc}\n")
        sys.exit(2)
    except BrokenPipeError:
        # `manage.py status | head`: the reader has gone, which is no error of ours. What is
        # still buffered goes nowhere, so Python's exit does not print a second traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # what a shell reports for a writer ended by SIGPIPE


if __name__ == "__main__":
    main()
