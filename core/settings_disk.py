"""settings.json as bytes on disk, below core.config: read (text that is not JSON is reported with
its line and column), checked just before svc writes over it, and kept as settings.json.bak.

The rule (contract §1, "settings.json is never lost"): svc never writes over a file it cannot
read. A hand edit in progress — a trailing comma in a new block — would otherwise be replaced by
the last good copy svc holds and be gone. Such a write is refused (409 `settings_invalid`) until
the file is fixed by hand; svc does not try to merge into text it cannot parse.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from core.errors import DomainError
from core.settings_backup import without_removed_secrets
from core.settings_schema import Settings, SettingsError, parse_settings

BACKUP_SUFFIX = ".bak"


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def parse_text(path: Path, data: bytes) -> Any:
    """The JSON in `data` (an empty file is `{}`), or a SettingsError saying where it breaks."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(path, "(file)", f"not UTF-8 text (byte {exc.start + 1})") from exc
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise SettingsError(
            path, "(file)", f"not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno
        ) from exc


def read_settings_file(path: Path) -> Settings:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    return parse_settings(path, parse_text(path, data))


def error_report(exc: SettingsError) -> dict[str, Any]:
    """A settings problem as the API shows it (`settings_error` of GET /api/status)."""
    return {
        "message": str(exc),
        "path": str(exc.path),
        "key": exc.key,
        "line": exc.line,
        "column": exc.column,
    }


def refusal(exc: SettingsError) -> DomainError:
    return DomainError(
        f"{exc} — svc will not write over settings.json while it cannot read it (your edit "
        "would be lost): fix the file by hand first, then save again",
        status=409,
        code="settings_invalid",
    )


def replace_settings_file(path: Path, text: str) -> None:
    """Write `text` as settings.json, after checking the file there now (read again, not svc's
    cached copy) and keeping it, byte for byte, as settings.json.bak. The caller holds the
    settings lock, so nothing of svc's writes between the check and the replace."""
    try:
        before: bytes | None = path.read_bytes()
    except FileNotFoundError:
        before = None
    if before is not None:
        try:
            parse_settings(path, parse_text(path, before))
        except SettingsError as exc:
            raise refusal(exc) from exc
        # Kept for a hand edit svc writes over, but without a secret this write takes out.
        kept = without_removed_secrets(before, json.loads(text))
        atomic_write(backup_path(path), kept, mode=0o600)
    atomic_write(path, text, mode=0o600)


def scrub_backup(path: Path, settings: Any) -> None:
    """settings.json, now `settings`, was read again (an edit by hand): the backup loses any
    secret it took out, as svc's own writes do."""
    backup = backup_path(path)
    try:
        before = backup.read_bytes()
        kept = without_removed_secrets(before, settings)
    except (OSError, ValueError):  # no backup, or one that is not JSON: nothing svc can scrub
        return
    if kept != before:
        atomic_write(backup, kept, mode=0o600)


def atomic_write(path: Path, content: str | bytes, mode: int = 0o600) -> None:
    """Temp file in the same folder, fsync, rename, fsync the folder: readers never see half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
