"""This machine's identity in a fleet (contract §18): `$SVC_HOME/machine.json`, `{"id": "<32
hex>"}`, mode 0600, made once and kept. The id names the member's own database schema, so a
lost file is a new, empty member: a file svc cannot read stops start-up instead of being
replaced."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import tempfile
from pathlib import Path

from core.settings_schema import SettingsError

FILE = "machine.json"
MODE = 0o600
ID = re.compile(r"^[0-9a-f]{32}$")


def machine_id(home: Path) -> str:
    """The id in `home`'s machine.json, made (atomically, once, whoever races) when absent."""
    path = home / FILE
    if not path.exists():
        _create(path)
    return _read(path)


def _read(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(path, "id", f"cannot be read ({exc}): {_KEEP}") from exc
    ident = data.get("id") if isinstance(data, dict) else None
    if not isinstance(ident, str) or not ID.match(ident):
        raise SettingsError(path, "id", f"must be 32 lowercase hex digits: {_KEEP}")
    if path.stat().st_mode & 0o777 != MODE:
        path.chmod(MODE)
    return ident


_KEEP = (
    "restore the file (its id names this machine's tables in a fleet's database), or remove it "
    "to make this a new machine"
)


def _create(path: Path) -> None:
    """Written in full to a temporary file, then linked into place: link fails when another
    process made the file first, and then its id is the one."""
    text = json.dumps({"id": secrets.token_hex(16)}) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, MODE)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
