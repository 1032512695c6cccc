"""`bin/svc COMMAND …` without Django, for the commands in `views` with the options they know.

    .venv/bin/python -I -S cli/__main__.py status [--json]

Anything else — another command, another option, a home the Django side must first create or
repair — is handed to `manage.py` with the same arguments (exec, so its output and exit code are
the command's own). What is printed here matches `manage.py` byte for byte, the error line and
its colour on a terminal included (tests/e2e/test_fast_cli.py compares the two).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

# -I leaves the script's folder off sys.path, and -S site-packages: only the clone and the stdlib.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli import api, commands, views  # noqa: E402
from cli.home import Daemon, daemon_as_is  # noqa: E402

DJANGO_SETTINGS = "svcproject.settings"
# Django's ERROR style (red, bold) as its OutputWrapper applies it to an error on a terminal.
ERROR_STYLE = "\x1b[31;1m{}\x1b[0m"


def parse(argv: list[str]) -> tuple[str, dict[str, bool]] | None:
    """(command, options) when this client answers `argv` itself, else None."""
    if not argv or os.environ.get("DJANGO_SETTINGS_MODULE", DJANGO_SETTINGS) != DJANGO_SETTINGS:
        return None
    command, args = argv[0], argv[1:]
    if command == "status":
        known: tuple[str, ...] = ()
    elif command in views.LISTS:
        known = views.LISTS[command].flags
    else:
        return None
    options = {"json": False, **dict.fromkeys(known, False)}
    for arg in args:
        name = arg.removeprefix("--")
        # Exact spellings only: argparse's abbreviations, -h, --cancel, `tunnels start` … are
        # manage.py's to parse (and to reject the same way it always has).
        if not arg.startswith("--") or name not in options:
            return None
        options[name] = True
    return command, options


def output(daemon: Daemon, command: str, options: dict[str, bool]) -> list[str]:
    """The command's lines. Every request is made before anything is printed, as the management
    commands do, so a failure prints only its error."""
    if command == "status":
        report = views.status_report(
            daemon.url,
            api.call(daemon, "GET", "sessions"),
            api.call(daemon, "GET", "agents"),
            api.call(daemon, "GET", "integrations"),
            api.call(daemon, "GET", "status"),
        )
        if options["json"]:
            return [views.json_text(report)]
        return views.status_lines(report)
    view = views.LISTS[command]
    return [view.render(api.call(daemon, "GET", view.path), options)]


def error(message: str, argv: list[str]) -> None:
    # The message alone, as svc's management commands print it (core/client_command.py
    # SvcCommand): no "CommandError:" in front (issue 43).
    text = views.line(message)
    # Django colours it only when both stdout (supports_color) and stderr (OutputWrapper) are
    # terminals.
    if sys.stdout.isatty() and sys.stderr.isatty():
        if "DJANGO_COLORS" in os.environ:
            # A palette of the person's own: Django's to apply. The requests were reads, so
            # asking again through manage.py changes nothing.
            hand_to_django(argv)
        text = ERROR_STYLE.format(text)
    sys.stderr.write(text)


def hand_to_django(argv: list[str]) -> NoReturn:
    manage = str(ROOT / "manage.py")
    os.execv(sys.executable, [sys.executable, manage, *argv])  # noqa: S606 (no shell: argv as given)


HELP = ("help", "-h", "--help")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in HELP:
        if len(argv) > 1 and argv[0] == "help":
            hand_to_django([argv[1], "--help"])  # `bin/svc help status`: that command's options
        sys.stdout.write(commands.help_text())
        return 0
    parsed = parse(argv)
    daemon = daemon_as_is() if parsed else None
    if parsed is None or daemon is None:
        hand_to_django(argv)
    command, options = parsed
    try:
        lines = output(daemon, command, options)
    except api.ClientError as exc:
        error(str(exc), argv)
        return 1
    try:
        sys.stdout.write("".join(views.line(text) for text in lines))
        sys.stdout.flush()
    except BrokenPipeError:
        # `bin/svc status | head`: the reader has gone, which is no error of ours (manage.py's
        # own rule). What is still buffered goes nowhere, so the exit prints no second traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
