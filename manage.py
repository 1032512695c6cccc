#!/usr/bin/env python
"""svc's command line: runserver (daphne), migrate, rotate_tokens, status, sessions, attach…"""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "svcproject.settings")
    from django.core.management import execute_from_command_line

    from svcproject.config import SettingsError

    try:
        execute_from_command_line(sys.argv)
    except SettingsError as exc:
        sys.stderr.write(f"svc: cannot start: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
