"""`bin/svc help`: svc's own commands, each with its one-line description.

The list is read from the sources of svc's management commands (`<app>/management/commands/*.py`
in this clone), not from Django: Django's own commands (flush, dbshell, createsuperuser …) stay
behind `manage.py`, and a command added to an app is listed without anyone keeping a second
list. `ast` reads each command's `help` without importing it, so the help needs no Django.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Grouped as a newcomer meets them: the daemon, then what it hosts, then the rest by name.
ORDER = (
    "run",
    "url",
    "service",
    "status",
    "sessions",
    "attach",
    "pickup",
    "resume",
    "agents",
    "profiles",
    "usage",
    "previews",
    "channels",
    "remote",
    "tunnels",
    "pair",
    "machines",
    "turns",
    "rotate_tokens",
)
WIDTH = 96


def command_help(path: Path) -> str | None:
    """The `help` of the `Command` class in a management command's source; None when it has none
    (a helper module, or a file that does not parse)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Command":
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "help" for t in item.targets)
                    and isinstance(item.value, ast.Constant)
                    and isinstance(item.value.value, str)
                ):
                    return " ".join(item.value.value.split())
            return ""
    return None


def own_commands(root: Path = ROOT) -> dict[str, str]:
    """{command: description} for every management command in svc's own packages."""
    found: dict[str, str] = {}
    for path in sorted(root.glob("*/management/commands/*.py")):
        if path.name.startswith("_"):
            continue
        described = command_help(path)
        if described is not None:
            found[path.stem] = described
    rank = {name: i for i, name in enumerate(ORDER)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))


def help_text(root: Path = ROOT) -> str:
    commands = own_commands(root)
    width = max(len(name) for name in commands) + 2
    lines = [
        "usage: bin/svc COMMAND [options]",
        "",
        "svc's commands (`bin/svc COMMAND --help` for a command's options):",
    ]
    for name, described in commands.items():
        wrapped = textwrap.wrap(described, WIDTH - width - 2) or [""]
        lines.append(f"  {name.ljust(width)}{wrapped[0]}")
        lines += [f"  {'':{width}}{more}" for more in wrapped[1:]]
    lines += [
        "",
        "Start the daemon with `bin/svc run` (or `make run`); `bin/svc url` prints the login URL.",
        "Django's own commands (migrate, shell, …) are `.venv/bin/python manage.py help`.",
    ]
    return "\n".join(lines) + "\n"
