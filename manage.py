#!/usr/bin/env python
"""svc's command line: runserver (daphne), migrate, rotate_tokens, status, sessions, attach…"""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")
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
