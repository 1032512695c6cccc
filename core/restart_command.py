"""The command that starts this svc again as it runs now: `bin/svc run` of this clone, on the same
port (and address, when not loopback's), with the same `$SVC_HOME` when it is not the default.

The dashboard's "svc is not answering" banner shows it (docs/dashboard.md "When svc is down"); the
page gets it with the document, as it cannot ask a daemon that is gone. `make run` would start on
its own PORT (8000) and the default home: followed literally on a daemon started otherwise, the
page would never reconnect. `bin/svc run` migrates first, as `make run` does, and a service unit
runs the same command (docs/service.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from cli.home import home_setting
from core import config, secret_env, server_compat

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"  # `bin/svc run`'s own default --host


def restart_command() -> str:
    """One line for a shell; paths quoted where they need it."""
    port = config.svc_port()
    words = ["run"]
    host = server_compat.listening_host(port)
    if host and host != LOOPBACK:
        words += ["--host", host]
    return _svc(*words, "--port", str(port))


def login_command() -> str:
    """`bin/svc url` for this home: the login URL again, for a browser svc no longer knows."""
    return _svc("url")


def _svc(*words: str) -> str:
    command = shlex.join([str(ROOT / "bin" / "svc"), *words])
    home = Path(home_setting()).expanduser()
    if home.resolve() != (Path.home() / ".svc").resolve():
        command = f"SVC_HOME={shlex.quote(str(home))} {command}"
    return command


def held_variables() -> list[str]:
    """The secret variables svc was started with (a fleet's database, Redis, secret), by name
    only: a start without them would be another svc (SQLite, alone), so the banner names them."""
    return [name for name in secret_env.names() if secret_env.get(name)]


def page_context() -> dict[str, str]:
    """What templates/dashboard.html puts in its <meta> tags for the banner (static/svc/api.js)."""
    return {
        "restart_command": restart_command(),
        "restart_env": " ".join(held_variables()),
        "login_command": login_command(),
    }
