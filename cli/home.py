"""Where the daemon is: $SVC_HOME, auth.json's fields and what makes each valid. The rules
`core.config` applies when it loads (and repairs) the file live here, so the fast client
reads the file exactly as the Django side does."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

DEFAULT_PORT = 8000
BROWSER_HOST = re.compile(r"^svc-[a-z2-7]{12}\.localhost$")
PRIVATE = 0o077  # permission bits svc takes away from its folders
AUTH_MODE = 0o600


def home_setting() -> str:
    """$SVC_HOME as given (not yet expanded), else ~/.svc."""
    return os.environ.get("SVC_HOME") or str(Path.home() / ".svc")


def is_token(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) == 64


def is_port(value: Any, lowest: int = 1) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and lowest <= value < 65536


def is_browser_host(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and bool(BROWSER_HOST.match(value))


def auth_usable_as_is(data: dict[str, Any]) -> bool:
    """Would config.load_auth() keep these fields as they are (and so write nothing)?"""
    tokens = is_token(data.get("owner_token")) and is_token(data.get("mcp_token"))
    return tokens and is_port(data.get("port")) and is_browser_host(data.get("browser_host"))


@dataclass(frozen=True)
class Daemon:
    """What a client needs of auth.json: where the daemon listens and the owner's token."""

    port: int
    owner_token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def daemon_as_is() -> Daemon | None:
    """The daemon's address and token, read without changing anything — or None when the Django
    side would first create or repair something ($SVC_HOME or its logs folder missing or open to
    others, auth.json missing, not JSON, a field invalid, its mode not 0600). Those cases are rare
    (the first command of a new home, a hand-edited file) and the Django path owns the writes, so
    the fast client hands them to it rather than repeat them."""
    home = Path(home_setting()).expanduser()
    try:
        for folder in (home, home / "logs"):
            st = folder.stat()
            if st.st_mode & PRIVATE and st.st_uid == os.getuid():
                return None
        path = home / "auth.json"
        if (path.stat().st_mode & 0o777) != AUTH_MODE:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not auth_usable_as_is(data):
        return None
    return Daemon(data["port"], data["owner_token"])
