"""Structural, atomic edits of other programs' config files: one named entry in a JSON object or
a TOML table, and svc's own SKILL.md files. Everything else in a file keeps its meaning, order and
(for TOML) comments; a file that cannot be parsed is never written."""

from __future__ import annotations

import json
import os
import re
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import InlineTable, Table

from core import config

# Outcomes of one edit.
WRITTEN, UP_TO_DATE, REMOVED, ABSENT = "written", "up to date", "removed", "absent"

# The line that marks a SKILL.md as svc's own: svc rewrites or removes only files carrying it.
SKILL_MARKER = "<!-- svc-managed:"


class CannotEdit(Exception):
    """The file is unparseable or has an unexpected shape; it was left as it was."""


def _target(path: Path) -> Path:
    # A dotfile manager's symlink stays a symlink: write the file it points at.
    return path.resolve() if path.is_symlink() else path


OWNER_ONLY = 0o600
OTHERS = 0o077  # the group's and other users' permission bits


def _write(path: Path, text: str, *, private: bool) -> None:
    """`private`: the text holds svc's token, so the file is the owner's alone (0600) whatever
    mode it had — a usual 0644 config would show the token to every local user. A file that no
    longer holds it keeps its mode."""
    real = _target(path)
    keep = not private and real.exists()
    config.atomic_write(real, text, mode=real.stat().st_mode & 0o777 if keep else OWNER_ONLY)


def _places(path: Path, folder: Path | None) -> list[Path]:
    return [where for where in (_target(path), folder) if where is not None and where.exists()]


def modes(path: Path, folder: Path | None) -> dict[Path, int]:
    """The permission bits of the file `path` points at and of `folder` (those that exist)."""
    return {where: where.stat().st_mode & 0o777 for where in _places(path, folder)}


def make_private(path: Path, folder: Path | None, before: dict[Path, int]) -> list[str]:
    """Take the group's and other users' bits from `path` (the file it points at) and from the
    agent's own `folder`; what changed since `before`, as "<path> 0644 → 0600". The folder
    matters too: Qwen Code saves its settings.json as a new file with the default mode (0644),
    so only a private folder keeps the token from other users between two of svc's syncs."""
    changed = []
    for where in _places(path, folder):
        st = where.stat()
        now = st.st_mode & 0o777
        if now & OTHERS and st.st_uid == os.getuid():
            now &= ~OTHERS
            where.chmod(now)
        was = before.get(where, st.st_mode & 0o777)
        if was != now:
            changed.append(f"{where} {was:04o} → {now:04o}")
    return changed


def _read(path: Path) -> str | None:
    try:
        return _target(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CannotEdit(f"cannot read {path}: {exc}") from exc


# --- JSON --------------------------------------------------------------------------------------


def _json_indent(text: str) -> int | str | None:
    """The indentation the file already uses (its first indented key), else none (one line)."""
    match = re.search(r'\n([ \t]+)"', text)
    if match:
        return match.group(1)
    return None if text.strip() else 2


LOCK_WAIT_S = 2.0
LOCK_STALE_S = 10.0  # proper-lockfile's default: a lock older than this was left by a crash


@contextmanager
def lockfile(path: Path) -> Iterator[None]:
    """Claude Code guards ~/.claude.json with proper-lockfile (a `<file>.lock` directory) and
    re-reads the file under it before each write: taking the same lock keeps the two writers
    from losing each other's change."""
    lock = path.with_name(path.name + ".lock")  # beside the path Claude Code uses, not its target
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            lock.mkdir()
            break
        except FileExistsError:
            with suppress(FileNotFoundError):
                if time.time() - lock.stat().st_mtime > LOCK_STALE_S:
                    lock.rmdir()
                    continue
            if time.monotonic() > deadline:
                raise CannotEdit(f"{lock} is held by another program; svc will retry") from None
            time.sleep(0.05)
        except FileNotFoundError:  # the folder does not exist yet: nobody else can hold it
            yield
            return
    try:
        yield
    finally:
        with suppress(FileNotFoundError):
            lock.rmdir()


def json_set(
    path: Path, keys: tuple[str, ...], name: str, entry: Any | None, *, lock: bool = False
) -> str:
    """Set `name` to `entry` inside the object at `keys` (creating it), or remove it when
    `entry` is None. Returns WRITTEN, UP_TO_DATE, REMOVED or ABSENT."""
    if lock:
        with lockfile(path):
            return json_set(path, keys, name, entry)
    text = _read(path)
    if text is None and entry is None:
        return ABSENT
    try:
        data = json.loads(text) if text and text.strip() else {}
    except ValueError as exc:
        raise CannotEdit(f"{path} is not valid JSON ({exc}); svc left it untouched") from exc
    if not isinstance(data, dict):
        raise CannotEdit(f"{path} does not hold a JSON object; svc left it untouched")
    container = data
    for depth, key in enumerate(keys):
        child = container.get(key)
        if child is None and entry is not None:
            child = container[key] = {}
        if child is None:
            return ABSENT
        if not isinstance(child, dict):
            where = ".".join(keys[: depth + 1])
            raise CannotEdit(f"{path}: {where} is not a JSON object; svc left the file untouched")
        container = child
    outcome = _apply(container, name, entry)
    if outcome in (WRITTEN, REMOVED):
        indent = _json_indent(text or "")
        body = json.dumps(data, indent=indent, ensure_ascii=False)
        ending = "\n" if text is None or text.endswith("\n") else ""
        _write(path, body + ending, private=entry is not None)
    return outcome


def _apply(container: dict[str, Any], name: str, entry: Any | None) -> str:
    if entry is None:
        if name not in container:
            return ABSENT
        del container[name]
        return REMOVED
    if container.get(name) == entry:
        return UP_TO_DATE
    container[name] = entry  # an existing key keeps its place
    return WRITTEN


# --- TOML --------------------------------------------------------------------------------------


def _toml_table(entry: dict[str, Any], inline: bool) -> Table | InlineTable:
    table = tomlkit.inline_table() if inline else tomlkit.table()
    for key, value in entry.items():
        if isinstance(value, dict):
            sub = tomlkit.inline_table()
            sub.update(value)
            table.append(key, sub)
        else:
            table.append(key, value)
    if not inline:
        table.add(tomlkit.nl())  # a blank line before whatever table follows, as people write
    return table


def _toml_container(doc: Any, key: str, create: bool) -> Any:
    container = doc.get(key)
    if container is None and create:
        container = tomlkit.table(is_super_table=True)
        doc.append(key, container)
    if container is not None and not isinstance(container, Table | InlineTable):
        raise CannotEdit(f"{key} is not a TOML table")
    return container


def toml_set(path: Path, key: str, name: str, entry: dict[str, Any] | None) -> str:
    """Like json_set for `[key.name]` in a TOML file, keeping comments, order and layout."""
    text = _read(path)
    if text is None and entry is None:
        return ABSENT
    try:
        doc = tomlkit.parse(text or "")
        container = _toml_container(doc, key, create=entry is not None)
    except (tomlkit.exceptions.TOMLKitError, CannotEdit) as exc:
        raise CannotEdit(f"{path}: not valid TOML ({exc}); svc left it untouched") from exc
    if container is None or (entry is None and name not in container):
        return ABSENT
    if entry is None:
        del container[name]
        outcome = REMOVED
    else:
        current = container.get(name)
        if current is not None and _unwrap(current) == entry:
            return UP_TO_DATE
        container[name] = _toml_table(entry, inline=isinstance(container, InlineTable))
        outcome = WRITTEN
    # At the end of the file, the blank line around svc's table would be left over.
    body = tomlkit.dumps(doc).rstrip("\n")
    body = body + "\n" if body else ""
    try:
        tomllib.loads(body)  # never write a file Codex could not read
    except tomllib.TOMLDecodeError as exc:
        raise CannotEdit(f"{path}: svc's edit would not be valid TOML ({exc}); left it") from exc
    _write(path, body, private=entry is not None)
    return outcome


def _unwrap(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item


# --- skills ------------------------------------------------------------------------------------


def skill_set(folder: Path, name: str, text: str | None) -> tuple[str, str]:
    """Install (or with None remove) svc's `folder/name/SKILL.md`. A file svc did not write
    (no marker) is never touched. Returns (outcome, reason)."""
    path = folder / name / "SKILL.md"
    current = _read(path)
    if current is not None and SKILL_MARKER not in current:
        return "skipped", f"kept {path}: it is not svc's (no svc-managed line)"
    if text is None:
        if current is None:
            return ABSENT, ""
        path.unlink()
        if not any(path.parent.iterdir()):
            path.parent.rmdir()
        return REMOVED, ""
    if current == text:
        return UP_TO_DATE, ""
    path.parent.mkdir(parents=True, exist_ok=True)
    config.atomic_write(path, text, mode=0o644)
    return WRITTEN, ""


def home() -> Path:
    """$HOME decides where an agent's "global" config lives (contract §9)."""
    return Path(os.environ.get("HOME") or Path.home())
