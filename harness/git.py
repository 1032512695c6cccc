"""Throw-away git repositories for the worktree, diff and merge tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

# An identity of its own: the machine's git may have none configured.
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.test"]


def git(cwd: Path | str, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def feature_repo(path: Path, on_main: dict[str, str] | None = None) -> Path:
    """A clean repository at `path` whose HEAD is branch `feature`, one commit (feature.txt)
    ahead of `main`, which holds `on_main` (a README by default)."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (on_main or {"README.md": "hello\n"}).items():
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-qm", "first")
    git(path, "checkout", "-qb", "feature")
    (path / "feature.txt").write_text("only on the feature branch\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "feature")
    return path.resolve()
